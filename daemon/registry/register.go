package registry

import (
	"errors"
	"fmt"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/failpoint"
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
// processes already run such a program (ErrUnsafeProgram). Its steps
// (plan, kernelEntry and install, commit) are in registration.go.
func (r *Registry) Register(req Request) (state.Container, error) {
	if err := req.validate(); err != nil {
		return state.Container{}, err
	}
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.plan(req)
	if err != nil {
		return state.Container{}, err
	}
	entry := p.kernelEntry()
	// The intent first: a crash after the install leaves an entry the
	// next start adopts (Reconcile), never one nobody can manage.
	if err := r.saveIntent(p.c); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	defer r.dropIntent()
	activated, err := r.install(&p, &entry)
	if err != nil {
		return state.Container{}, err
	}
	cs, err := r.commit(p, entry)
	if err != nil {
		return state.Container{}, err
	}
	evs = r.registeredEvents(p.c, activated, cs)
	return p.c, nil
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
