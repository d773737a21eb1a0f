package registry

import (
	"fmt"
	"sort"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
)

// intruders returns why the pending registration c must not stay pending:
// its cgroup subtree holds a process other than its runtime init (same pid
// and start time) and its expected setup processes (isSetupProcess), or
// its processes cannot be listed (fail closed). "" when only those (or
// nothing) are there.
func (r *Registry) intruders(c state.Container) string {
	pids, err := r.o.Cgroups.Procs(c.Cgroup)
	if err != nil {
		return fmt.Sprintf("cannot list the processes of cgroup %s: %v", c.Cgroup, err)
	}
	var others []int
	for _, pid := range pids {
		if c.InitPID > 0 && pid == c.InitPID {
			if st, err := r.o.StartTime(pid); err == nil && st == c.InitStart {
				continue
			}
		}
		if r.setupOrExecing(c, pid) {
			continue
		}
		others = append(others, pid)
	}
	if len(others) == 0 {
		return ""
	}
	sort.Ints(others)
	if len(others) > 8 {
		others = others[:8]
	}
	if c.InitPID > 0 {
		return fmt.Sprintf("cgroup %s holds processes other than the runtime init %d: %v", c.Cgroup, c.InitPID, others)
	}
	return fmt.Sprintf("cgroup %s already holds processes (%v) and no runtime init was named", c.Cgroup, others)
}

// live is c with State read from the map for a pending registration (an
// exec may have activated it since CheckPending last looked).
func (r *Registry) live(c state.Container) state.Container {
	if c.State != state.StatePending {
		return c
	}
	if en, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && !en.Pending {
		c.State, c.PendingDeadline = state.StateActive, nil
	}
	return c
}

// rebaseDeadlinesLocked puts every pending deadline that has no monotonic
// clock reading (read from the state file, or computed from a clock
// without one) on now's clock: what was left of it by the wall clock, at
// most Options.PendingDeadline, from now. A deadline the wall
// clock would put further away than a whole pending deadline (the clock
// was stepped back while the daemon was down) is cut to one; one in the
// past stays passed. Only the in-memory value changes (the file's wall
// time is rewritten with the next save). Callers hold r.mu.
func (r *Registry) rebaseDeadlinesLocked(now time.Time) {
	for id, c := range r.byID {
		if c.State != state.StatePending || c.PendingDeadline == nil {
			continue
		}
		if d := rebaseDeadline(*c.PendingDeadline, now, r.o.PendingDeadline); !d.Equal(*c.PendingDeadline) || hasMonotonic(d) != hasMonotonic(*c.PendingDeadline) {
			c.PendingDeadline = &d
			r.byID[id] = c
		}
	}
}

// rebaseDeadline is d on now's clock (see rebaseDeadlinesLocked); d
// itself when it has a monotonic reading.
func rebaseDeadline(d, now time.Time, max time.Duration) time.Time {
	if hasMonotonic(d) {
		return d
	}
	left := min(max, d.Sub(now)) // d has no monotonic reading: wall clocks
	return now.Add(left)
}

// hasMonotonic reports whether t carries Go's monotonic clock reading
// (Round(0) strips it and changes nothing else).
func hasMonotonic(t time.Time) bool { return t != t.Round(0) }

// CheckPending watches pending registrations; the daemon calls it every
// pending check interval with the current time. For each pending
// container: an exec has activated it (the map entry is no longer
// pending) → active; its cgroup subtree holds a process other than the
// runtime init (one that entered without exec, e.g. by clone3
// CLONE_INTO_CGROUP or a write to cgroup.procs) → activated at once; its
// deadline has passed → the cgroup is frozen, or killed when freezing
// fails (it is never activated mid-setup, and never left open). A frozen
// container whose cgroup was thawed while still pending is frozen again.
// Changes are persisted; errors saving them are returned with the events
// (the decisions themselves are already applied to the kernel). The
// decision for one container is checkPendingLocked (pending_check.go).
func (r *Registry) CheckPending() ([]Event, error) {
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.o.Now()
	changed := false
	r.rebaseDeadlinesLocked(now)
	for _, id := range r.watchedLocked() {
		if c, ev, ok := r.checkPendingLocked(r.byID[id], now); ok {
			evs = append(evs, ev)
			r.byID[id], changed = c, true
		}
	}
	r.forgetAdoptedLocked()
	if !changed {
		return evs, nil
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, "")); err != nil {
		return evs, fmt.Errorf("pending check: %w", err)
	}
	return evs, nil
}

// freezeLocked stops a pending container that must not run on unenforced:
// freeze its cgroup; if that fails, kill its processes; if that fails too,
// activate the ceiling (fail closed: setup may break, nothing runs open).
// An exec that activated the entry while the freeze was under way wins:
// the cgroup is thawed and the container is active.
func (r *Registry) freezeLocked(c state.Container, en entry.Entry, why string) (state.Container, Event) {
	ferr := r.o.Cgroups.Freeze(c.Cgroup)
	if ferr == nil {
		if now, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && !now.Pending {
			if err := r.o.Cgroups.Thaw(c.Cgroup); err != nil {
				r.o.Log.Error("thaw of a container activated while freezing", "container", c.ID, "cgroup", c.Cgroup, "err", err)
			}
			c.State, c.PendingDeadline = state.StateActive, nil
			return c, r.event(c, EventActivatedAtExec, "")
		}
		c.State, c.PendingDeadline, c.ActivationReason = state.StateFrozen, nil, why
		r.o.Log.Warn("pending registration frozen", "container", c.ID, "cgroup", c.Cgroup, "reason", why)
		return c, r.event(c, EventFrozen, why)
	}
	active := en
	active.Pending = false
	setDeviceFields(&active, c)
	cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
	kerr := r.o.Cgroups.Kill(c.Cgroup)
	if kerr == nil {
		// Nothing is left to set up: whatever enters later is enforced.
		if err := r.o.Enforcer.Register(cg, active); err != nil {
			r.o.Log.Error("activate a killed pending registration", "container", c.ID, "cgroup", c.Cgroup, "err", err)
		}
		why = fmt.Sprintf("%s; freezing failed: %v", why, ferr)
		c.State, c.PendingDeadline, c.ActivationReason = state.StateKilled, nil, why
		r.o.Log.Error("pending registration killed", "container", c.ID, "cgroup", c.Cgroup, "reason", why)
		return c, r.event(c, EventKilled, why)
	}
	why = fmt.Sprintf("%s; freezing failed: %v; killing failed: %v", why, ferr, kerr)
	if err := r.o.Enforcer.Register(cg, active); err != nil {
		r.o.Log.Error("pending registration could be neither frozen, killed nor activated", "container", c.ID, "cgroup", c.Cgroup, "reason", why, "err", err)
		return c, r.event(c, EventActivatedImmediately, why+"; activating failed: "+err.Error())
	}
	c.State, c.PendingDeadline, c.ActivationReason = state.StateActive, nil, why
	r.o.Log.Error("pending registration activated: freezing and killing failed", "container", c.ID, "cgroup", c.Cgroup, "reason", why)
	return c, r.event(c, EventActivatedImmediately, why)
}
