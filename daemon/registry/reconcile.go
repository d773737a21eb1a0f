package registry

import (
	"errors"
	"os"
	"sort"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
)

// Report says what Reconcile or Sweep did.
type Report struct {
	Kept        []string // live, in the map: left untouched
	Reinstalled []string // live, missing from the map: registered again (in force)
	Dropped     []string // cgroup gone: unregistered and forgotten
	Failed      []string // live but could not be re-installed: kept, logged
	Orphans     int      // map entries of gone cgroups no container owned: removed
}

// Reconcile loads the state file and makes state, map and live cgroups
// agree: live containers are kept (their map entries are not touched, so a
// restart opens no window); containers whose cgroup is gone are unregistered
// and dropped; map entries of gone cgroups are removed; map entries of live
// cgroups the daemon does not know are left alone (enforcerd run). Pins are
// never removed. Errors: the state file is unreadable or corrupt.
func (r *Registry) Reconcile() (Report, error) {
	cs, err := state.Load(r.o.StatePath)
	if err != nil {
		return Report{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID = map[string]state.Container{}
	r.byCgroup = map[uint64]string{}
	for _, c := range cs {
		if c.State == "" {
			// A state file from before activation states were kept.
			c.State = state.StateActive
			if en, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && en.Pending {
				d := r.o.Now().UTC().Add(r.o.PendingDeadline)
				c.State, c.PendingDeadline = state.StatePending, &d
			}
		}
		r.byID[c.ID] = c
		r.byCgroup[c.CgroupID] = c.ID
	}
	rep := r.sweepLocked(true)
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, "")); err != nil {
		return rep, err
	}
	return rep, nil
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

func (r *Registry) sweepLocked(orphans bool) Report {
	var rep Report
	inMap := map[uint64]enforcer.Entry{}
	regs, err := r.o.Enforcer.List()
	if err != nil {
		r.o.Log.Error("reconcile: list map", "err", err)
	}
	for _, g := range regs {
		inMap[g.CgroupID] = g.Entry
	}
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := r.byID[id]
		cg, err := r.o.Cgroups.Open(c.Cgroup)
		live := err == nil && cg.ID == c.CgroupID
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			// Cannot tell: keep it (never drop a possibly live ceiling).
			r.o.Log.Warn("reconcile: cannot check cgroup; keeping", "container", id, "cgroup", c.Cgroup, "err", err)
			rep.Kept = append(rep.Kept, id)
			continue
		}
		switch {
		case !live:
			if err := r.o.Enforcer.Unregister(c.CgroupID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
				r.o.Log.Warn("reconcile: unregister gone cgroup", "container", id, "cgroup_id", c.CgroupID, "err", err)
			}
			delete(r.byID, id)
			delete(r.byCgroup, c.CgroupID)
			rep.Dropped = append(rep.Dropped, id)
		default:
			if _, ok := inMap[c.CgroupID]; ok {
				rep.Kept = append(rep.Kept, id)
				continue
			}
			// Live but missing from the map (pins were removed): install
			// it again, in force now (fail closed).
			// AllowPartial: this ceiling was accepted before; refusing
			// to put it back would leave the cgroup with none at all.
			if err := r.o.Enforcer.Register(cg, enforcer.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, AllowPartial: true}); err != nil {
				r.o.Log.Error("reconcile: cannot re-install ceiling", "container", id, "cgroup", c.Cgroup, "err", err)
				rep.Failed = append(rep.Failed, id)
				continue
			}
			if c.State == state.StatePending {
				c.State, c.PendingDeadline = state.StateActive, nil
				r.byID[id] = c
			}
			rep.Reinstalled = append(rep.Reinstalled, id)
		}
	}
	if !orphans {
		return rep
	}
	var stray []uint64
	for cgid := range inMap {
		if _, ok := r.byCgroup[cgid]; !ok {
			stray = append(stray, cgid)
		}
	}
	if len(stray) == 0 {
		return rep
	}
	live, err := r.o.Cgroups.LiveIDs()
	if err != nil {
		r.o.Log.Warn("reconcile: cannot list live cgroups; leaving unknown map entries", "err", err)
		return rep
	}
	for _, cgid := range stray {
		if live[cgid] {
			continue // a live cgroup enforced by someone else (enforcerd run)
		}
		if err := r.o.Enforcer.Unregister(cgid); err == nil {
			rep.Orphans++
		}
	}
	return rep
}
