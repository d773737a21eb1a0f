package registry

import (
	"errors"
	"os"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
)

// The steps of sweepLocked (reconcile.go). Callers hold r.mu.

// mapEntries is the enforcer's map by cgroup id; empty (logged) when it
// cannot be listed: every live container is then re-installed.
func (r *Registry) mapEntries() map[uint64]entry.Entry {
	inMap := map[uint64]entry.Entry{}
	regs, err := r.o.Enforcer.List()
	if err != nil {
		r.o.Log.Error("reconcile: list map", "err", err)
	}
	for _, g := range regs {
		inMap[g.CgroupID] = g.Entry
	}
	return inMap
}

// sweepOneLocked settles the container id against its cgroup and the map
// (inMap) and records the outcome in rep: a cgroup that cannot be checked
// is kept (never drop a possibly live ceiling); a gone one (or a new
// cgroup at its path) is unregistered and forgotten; a live one in the
// map is kept untouched (with interps, its program interpreters are
// recovered: recoverInterps); a live one missing from the map is
// re-installed (reinstallLocked).
func (r *Registry) sweepOneLocked(id string, inMap map[uint64]entry.Entry, interps bool, rep *Report) {
	c := r.byID[id]
	cg, err := r.o.Cgroups.Open(c.Cgroup)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.o.Log.Warn("reconcile: cannot check cgroup; keeping", "container", id, "cgroup", c.Cgroup, "err", err)
		rep.Kept = append(rep.Kept, id)
		return
	}
	if err != nil || cg.ID != c.CgroupID {
		if err := r.o.Enforcer.Unregister(c.CgroupID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
			r.o.Log.Warn("reconcile: unregister gone cgroup", "container", id, "cgroup_id", c.CgroupID, "err", err)
		}
		r.forget(id, c)
		rep.Dropped = append(rep.Dropped, id)
		return
	}
	if en, ok := inMap[c.CgroupID]; ok {
		if interps {
			r.recoverInterps(c, cg, en)
		}
		rep.Kept = append(rep.Kept, id)
		return
	}
	if err := r.reinstallLocked(c, cg); err != nil {
		r.o.Log.Error("reconcile: cannot re-install ceiling", "container", id, "cgroup", c.Cgroup, "err", err)
		rep.Failed = append(rep.Failed, id)
		return
	}
	rep.Reinstalled = append(rep.Reinstalled, id)
}

// reinstallLocked puts the entry of a live container c missing from the
// map (its pins were removed) back into cg, in force now (fail closed): a
// pending c becomes active.
func (r *Registry) reinstallLocked(c state.Container, cg cgroup.Cgroup) error {
	// AllowPartial: this ceiling was accepted before; refusing to put it
	// back would leave the cgroup with none at all.
	en := entry.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, AllowPartial: true, AllowConnect: c.AllowConnect, WriteRoots: writeRootIDs(c.WriteRoots), ExecAllow: execAllowIDs(c.ExecAllow), ExecInterp: execAllowIDs(c.ExecInterp), Spec: c.Spec}
	setDeviceFields(&en, c)
	if err := r.o.Enforcer.Register(cg, en); err != nil {
		return err
	}
	if c.State == state.StatePending {
		c.State, c.PendingDeadline = state.StateActive, nil
		r.byID[c.ID] = c
	}
	return nil
}

// dropOrphansLocked removes the map entries (inMap) of gone cgroups that
// no container owns and returns how many. Entries of live cgroups are
// left alone (enforced by someone else: enforcerd run), and all of them
// when the live cgroups cannot be listed.
func (r *Registry) dropOrphansLocked(inMap map[uint64]entry.Entry) int {
	var stray []uint64
	for cgid := range inMap {
		if _, ok := r.byCgroup[cgid]; !ok {
			stray = append(stray, cgid)
		}
	}
	if len(stray) == 0 {
		return 0
	}
	live, err := r.o.Cgroups.LiveIDs()
	if err != nil {
		r.o.Log.Warn("reconcile: cannot list live cgroups; leaving unknown map entries", "err", err)
		return 0
	}
	n := 0
	for _, cgid := range stray {
		if !live[cgid] && r.o.Enforcer.Unregister(cgid) == nil {
			n++
		}
	}
	return n
}
