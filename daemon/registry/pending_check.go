package registry

import (
	"fmt"
	"sort"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
)

// The steps of CheckPending (pending.go): which containers it watches,
// the decision for one, and the adoption records it drops. Callers hold
// r.mu.

// watchedLocked is the ids of the pending and frozen containers, sorted.
func (r *Registry) watchedLocked() []string {
	ids := make([]string, 0, len(r.byID))
	for id, c := range r.byID {
		if c.State == state.StatePending || c.State == state.StateFrozen {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// checkPendingLocked decides for one pending or frozen container c at now
// (see CheckPending) and applies the decision to the kernel and the
// cgroup. It returns c as it is to be recorded and the decision's event;
// ok is false when nothing changed. A container whose map entry is
// missing is left alone: Sweep re-installs it, in force.
func (r *Registry) checkPendingLocked(c state.Container, now time.Time) (state.Container, Event, bool) {
	en, err := r.o.Enforcer.Lookup(c.CgroupID)
	if err != nil {
		return c, Event{}, false
	}
	if !en.Pending {
		return r.activatedAtExec(c)
	}
	if c.State == state.StateFrozen {
		return r.refreezeLocked(c, en)
	}
	if why := r.intruders(c); why != "" {
		return r.activateIntrudedLocked(c, en, why)
	}
	if c.PendingDeadline != nil && !now.Before(*c.PendingDeadline) {
		c, ev := r.freezeLocked(c, en, fmt.Sprintf("no exec in cgroup %s by the pending deadline %s", c.Cgroup, c.PendingDeadline.Format(time.RFC3339)))
		return c, ev, true
	}
	return c, Event{}, false
}

// activatedAtExec records that an exec activated c's map entry: a pending
// c becomes active (EventActivatedAtExec); any other is left as it is
// (ok false).
func (r *Registry) activatedAtExec(c state.Container) (state.Container, Event, bool) {
	if c.State != state.StatePending {
		return c, Event{}, false
	}
	c.State, c.PendingDeadline = state.StateActive, nil
	return c, r.event(c, EventActivatedAtExec, ""), true
}

// refreezeLocked freezes again a frozen container whose cgroup was thawed
// while its entry en is still pending (EventRefrozen, or what
// freezeLocked decided instead). A cgroup still frozen, or gone (Sweep
// drops it), is left alone.
func (r *Registry) refreezeLocked(c state.Container, en entry.Entry) (state.Container, Event, bool) {
	if frozen, err := r.o.Cgroups.Frozen(c.Cgroup); err != nil || frozen {
		return c, Event{}, false
	}
	c, ev := r.freezeLocked(c, en, "the cgroup was thawed while its registration is still pending")
	if ev.Kind == EventFrozen {
		ev.Kind = EventRefrozen
	}
	return c, ev, true
}

// activateIntrudedLocked puts the pending entry en of c in force at once:
// its cgroup holds a process that entered without exec (why, from
// intruders). It is frozen instead when the activation fails. A cgroup
// gone is left alone (Sweep drops it).
func (r *Registry) activateIntrudedLocked(c state.Container, en entry.Entry, why string) (state.Container, Event, bool) {
	if _, err := r.o.Cgroups.Open(c.Cgroup); err != nil {
		return c, Event{}, false
	}
	// The init may have exec'd (the kernel activated the entry) and
	// forked between the caller's lookup and the listing: its children
	// are then no intruders. Activation is monotonic, so an entry still
	// pending now was pending when the processes were listed.
	if cur, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && !cur.Pending {
		return r.activatedAtExec(c)
	}
	active := en
	active.Pending = false
	setDeviceFields(&active, c)
	cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
	if err := r.o.Enforcer.Register(cg, active); err != nil {
		c, ev := r.freezeLocked(c, en, fmt.Sprintf("%s, and activating failed: %v", why, err))
		return c, ev, true
	}
	c.State, c.PendingDeadline = state.StateActive, nil
	c.ActivationReason = why + " (entered after registration without exec)"
	return c, r.event(c, EventActivatedImmediately, c.ActivationReason), true
}

// forgetAdoptedLocked drops the setup processes adopted for containers no
// longer pending (setup.go).
func (r *Registry) forgetAdoptedLocked() {
	for id := range r.adopted {
		if c, ok := r.byID[id]; !ok || c.State != state.StatePending {
			delete(r.adopted, id)
		}
	}
}
