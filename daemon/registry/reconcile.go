package registry

import (
	"sort"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// Report says what Reconcile or Sweep did.
type Report struct {
	Kept        []string // live, in the map: left untouched
	Reinstalled []string // live, missing from the map: registered again (in force)
	Dropped     []string // cgroup gone: unregistered and forgotten
	Failed      []string // live but could not be re-installed: kept, logged
	Orphans     int      // map entries of gone cgroups no container owned: removed
	// Narrowed (Reconcile): containers wider than an ancestor, by parent
	// id or by cgroup (a state file written before the daemon kept the
	// nesting rule, or a crash in the middle of a narrowing), clamped to
	// it.
	Narrowed []string
	// Met (Reconcile): containers whose kernel entry and stored entry
	// differed (a crash between the map write and the state save): both
	// now hold their meet (meet.go).
	Met []string
	// Adopted (Reconcile): registrations in flight at a crash whose
	// entry the kernel holds, now registered; Abandoned: those it does
	// not hold, forgotten.
	Adopted, Abandoned []string
	// TempFiles (Reconcile): temporary files of interrupted state saves,
	// removed.
	TempFiles int
}

// Reconcile loads the state file and makes state, map and live cgroups
// agree (meet.go says what is true after a crash): temporary files of
// interrupted saves are removed; a registration in flight at a crash is
// adopted when the kernel holds its entry, dropped when not; a live
// container whose kernel entry differs from its stored entry takes their
// meet, in the map and the state, one EventReconciled each (Report.Met);
// other live containers are kept (their map entries are not touched, so a
// restart opens no window); containers whose cgroup is gone are unregistered
// and dropped; map entries of gone cgroups are removed; map entries of live
// cgroups the daemon does not know are left alone (enforcerd run). A
// container wider than one of its ancestors (by parent id or cgroup: a
// state file from before the daemon kept that rule) is clamped to it, as
// Narrow would (Report.Narrowed, one EventNarrowed each). Pins are never
// removed. Errors: the state file is unreadable or corrupt.
func (r *Registry) Reconcile() (Report, error) {
	cs, err := state.Load(r.o.StatePath)
	if err != nil {
		return Report{}, err
	}
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	var rep0 Report
	tmp, err := state.SweepTemp(r.o.StatePath)
	if err != nil {
		r.o.Log.Warn("reconcile: temporary files of interrupted saves left", "err", err)
	}
	if rep0.TempFiles = len(tmp); len(tmp) > 0 {
		r.o.Log.Info("reconcile: removed temporary files of interrupted state saves", "files", tmp)
	}
	r.byID = map[string]state.Container{}
	r.byCgroup = map[uint64]string{}
	for _, c := range cs {
		if c.State == "" {
			// A state file from before activation states were kept.
			c.State = state.StateActive
			if en, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && en.Pending {
				d := r.o.Now().Add(r.o.PendingDeadline)
				c.State, c.PendingDeadline = state.StatePending, &d
			}
		}
		r.byID[c.ID] = c
		r.byCgroup[c.CgroupID] = c.ID
	}
	intent, hasIntent, err := state.LoadIntent(r.o.StatePath)
	if err != nil {
		// A machine crash: the kernel lost the entry with its pins.
		r.o.Log.Warn("reconcile: unreadable intent of a registration in flight ignored", "err", err)
	}
	if hasIntent {
		evs = r.adoptIntent(intent, &rep0)
	}
	evs = append(evs, r.meetAllLocked(&rep0)...)
	rep := r.sweepLocked(true)
	rep.Met, rep.Adopted, rep.Abandoned, rep.TempFiles = rep0.Met, rep0.Adopted, rep0.Abandoned, rep0.TempFiles
	rep.Failed = append(rep0.Failed, rep.Failed...)
	narrowed, undo := r.settleAllLocked(&rep)
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, "")); err != nil {
		// The met entries stay in the map: narrower, never wider, and
		// the next start meets them again.
		undo()
		evs = nil
		return rep, err
	}
	evs = append(evs, narrowed...)
	if err := state.RemoveIntent(r.o.StatePath); err != nil {
		r.o.Log.Warn("reconcile: intent of a registration in flight left", "err", err)
	}
	return rep, nil
}

// settleAllLocked clamps every container to its ancestors (nesting.go) in
// one transaction, as Narrow does, and applies it to the map and memory;
// the caller saves the state, and calls undo if that fails. A transaction
// that fails is logged and left out: the containers keep their ceilings.
func (r *Registry) settleAllLocked(rep *Report) (evs []Event, undo func()) {
	undo = func() {}
	view := r.viewWith()
	ids := make([]string, 0, len(view))
	for id := range view {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	changed, err := settle(view, ids)
	if err == nil && len(changed) == 0 {
		return nil, undo
	}
	var ns []narrowing
	if err == nil {
		ns, err = r.narrowingsTo(view, changed)
	}
	var cs []state.Container
	var mu mapUndo
	if err == nil {
		cs, mu, err = r.applyLocked(ns, "")
	}
	if err != nil {
		r.o.Log.Error("reconcile: cannot clamp containers wider than their ancestors; left as they were", "containers", changed, "err", err)
		return nil, undo
	}
	old := make([]state.Container, 0, len(cs))
	for _, c := range cs {
		old = append(old, r.byID[c.ID])
		r.byID[c.ID] = c
		rep.Narrowed = append(rep.Narrowed, c.ID)
		r.o.Log.Warn("reconcile: container wider than an ancestor clamped to it", "container", c.ID, "kernel", c.Kernel.String())
	}
	return r.narrowedEvents(cs, "", "clamped at start to its ancestors (by parent id or cgroup)"), func() {
		mu.run()
		for _, c := range old {
			r.byID[c.ID] = c
		}
	}
}

// Sweep drops containers whose cgroup is gone (the runtime never ran
// poststop, e.g. it crashed) and persists the result.
func (r *Registry) Sweep() (Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.sweepLocked(false)
	if len(rep.Dropped) == 0 && len(rep.Reinstalled) == 0 {
		return rep, nil
	}
	return rep, r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, ""))
}

// sweepLocked drops the containers whose cgroup is gone and re-installs,
// in force, the live ones missing from the map (sweep.go). With orphans
// (Reconcile) it also lists the program interpreters of containers from
// older builds (recoverInterps) and removes the map entries of gone
// cgroups no container owns. Callers hold r.mu and save the state.
func (r *Registry) sweepLocked(orphans bool) Report {
	var rep Report
	inMap := r.mapEntries()
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r.sweepOneLocked(id, inMap, orphans, &rep)
	}
	if orphans {
		rep.Orphans = r.dropOrphansLocked(inMap)
	}
	return rep
}

// recoverInterps lists the program interpreters of a shell=none container
// whose state comes from a build that did not record them (ExecInterp
// empty): without them the kernel refuses every later exec of its dynamic
// programs. They are vetted again, now: the interpreters of the programs
// its processes run (each in its own root) and of its entrypoint, when
// its root can still be read. A program interpreter that fails the
// vetting is not listed (fail closed); the outcome is logged.
func (r *Registry) recoverInterps(c state.Container, cg cgroup.Cgroup, en entry.Entry) {
	if c.Kernel.Shell != policy.ShellNone || len(c.ExecInterp) > 0 {
		return
	}
	var found []progcheck.FileRef
	pids, err := r.o.Cgroups.Procs(c.Cgroup)
	if err == nil {
		found, err = r.o.VetProcesses(pids)
	}
	if err != nil {
		r.o.Log.Warn("reconcile: program interpreters of running programs not vetted", "container", c.ID, "err", err)
	}
	if c.Entrypoint != nil {
		if v, err := r.o.CheckEntrypoint(*c.Entrypoint); err == nil {
			found = append(found, v.Interps...)
		}
	}
	if len(found) == 0 {
		return
	}
	c.ExecInterp = interpFiles(found)
	en.ExecAllow = execAllowIDs(c.ExecAllow)
	en.ExecInterp = execAllowIDs(c.ExecInterp)
	en.Spec = c.Spec
	setDeviceFields(&en, c)
	if err := r.o.Enforcer.Register(cg, en); err != nil {
		r.o.Log.Error("reconcile: cannot list program interpreters", "container", c.ID, "err", err)
		return
	}
	r.byID[c.ID] = c
	r.o.Log.Info("reconcile: program interpreters listed for a container registered by an older build", "container", c.ID, "interpreters", len(c.ExecInterp))
}
