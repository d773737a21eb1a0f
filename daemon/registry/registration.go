package registry

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/internal/failpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// Register runs in three steps, under the registry's lock:
//
//   - plan derives everything from the request, the registry and the
//     kernel's current entries, and changes nothing: the container as it
//     will be recorded, the narrowings of containers nested in it, what
//     the host enforces of it, the programs it lets run;
//   - kernelEntry turns the plan into the enforcer's map entry, and install
//     writes it (after the intent file) and settles a pending entry's
//     activation;
//   - commit re-checks what may have changed while the entry went in,
//     applies the narrowings, saves the state file and then the memory; on
//     any error it takes the entry back out (uninstall).

// registration is a planned registration (plan): what install and commit
// carry out.
type registration struct {
	req Request
	cg  cgroup.Cgroup
	// c is the container as it will be recorded, in force at once
	// (install decides a pending one's activation).
	c state.Container
	// now is when the registration was planned, its monotonic reading
	// kept: a pending deadline is measured from it.
	now time.Time
	// narrowings clamp the containers registered before it below its
	// cgroup (or naming it as parent) to it, in the same transaction.
	narrowings []narrowing
	// partial: the host enforces the ceiling only in part, accepted
	// (audit-only or Options.AllowPartial).
	partial bool
	// entrypoints and entryInterps: the vetted entrypoint of a pending
	// shell=none registration and its program interpreters.
	entrypoints, entryInterps []state.ExecFile
	// ownExec is the request's own exec allow list, vetted from vetStart
	// on (the real clock): commit re-checks it (recheckExecAllow).
	ownExec  []state.ExecFile
	vetStart time.Time
}

// plan derives the registration req asks for without changing anything:
// no map entry, file or memory is written. Its steps run in order, the
// first error is returned (errors match ErrBadRequest, ErrNotFound,
// ErrConflict, ErrCannotEnforce, ErrPartialCoverage, ErrUnsafeProgram or
// ErrEntrypointRequired). r.mu is held; req is validated.
func (r *Registry) plan(req Request) (registration, error) {
	p := registration{req: req}
	for _, step := range []func(*registration) error{
		r.planCeiling, r.planNesting, r.planReach, r.planProcesses, r.planCoverage, r.planExec,
	} {
		if err := step(&p); err != nil {
			return registration{}, err
		}
	}
	return p, nil
}

// planCeiling claims the id and the cgroup (neither registered, the cgroup
// without a map entry of its own) and derives the effective ceiling: the
// request's role and ceiling text met with the parent's ceiling and with
// every registered cgroup above (nesting.go). It sets p.cg, p.now and p.c.
func (r *Registry) planCeiling(p *registration) error {
	req := p.req
	base, err := r.parentBound(req)
	if err != nil {
		return err
	}
	// Refuse a bad role or ceiling text before looking at the cgroup.
	if _, _, err := resolve(req.Role, req.Ceiling, req.ToolGroups, base); err != nil {
		return fmt.Errorf("container %s: %w", req.ID, err)
	}
	if p.cg, err = r.freeCgroup(req); err != nil {
		return err
	}
	// The kernel holds the cgroup to the meet of every registered
	// ancestor cgroup: so does the answer (nesting.go).
	outer, err := r.outerBound(p.cg.Group)
	if err != nil {
		return fmt.Errorf("container %s: %w", req.ID, err)
	}
	session, surf, err := resolve(req.Role, req.Ceiling, req.ToolGroups, base.Clamp(outer))
	if err != nil {
		return fmt.Errorf("container %s: %w", req.ID, err)
	}
	// now keeps Go's monotonic reading (no .UTC(), no .Round(0)): the
	// pending deadline is measured on it, so a step of the wall clock
	// neither freezes a container mid-setup nor extends its wait.
	p.now = r.o.Now()
	p.c = state.Container{
		ID: req.ID, Cgroup: p.cg.Group, CgroupID: p.cg.ID, Role: req.Role,
		Session: session, Ceiling: surf.Ceiling, Kernel: surf.Kernel, Fingerprint: surf.Fingerprint,
		Parent: req.Parent, AuditOnly: req.AuditOnly, ToolGroups: req.ToolGroups,
		ProxyAllow: proxyAllow(req.ProxyAllow), Registered: p.now.UTC(), Activation: state.ActivationImmediate, State: state.StateActive,
		Entrypoint: req.Entrypoint, Spec: req.Spec,
	}
	return nil
}

// parentBound is the ceiling a registration starts from: its parent's
// (ErrNotFound when not registered), or the default session without one.
// A registered id is ErrConflict.
func (r *Registry) parentBound(req Request) (policy.Ceiling, error) {
	if _, ok := r.byID[req.ID]; ok {
		return policy.Ceiling{}, fmt.Errorf("%w: container %s is already registered", ErrConflict, req.ID)
	}
	if req.Parent == "" {
		return policy.DefaultSession(), nil
	}
	p, ok := r.byID[req.Parent]
	if !ok {
		return policy.Ceiling{}, fmt.Errorf("%w: parent %s of container %s", ErrNotFound, req.Parent, req.ID)
	}
	return p.Ceiling, nil
}

// freeCgroup is the cgroup req names (resolveCgroup), refused with
// ErrConflict when a container registered it or the kernel already holds
// an entry for it that the daemon did not install.
func (r *Registry) freeCgroup(req Request) (cgroup.Cgroup, error) {
	cg, err := r.resolveCgroup(req)
	if err != nil {
		return cgroup.Cgroup{}, err
	}
	if other, ok := r.byCgroup[cg.ID]; ok {
		return cgroup.Cgroup{}, fmt.Errorf("%w: cgroup %s is already registered by container %s", ErrConflict, cg, other)
	}
	if _, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
		return cgroup.Cgroup{}, fmt.Errorf("%w: cgroup %s already has a ceiling not registered through the daemon (enforcerd run?)", ErrConflict, cg)
	}
	return cg, nil
}

// planNesting meets the new container with the containers registered
// before it below its cgroup (or naming its id as their parent): p.c
// takes the settled ceiling, p.narrowings the changes of the others.
func (r *Registry) planNesting(p *registration) error {
	view := r.viewWith(p.c)
	changed, err := settle(view, append([]string{p.c.ID}, descendants(view, p.c.ID)...))
	if err != nil {
		return fmt.Errorf("container %s: %w", p.req.ID, err)
	}
	p.c = view[p.c.ID]
	var inner []string
	for _, id := range changed {
		if id != p.c.ID {
			inner = append(inner, id)
		}
	}
	p.narrowings, err = r.narrowingsTo(view, inner)
	return err
}

// planReach sets what the container may reach under its ceiling: the
// endpoints it may connect to, the devices it may open, and whether its
// console may carry data out.
func (r *Registry) planReach(p *registration) error {
	var err error
	if p.c.AllowConnect, err = r.allowConnect(p.req, p.c); err != nil {
		return err
	}
	if p.c.AllowDevices, err = r.allowDevices(p.req, p.c); err != nil {
		return err
	}
	if p.c.DenyConsoleEgress, err = r.denyConsoleEgress(p.req, p.c); err != nil {
		return fmt.Errorf("container %s: %w", p.req.ID, err)
	}
	return nil
}

// planProcesses vets a pending shell=none registration's entrypoint and
// records the processes the registration names: its init process (inside
// its cgroup), its setup program and the terminals it owns.
func (r *Registry) planProcesses(p *registration) error {
	var err error
	if p.c.Kernel.Shell == policy.ShellNone && p.req.Activate == ActivateExec {
		if p.entrypoints, p.entryInterps, err = r.vetEntrypoint(p.req.ID, p.req.Entrypoint); err != nil {
			return err
		}
	}
	if p.req.InitPID > 0 {
		if p.c.InitStart, err = r.initStart(p.req, p.cg); err != nil {
			return err
		}
		p.c.InitPID = p.req.InitPID
	}
	if p.c.SetupProgram, err = setupProgramOf(p.req, p.cg.Group); err != nil {
		return err
	}
	p.c.ShmDir = shmDirOf(p.req)
	p.c.Terminals, err = r.ownTerminals(p.req, p.c)
	return err
}

// shmDirOf is the POSIX shared memory directory of the registered
// processes (entry.ShmDirOf), nil when none can be named: without a pid,
// or a registration at exec without the container's root directory
// (before its runtime pivots, the init's /proc/PID/root is not the
// container's "/"), or when it is not the root of a tmpfs. nil is the
// fail-closed side: the container's shm files are written like any other.
func shmDirOf(req Request) *state.FileID {
	pid := req.InitPID
	if pid <= 0 {
		pid = req.PID
	}
	if pid <= 0 {
		return nil
	}
	proc := path.Join("/proc", strconv.Itoa(pid))
	root := path.Join(proc, "root")
	switch {
	case req.Entrypoint != nil && req.Entrypoint.Root != "" && req.Entrypoint.Root != "/":
		root = req.Entrypoint.Root
	case req.Activate == ActivateExec && (req.Entrypoint == nil || req.Entrypoint.Root == ""):
		return nil
	}
	id, err := entry.ShmDirOf(root, path.Join(proc, "mountinfo"))
	if err != nil {
		return nil
	}
	return &state.FileID{Dev: id.Dev, Ino: id.Ino}
}

// initStart is the start time of req.InitPID (clock ticks after boot),
// refused (ErrBadRequest) when the process is gone or outside cg.
func (r *Registry) initStart(req Request, cg cgroup.Cgroup) (uint64, error) {
	g, err := r.o.Cgroups.PidGroup(req.InitPID)
	if err != nil {
		return 0, badf("container %s: init_pid: %v", req.ID, err)
	}
	if g = path.Clean(g); g != cg.Group && !strings.HasPrefix(g, cg.Group+"/") {
		return 0, badf("container %s: init_pid %d is in cgroup %s, outside %s", req.ID, req.InitPID, g, cg.Group)
	}
	start, err := r.o.StartTime(req.InitPID)
	if err != nil {
		return 0, badf("container %s: init_pid: %v", req.ID, err)
	}
	return start, nil
}

// planCoverage asks the enforcer what this host enforces of the ceiling
// (refused unless enforced in full, or in part and accepted), records the
// gaps and resolves the write roots, every spec mount inside them.
func (r *Registry) planCoverage(p *registration) error {
	c := &p.c
	cov := r.o.Enforcer.CoverageOf(entry.Entry{Ceiling: c.Kernel, AllowConnect: c.AllowConnect, Spec: c.Spec})
	if err := cov.Err(c.AuditOnly, r.o.AllowPartial); err != nil {
		return fmt.Errorf("container %s: %w", p.req.ID, err)
	}
	c.Unenforced = cov.Gaps()
	p.partial = len(cov.Partial) > 0
	var err error
	if c.WriteRoots, err = r.writeRootsOf(p.req, *c); err != nil {
		return err
	}
	if err := specMountsInRoots(*c, cov); err != nil {
		return fmt.Errorf("container %s: %w", p.req.ID, err)
	}
	return nil
}

// planExec resolves the programs the container may exec (its own list met
// with its ancestors', execallow.go) and their interpreters, with a
// shell=none entrypoint's. The vetting starts on the real clock, for
// commit's re-check: inode change times are real.
func (r *Registry) planExec(p *registration) error {
	p.vetStart = time.Now()
	var err error
	if p.c.ExecAllow, p.ownExec, p.c.ExecInterp, err = r.execAllowOf(p.req, p.c); err != nil {
		return err
	}
	if p.c.Kernel.Shell == policy.ShellNone {
		p.c.ExecInterp = appendExecFiles(p.entryInterps, p.c.ExecInterp...)
	}
	return nil
}

// kernelEntry is the enforcer's map entry of the planned registration:
// pending until the first exec when the request asks for it.
func (p registration) kernelEntry() entry.Entry {
	c := p.c
	en := entry.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, Pending: p.req.Activate == ActivateExec,
		AllowPartial: p.partial, AllowConnect: c.AllowConnect, WriteRoots: writeRootIDs(c.WriteRoots),
		ExecAllow: execAllowIDs(c.ExecAllow), ExecInterp: execAllowIDs(c.ExecInterp), Entrypoints: execAllowIDs(p.entrypoints),
		Spec: c.Spec}
	setDeviceFields(&en, c)
	return en
}

// install writes entry into the enforcer's map. A pending entry then stays
// pending (p.c pending, its deadline set) unless another process already
// runs in the cgroup: it is put in force at once, and the
// EventActivatedImmediately returned. When that second write fails the
// entry is taken out again. The caller has saved the intent.
func (r *Registry) install(p *registration, en *entry.Entry) ([]Event, error) {
	if err := r.o.Enforcer.Register(p.cg, *en); err != nil {
		return nil, fmt.Errorf("container %s: %w", p.req.ID, err)
	}
	failpoint.Hit("register.map")
	if !en.Pending {
		return nil, nil
	}
	// Look for other processes only now that the pending entry is
	// installed: one that enters later is the watcher's (CheckPending).
	why := r.intruders(p.c)
	if why == "" {
		p.c.Activation, p.c.State = state.ActivationAtExec, state.StatePending
		d := p.now.Add(r.o.PendingDeadline)
		p.c.PendingDeadline = &d
		return nil, nil
	}
	en.Pending = false
	if err := r.o.Enforcer.Register(p.cg, *en); err != nil {
		r.uninstall(*p, "rollback of a failed registration")
		return nil, fmt.Errorf("container %s: activate at once (%s): %w", p.req.ID, why, err)
	}
	p.c.ActivationReason = why
	return []Event{r.event(p.c, EventActivatedImmediately, why)}, nil
}

// commit makes an installed registration p (entry as in force) the
// registry's: it re-checks what may have changed since plan, applies the
// narrowings to the map, saves the state file and updates the memory, in
// that order. It returns the narrowed containers. On any error the
// narrowings and the entry are taken back out: nothing is registered.
func (r *Registry) commit(p registration, en entry.Entry) ([]state.Container, error) {
	if err := r.recheck(p, en); err != nil {
		r.uninstall(p, "rollback of a refused registration")
		return nil, err
	}
	cs, undo, err := r.applyLocked(p.narrowings, p.c.ID)
	if err != nil {
		r.uninstall(p, "rollback of a refused registration")
		return nil, err
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotOf(append(cs, p.c)...)); err != nil {
		undo.run()
		r.uninstall(p, "rollback of a failed registration")
		return nil, fmt.Errorf("container %s: %w", p.req.ID, err)
	}
	for _, n := range cs {
		r.byID[n.ID] = n
	}
	r.byID[p.c.ID] = p.c
	r.byCgroup[p.c.CgroupID] = p.c.ID
	return cs, nil
}

// recheck re-vets, once the entry is installed, what its vetting could
// not pin: the request's exec allow list (no file changed since
// p.vetStart) and, for a shell=none entry in force without an exec, the
// programs the cgroup's processes already run.
func (r *Registry) recheck(p registration, en entry.Entry) error {
	if err := recheckExecAllow(p.req, p.ownExec, p.vetStart); err != nil {
		return err
	}
	if !en.Pending && p.c.Kernel.Shell == policy.ShellNone {
		// In force without an exec: what it lets run is what the
		// cgroup's processes already run.
		return r.vetRunning(p.c)
	}
	return nil
}

// uninstall takes p's entry out of the map after a failed or refused
// registration; a failure to do so is logged as msg.
func (r *Registry) uninstall(p registration, msg string) {
	if err := r.o.Enforcer.Unregister(p.cg.ID); err != nil {
		r.o.Log.Error(msg, "container", p.c.ID, "cgroup_id", p.cg.ID, "err", err)
	}
}

// registeredEvents are the events of a committed registration c: its
// EventRegistered, the activation install decided, one EventNarrowed per
// container nested in it (cs).
func (r *Registry) registeredEvents(c state.Container, activated []Event, cs []state.Container) []Event {
	reg := r.event(c, EventRegistered, registeredReason(c))
	reg.Unenforced = codes(c.Unenforced)
	evs := append([]Event{reg}, activated...)
	return append(evs, r.narrowedEvents(cs, "", "nested in container "+c.ID+", registered after it")...)
}
