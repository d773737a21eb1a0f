package registry

import (
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/internal/failpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// Nesting. A container is bounded by two kinds of ancestor:
//
//   - its parent, by id (Request.Parent, the enforcerd.io/parent
//     annotation), and the parent's ancestors in turn;
//   - every registered cgroup above its own: the kernel enforces the meet
//     of every registered ancestor cgroup (bpf/walk.h), whoever registered
//     it.
//
// The rule: a container's session, and so its effective ceiling, kernel
// entry and surface, is never wider than the effective ceiling of any
// ancestor of either kind, at any time. Register takes the meet with the
// parent and with every registered ancestor cgroup (daemon registrations by
// their effective policy.Ceiling, other map entries, e.g. enforcerd run,
// by their kernel fields); Narrow, and Register of a container that turns
// out to be an ancestor of existing ones (registered after them), carry the
// new bound down to every descendant of either kind (settle), in one
// transaction (applyLocked). Unregistering an ancestor widens nothing: the
// descendants keep the ceiling they were clamped to.

// noBound is the top of the ceiling lattice: the meet with it changes
// nothing.
var noBound = policy.Ceiling{Network: true, Write: true, Shell: policy.ShellFull, Tools: true, DelegationDepth: math.MaxUint32}

// kernelBound is a kernel ceiling as a bound on a session: it bounds the
// kernel fields only.
func kernelBound(k policy.KernelCeiling) policy.Ceiling {
	b := noBound
	b.Network, b.Write, b.Shell = k.Network, k.Write, k.Shell
	return b
}

// below reports whether cgroup group path g is strictly inside anc.
func below(g, anc string) bool {
	return anc == "/" && g != "/" || strings.HasPrefix(g, anc+"/")
}

// outerBound is the meet of the ceilings of every registered cgroup
// strictly above group: a daemon registration by its effective ceiling,
// an entry in the map the daemon did not make (enforcerd run) by its
// kernel ceiling. Audit-only and pending ancestors count too: the answer
// is never wider than what an ancestor holds the subtree to once in
// force. An ancestor that cannot be opened is an error (fail closed).
func (r *Registry) outerBound(group string) (policy.Ceiling, error) {
	b := noBound
	err := r.eachOuter(group, func(_ string, c *state.Container, en *entry.Entry) {
		if c != nil {
			b = b.Clamp(c.Ceiling)
		} else {
			b = b.Clamp(kernelBound(en.Ceiling))
		}
	})
	return b, err
}

// eachOuter calls f for every registered cgroup g strictly above group,
// nearest first: with the daemon's container when the daemon registered
// it, else with the map entry another program wrote (enforcerd run). An
// ancestor that cannot be opened or read is an error (fail closed).
func (r *Registry) eachOuter(group string, f func(g string, c *state.Container, en *entry.Entry)) error {
	for g := path.Dir(group); ; g = path.Dir(g) {
		cg, err := r.o.Cgroups.Open(g)
		if err != nil {
			return fmt.Errorf("ancestor cgroup %s of %s: %w", g, group, err)
		}
		if id, ok := r.byCgroup[cg.ID]; ok {
			c := r.byID[id]
			f(g, &c, nil)
		} else if en, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
			f(g, nil, &en)
		} else if !errors.Is(err, enforcer.ErrNotRegistered) {
			return fmt.Errorf("ancestor cgroup %s of %s: %w", g, group, err)
		}
		if g == "/" {
			return nil
		}
	}
}

// descendants is every container of view below one of roots, by parent id
// or by cgroup, transitively, roots excluded, sorted.
func descendants(view map[string]state.Container, roots ...string) []string {
	in := map[string]bool{}
	for _, id := range roots {
		in[id] = true
	}
	for grew := true; grew; {
		grew = false
		for id, c := range view {
			if in[id] {
				continue
			}
			for a := range in {
				if c.Parent == a || below(c.Cgroup, view[a].Cgroup) {
					in[id], grew = true, true
					break
				}
			}
		}
	}
	for _, id := range roots {
		delete(in, id)
	}
	out := make([]string, 0, len(in))
	for id := range in {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// rederive clamps c's session with the effective ceilings of its parent
// and of every container of view whose cgroup is above its own, and
// re-derives its effective ceiling, kernel ceiling and fingerprint from
// it (the same resolution as GET /surface). The result is never wider
// than c.
func rederive(c state.Container, view map[string]state.Container) state.Container {
	b := c.Session
	if p, ok := view[c.Parent]; ok && c.Parent != "" {
		b = b.Clamp(p.Ceiling)
	}
	for id, o := range view {
		if id != c.ID && below(c.Cgroup, o.Cgroup) {
			b = b.Clamp(o.Ceiling)
		}
	}
	if b == c.Session {
		return c
	}
	surf := policy.ResolveSurface(storedRole(c.Role), b, c.ToolGroups)
	c.Session, c.Ceiling, c.Kernel, c.Fingerprint = b, surf.Ceiling, surf.Kernel, surf.Fingerprint
	return c
}

// settle re-derives the containers ids in view until none changes (a
// fixed point: each step only narrows, so it ends) and returns those that
// did, sorted. view is updated in place.
func settle(view map[string]state.Container, ids []string) ([]string, error) {
	changed := map[string]bool{}
	limit := 64 * (len(ids) + 1)
	for round := 0; ; round++ {
		if round > limit {
			return nil, fmt.Errorf("nesting: no fixed point after %d rounds", limit)
		}
		more := false
		for _, id := range ids {
			c := view[id]
			nc := rederive(c, view)
			if nc.Session != c.Session {
				view[id], changed[id], more = nc, true, true
			}
		}
		if !more {
			break
		}
	}
	out := make([]string, 0, len(changed))
	for id := range changed {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// narrowing is one registered container's change of ceiling inside a
// transaction.
type narrowing struct {
	old, new state.Container
}

// narrowingsTo compares view with the registry for ids and returns the
// changes, checking that none widens anything.
func (r *Registry) narrowingsTo(view map[string]state.Container, ids []string) ([]narrowing, error) {
	out := make([]narrowing, 0, len(ids))
	for _, id := range ids {
		old, c := r.byID[id], view[id]
		if !c.Ceiling.Within(old.Ceiling) || !c.Session.Within(old.Session) {
			return nil, fmt.Errorf("container %s: narrowing would widen %s to %s", id, old.Ceiling, c.Ceiling)
		}
		out = append(out, narrowing{old: old, new: c})
	}
	return out, nil
}

// mapUndo puts map entries back, in reverse order of their change.
type mapUndo []func()

func (u mapUndo) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// applyLocked installs the narrowings' kernel ceilings in the map, in
// order, each keeping its activation state (pending or in force), and
// returns the containers as they are to be stored (coverage gaps set) and
// how to undo the map changes. A container narrowed to shell=none is vetted
// as Narrow vets it. A container whose map entry is missing (Sweep
// re-installs it, in force, from the state) is only re-derived. On any
// error the map changes made so far are undone and nothing is returned;
// an error about a container other than asked (the one narrowed or
// registered; "": none) names both.
func (r *Registry) applyLocked(ns []narrowing, asked string) ([]state.Container, mapUndo, error) {
	var undo mapUndo
	out := make([]state.Container, 0, len(ns))
	for _, n := range ns {
		c, old := n.new, n.old
		fail := func(err error) ([]state.Container, mapUndo, error) {
			undo.run()
			if asked != "" && c.ID != asked {
				err = fmt.Errorf("container %s: %s is nested in it (by parent id or cgroup) and cannot take its ceiling: %w", asked, c.ID, err)
			}
			return nil, nil, err
		}
		prev, err := r.o.Enforcer.Lookup(c.CgroupID)
		missing := errors.Is(err, enforcer.ErrNotRegistered)
		if err != nil && !missing {
			return fail(fmt.Errorf("container %s: %w", c.ID, err))
		}
		cov := r.o.Enforcer.CoverageOf(entry.Entry{Ceiling: c.Kernel, Spec: c.Spec})
		c.Unenforced = cov.Gaps()
		if missing {
			out = append(out, c)
			continue
		}
		if err := cov.Err(c.AuditOnly, r.o.AllowPartial || prev.AllowPartial); err != nil {
			return fail(fmt.Errorf("container %s: %w", c.ID, err))
		}
		setDeviceFields(&prev, old)
		ent := prev
		ent.Ceiling = c.Kernel
		ent.AllowPartial = len(cov.Partial) > 0
		becomesNone := c.Kernel.Shell == policy.ShellNone && old.Kernel.Shell != policy.ShellNone
		if becomesNone && prev.Pending {
			files, interps, err := r.vetEntrypoint(c.ID, old.Entrypoint)
			if err != nil {
				return fail(err)
			}
			c.ExecInterp = appendExecFiles(c.ExecInterp, interps...)
			ent.ExecInterp = execAllowIDs(c.ExecInterp)
			ent.Entrypoints = execAllowIDs(files)
		}
		cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
		if err := r.o.Enforcer.Register(cg, ent); err != nil {
			return fail(fmt.Errorf("container %s: %w", c.ID, err))
		}
		failpoint.Hit("apply.map")
		id := c.ID
		undo = append(undo, func() {
			if err := r.o.Enforcer.Register(cg, prev); err != nil {
				r.o.Log.Error("rollback of a narrowing", "container", id, "cgroup_id", cg.ID, "err", err)
			}
		})
		if becomesNone && !prev.Pending {
			if err := r.vetRunning(c); err != nil {
				return fail(err)
			}
		}
		out = append(out, c)
	}
	return out, undo, nil
}

// narrowedEvents are the EventNarrowed records of cs; cause says why a
// container other than the one asked for was narrowed.
func (r *Registry) narrowedEvents(cs []state.Container, asked, cause string) []Event {
	var evs []Event
	for _, c := range cs {
		reason := registeredReason(c)
		if c.ID != asked && cause != "" {
			reason += "; " + cause
		}
		ev := r.event(c, EventNarrowed, reason)
		ev.Unenforced = codes(c.Unenforced)
		evs = append(evs, ev)
	}
	return evs
}

// viewWith is a copy of the registered containers with cs put in.
func (r *Registry) viewWith(cs ...state.Container) map[string]state.Container {
	view := make(map[string]state.Container, len(r.byID)+len(cs))
	for id, c := range r.byID {
		view[id] = c
	}
	for _, c := range cs {
		view[c.ID] = c
	}
	return view
}

// snapshotOf is the current containers with cs put in (replaced or added).
func (r *Registry) snapshotOf(cs ...state.Container) []state.Container {
	view := r.viewWith(cs...)
	out := make([]state.Container, 0, len(view))
	for _, c := range view {
		out = append(out, c)
	}
	return out
}
