package registry

import (
	"fmt"
	"strings"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/policy"
)

// Narrow clamps a container's ceiling further with ceiling text. The result
// is never wider than before; the activation state (pending or in force) is
// kept. Narrowing to shell=none is vetted as Register vets it (the stored
// Entrypoint while pending, the running programs once in force); when
// refused, the ceiling stays as it was.
func (r *Registry) Narrow(id, ceilingText string) (state.Container, error) {
	if strings.TrimSpace(ceilingText) == "" {
		return state.Container{}, badf("container %s: empty ceiling", id)
	}
	if len(ceilingText) > 1024 {
		return state.Container{}, badf("ceiling too long")
	}
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.byID[id]
	if !ok {
		return state.Container{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	req, err := policy.ParseCeiling(ceilingText, policy.DefaultSession())
	if err != nil {
		return state.Container{}, badf("container %s: ceiling %q: %v", id, ceilingText, err)
	}
	session := old.Session.Clamp(req)
	surf := policy.ResolveSurface(storedRole(old.Role), session, old.ToolGroups)
	if !surf.Ceiling.Within(old.Ceiling) {
		return state.Container{}, fmt.Errorf("container %s: narrowing would widen %s to %s", id, old.Ceiling, surf.Ceiling)
	}
	c := old
	c.Session, c.Ceiling, c.Kernel, c.Fingerprint = session, surf.Ceiling, surf.Kernel, surf.Fingerprint
	prev, err := r.o.Enforcer.Lookup(old.CgroupID)
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
	cov := r.o.Enforcer.Coverage(c.Kernel)
	if err := cov.Err(c.AuditOnly, r.o.AllowPartial || prev.AllowPartial); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	c.Unenforced = cov.Gaps()
	entry := prev
	entry.Ceiling = c.Kernel
	entry.AllowPartial = len(cov.Partial) > 0
	becomesNone := c.Kernel.Shell == policy.ShellNone && old.Kernel.Shell != policy.ShellNone
	if becomesNone && prev.Pending {
		if err := r.vetEntrypoint(id, old.Entrypoint); err != nil {
			return state.Container{}, err
		}
	}
	if err := r.o.Enforcer.Register(cg, entry); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	if becomesNone && !prev.Pending {
		if err := r.vetRunning(c); err != nil {
			if rerr := r.o.Enforcer.Register(cg, prev); rerr != nil {
				r.o.Log.Error("rollback of a refused narrowing", "container", id, "err", rerr)
			}
			return state.Container{}, err
		}
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(c, "")); err != nil {
		if rerr := r.o.Enforcer.Register(cg, prev); rerr != nil {
			r.o.Log.Error("rollback of a failed narrowing", "container", id, "err", rerr)
		}
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	r.byID[id] = c
	ev := r.event(c, EventNarrowed, registeredReason(c))
	ev.Unenforced = codes(c.Unenforced)
	evs = append(evs, ev)
	return c, nil
}
