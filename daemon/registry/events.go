package registry

import (
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// Event kinds.
const (
	// EventActivatedAtExec: a pending ceiling was activated by the first
	// exec in its cgroup (the normal path).
	EventActivatedAtExec = "activated_at_exec"
	// EventActivatedImmediately: a registration that asked for activation
	// at exec was put in force without an exec, because its cgroup held
	// (or later gained) a process other than the runtime's init.
	EventActivatedImmediately = "activated_immediately"
	// EventFrozen: the pending deadline passed; the cgroup was frozen.
	EventFrozen = "frozen"
	// EventKilled: the pending deadline passed and freezing failed; the
	// cgroup's processes were killed.
	EventKilled = "killed"
	// EventRefrozen: a frozen pending cgroup was found thawed and was
	// frozen again.
	EventRefrozen = "refrozen"
	// EventRegistered: a registration was made; Event.Unenforced lists
	// what the host does not enforce of its ceiling (partial coverage).
	EventRegistered = "registered"
	// EventNarrowed: a registration's ceiling was narrowed.
	EventNarrowed = "narrowed"
	// EventReconciled: at start, a container's kernel entry and its
	// state file entry differed (a crash between the two writes) and both
	// now hold their meet, or a registration in flight at a crash was
	// adopted; Reason says what differed.
	EventReconciled = "reconciled"
)

// Event is one activation or freeze decision about a container.
type Event struct {
	Time        time.Time
	Kind        string // one of the Event* kinds
	Container   string
	Cgroup      string
	CgroupID    uint64
	Fingerprint string
	Reason      string
	// Unenforced are the codes of the ceiling's coverage gaps
	// (EventRegistered, EventNarrowed).
	Unenforced []string
}

// registeredReason is the Reason of an EventRegistered or EventNarrowed
// record: the kernel ceiling, and what of it is not enforced.
func registeredReason(c state.Container) string {
	s := "kernel " + c.Kernel.String()
	if len(c.Unenforced) > 0 {
		s += "; NOT ENFORCED: " + strings.Join(codes(c.Unenforced), ", ")
	}
	return s
}

func codes(gs []coverage.Gap) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Code)
	}
	return out
}

func (r *Registry) event(c state.Container, kind, reason string) Event {
	return Event{Time: r.o.Now().UTC(), Kind: kind, Container: c.ID, Cgroup: c.Cgroup, CgroupID: c.CgroupID,
		Fingerprint: c.Fingerprint, Reason: reason}
}

func (r *Registry) emit(evs []Event) {
	if r.o.OnEvent == nil {
		return
	}
	for _, e := range evs {
		r.o.OnEvent(e)
	}
}
