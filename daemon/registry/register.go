package registry

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/failpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// Register installs a container's ceiling and persists it. The ceiling is
// the meet of the request (role, ceiling text), the parent's effective
// ceiling and the ceilings of every registered cgroup above the
// container's (nesting.go), and containers already registered below it
// (by cgroup, or naming its id as parent) are clamped to it in the same
// transaction, one EventNarrowed each. Under the
// effective ceiling shell=none it refuses, before anything is installed,
// a registration pending until the first exec whose Entrypoint is missing
// or cannot be resolved and read (ErrEntrypointRequired) or is a shell, a
// multi-call binary or the dynamic loader (ErrUnsafeProgram); and, once
// installed and then rolled back, one in force at once whose cgroup's
// processes already run such a program (ErrUnsafeProgram).
func (r *Registry) Register(req Request) (state.Container, error) {
	if err := req.validate(); err != nil {
		return state.Container{}, err
	}
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[req.ID]; ok {
		return state.Container{}, fmt.Errorf("%w: container %s is already registered", ErrConflict, req.ID)
	}
	base := policy.DefaultSession()
	if req.Parent != "" {
		p, ok := r.byID[req.Parent]
		if !ok {
			return state.Container{}, fmt.Errorf("%w: parent %s of container %s", ErrNotFound, req.Parent, req.ID)
		}
		base = p.Ceiling
	}
	// Refuse a bad role or ceiling text before looking at the cgroup.
	if _, _, err := resolve(req.Role, req.Ceiling, req.ToolGroups, base); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	cg, err := r.resolveCgroup(req)
	if err != nil {
		return state.Container{}, err
	}
	if other, ok := r.byCgroup[cg.ID]; ok {
		return state.Container{}, fmt.Errorf("%w: cgroup %s is already registered by container %s", ErrConflict, cg, other)
	}
	if _, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
		return state.Container{}, fmt.Errorf("%w: cgroup %s already has a ceiling not registered through the daemon (enforcerd run?)", ErrConflict, cg)
	}
	// The kernel holds the cgroup to the meet of every registered
	// ancestor cgroup: so does the answer (nesting.go).
	outer, err := r.outerBound(cg.Group)
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	session, surf, err := resolve(req.Role, req.Ceiling, req.ToolGroups, base.Clamp(outer))
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	// now keeps Go's monotonic reading (no .UTC(), no .Round(0)): the
	// pending deadline below is measured on it, so a step of the wall
	// clock neither freezes a container mid-setup nor extends its wait.
	now := r.o.Now()
	c := state.Container{
		ID: req.ID, Cgroup: cg.Group, CgroupID: cg.ID, Role: req.Role,
		Session: session, Ceiling: surf.Ceiling, Kernel: surf.Kernel, Fingerprint: surf.Fingerprint,
		Parent: req.Parent, AuditOnly: req.AuditOnly, ToolGroups: req.ToolGroups,
		ProxyAllow: proxyAllow(req.ProxyAllow), Registered: now.UTC(), Activation: state.ActivationImmediate, State: state.StateActive,
		Entrypoint: req.Entrypoint, Spec: req.Spec,
	}
	// Containers registered before it below its cgroup (or naming its id
	// as their parent) are clamped to it now, in the same transaction.
	view := r.viewWith(c)
	changed, err := settle(view, append([]string{c.ID}, descendants(view, c.ID)...))
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	c = view[c.ID]
	var inner []string
	for _, id := range changed {
		if id != c.ID {
			inner = append(inner, id)
		}
	}
	ns, err := r.narrowingsTo(view, inner)
	if err != nil {
		return state.Container{}, err
	}
	if c.AllowConnect, err = r.allowConnect(req, c); err != nil {
		return state.Container{}, err
	}
	if c.AllowDevices, err = r.allowDevices(req, c); err != nil {
		return state.Container{}, err
	}
	if c.DenyConsoleEgress, err = r.denyConsoleEgress(req, c); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	var entryFiles, entryInterps []state.ExecFile
	if c.Kernel.Shell == policy.ShellNone && req.Activate == ActivateExec {
		if entryFiles, entryInterps, err = r.vetEntrypoint(req.ID, req.Entrypoint); err != nil {
			return state.Container{}, err
		}
	}
	if req.InitPID > 0 {
		g, err := r.o.Cgroups.PidGroup(req.InitPID)
		if err != nil {
			return state.Container{}, badf("container %s: init_pid: %v", req.ID, err)
		}
		if g = path.Clean(g); g != cg.Group && !strings.HasPrefix(g, cg.Group+"/") {
			return state.Container{}, badf("container %s: init_pid %d is in cgroup %s, outside %s", req.ID, req.InitPID, g, cg.Group)
		}
		if c.InitStart, err = r.o.StartTime(req.InitPID); err != nil {
			return state.Container{}, badf("container %s: init_pid: %v", req.ID, err)
		}
		c.InitPID = req.InitPID
	}
	if c.SetupProgram, err = setupProgramOf(req, cg.Group); err != nil {
		return state.Container{}, err
	}
	if c.Terminals, err = r.ownTerminals(req, c); err != nil {
		return state.Container{}, err
	}
	cov := r.o.Enforcer.CoverageOf(enforcer.Entry{Ceiling: c.Kernel, AllowConnect: c.AllowConnect, Spec: c.Spec})
	if err := cov.Err(c.AuditOnly, r.o.AllowPartial); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	c.Unenforced = cov.Gaps()
	if c.WriteRoots, err = r.writeRootsOf(req, c); err != nil {
		return state.Container{}, err
	}
	if err := specMountsInRoots(c, cov); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	vetStart := time.Now() // the real clock: inode change times are real
	var ownExec []state.ExecFile
	if c.ExecAllow, ownExec, c.ExecInterp, err = r.execAllowOf(req, c); err != nil {
		return state.Container{}, err
	}
	if c.Kernel.Shell == policy.ShellNone {
		c.ExecInterp = appendExecFiles(entryInterps, c.ExecInterp...)
	}
	entry := enforcer.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, Pending: req.Activate == ActivateExec,
		AllowPartial: len(cov.Partial) > 0, AllowConnect: c.AllowConnect, WriteRoots: writeRootIDs(c.WriteRoots),
		ExecAllow: execAllowIDs(c.ExecAllow), ExecInterp: execAllowIDs(c.ExecInterp), Entrypoints: execAllowIDs(entryFiles),
		Spec: c.Spec}
	setDeviceFields(&entry, c)
	// The intent first: a crash after the install leaves an entry the
	// next start adopts (Reconcile), never one nobody can manage.
	if err := r.saveIntent(c); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	defer r.dropIntent()
	if err := r.o.Enforcer.Register(cg, entry); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	failpoint.Hit("register.map")
	if entry.Pending {
		// Look for other processes only now that the pending entry is
		// installed: one that enters later is the watcher's (CheckPending).
		if why := r.intruders(c); why != "" {
			entry.Pending = false
			if err := r.o.Enforcer.Register(cg, entry); err != nil {
				if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
					r.o.Log.Error("rollback of a failed registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
				}
				return state.Container{}, fmt.Errorf("container %s: activate at once (%s): %w", req.ID, why, err)
			}
			c.ActivationReason = why
			evs = append(evs, r.event(c, EventActivatedImmediately, why))
		} else {
			c.Activation, c.State = state.ActivationAtExec, state.StatePending
			d := now.Add(r.o.PendingDeadline)
			c.PendingDeadline = &d
		}
	}
	if err := recheckExecAllow(req, ownExec, vetStart); err != nil {
		evs = nil
		if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
			r.o.Log.Error("rollback of a refused registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
		}
		return state.Container{}, err
	}
	if !entry.Pending && c.Kernel.Shell == policy.ShellNone {
		// In force without an exec: what it lets run is what the
		// cgroup's processes already run.
		if err := r.vetRunning(c); err != nil {
			evs = nil
			if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
				r.o.Log.Error("rollback of a refused registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
			}
			return state.Container{}, err
		}
	}
	cs, undo, err := r.applyLocked(ns, c.ID)
	if err != nil {
		evs = nil // nothing was registered
		if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
			r.o.Log.Error("rollback of a refused registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
		}
		return state.Container{}, err
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotOf(append(cs, c)...)); err != nil {
		evs = nil // nothing was registered
		undo.run()
		if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
			r.o.Log.Error("rollback of a failed registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
		}
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	for _, n := range cs {
		r.byID[n.ID] = n
	}
	r.byID[c.ID] = c
	r.byCgroup[c.CgroupID] = c.ID
	reg := r.event(c, EventRegistered, registeredReason(c))
	reg.Unenforced = codes(c.Unenforced)
	evs = append([]Event{reg}, evs...)
	evs = append(evs, r.narrowedEvents(cs, "", "nested in container "+c.ID+", registered after it")...)
	return c, nil
}

// Unregister removes a container's ceiling and forgets it.
func (r *Registry) Unregister(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byID[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	prev, lerr := r.o.Enforcer.Lookup(c.CgroupID)
	if err := r.o.Enforcer.Unregister(c.CgroupID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
		return fmt.Errorf("container %s: %w", id, err)
	}
	failpoint.Hit("unregister.map")
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, id)); err != nil {
		if lerr == nil {
			// Put the exact entry back (pending or active): still enforced.
			// Lookup does not read the exec allow list back; the state has it.
			prev.ExecAllow = execAllowIDs(c.ExecAllow)
			prev.ExecInterp = execAllowIDs(c.ExecInterp)
			setDeviceFields(&prev, c)
			if rerr := r.o.Enforcer.Register(cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}, prev); rerr != nil {
				r.o.Log.Error("rollback of a failed unregistration", "container", id, "cgroup_id", c.CgroupID, "err", rerr)
			}
		}
		return fmt.Errorf("container %s: %w", id, err)
	}
	r.forget(id, c)
	return nil
}

// saveIntent records c as the registration in flight (state.SaveIntent),
// before its entry is installed: a start after a crash adopts it when the
// kernel holds the entry (adoptIntent).
func (r *Registry) saveIntent(c state.Container) error {
	return state.SaveIntent(r.o.StatePath, c)
}

// dropIntent removes the intent once the registration is saved or
// refused. An intent left behind names a registration the state has or
// the kernel lacks, and the next start drops it.
func (r *Registry) dropIntent() {
	if err := state.RemoveIntent(r.o.StatePath); err != nil {
		r.o.Log.Warn("remove the intent of a registration", "err", err)
	}
}
