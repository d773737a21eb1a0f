package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/internal/failpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// What is true after a crash. Every change is applied map → state file →
// memory, so a daemon killed between the two leaves a kernel entry that
// differs from the state file's: narrower after a narrowing in flight,
// present without a container after a registration in flight, absent
// after an unregistration in flight. At start (Reconcile) the kernel is
// the truth and the state file the intent: every live container takes
// the meet of its kernel entry and its stored entry, field by field
// (meetEntry), written to both, one EventReconciled each; a registration
// in flight is adopted from its intent when the kernel holds its entry
// (adoptIntent); an unregistration in flight is put back from the state
// (Sweep's re-install). Nesting is then settled again from every
// container's session (settleAllLocked), so a descendant is re-derived
// from its ancestors' new ceilings. Nothing in it widens a kernel entry:
// a widening whose client never got an answer may be lost, a narrowing
// never is.

// storedEntry is the map entry a stored container asks for. Pending is
// the stored activation state (pending or frozen: the kernel entry is
// still pending); ExecAllow, ExecInterp and Spec are the state's (the map
// cannot be read back for them).
func storedEntry(c state.Container) entry.Entry {
	en := entry.Entry{
		Ceiling: c.Kernel, AuditOnly: c.AuditOnly,
		Pending:      c.State == state.StatePending || c.State == state.StateFrozen,
		AllowConnect: c.AllowConnect, WriteRoots: writeRootIDs(c.WriteRoots),
		ExecAllow: execAllowIDs(c.ExecAllow), ExecInterp: execAllowIDs(c.ExecInterp), Spec: c.Spec,
	}
	setDeviceFields(&en, c)
	return en
}

// meetEntry is the narrower of two entries of one cgroup, field by field:
// the ceiling's meet; audit-only and pending only when both are; an
// allow list (AllowConnect under network=false, WriteRoots under
// write=false, AllowDevices, Terminals) is what both allow, a side whose
// field is open (network or write allowed) allowing everything;
// DenyConsoleEgress when either denies; ShmDir when both name the same
// directory. The exec allow lists, which the
// map does not give back, and Spec are s's; Entrypoints and AllowPartial
// are k's.
func meetEntry(k, s entry.Entry) entry.Entry {
	m := k
	m.Ceiling = k.Ceiling.Clamp(s.Ceiling)
	m.AuditOnly = k.AuditOnly && s.AuditOnly
	m.Pending = k.Pending && s.Pending
	m.AllowConnect = meetList(k.Ceiling.Network, k.AllowConnect, s.Ceiling.Network, s.AllowConnect, endpointKey)
	m.WriteRoots = meetList(k.Ceiling.Write, k.WriteRoots, s.Ceiling.Write, s.WriteRoots, func(f entry.FileID) entry.FileID { return f })
	if m.Ceiling.Network {
		m.AllowConnect = nil
	}
	if m.Ceiling.Write {
		m.WriteRoots = nil
	}
	m.AllowDevices = meetList(false, k.AllowDevices, false, s.AllowDevices, func(d entry.Device) entry.Device { return d })
	m.Terminals = meetList(false, k.Terminals, false, s.Terminals, func(t entry.Terminal) entry.Terminal { return t })
	m.DenyConsoleEgress = k.DenyConsoleEgress || s.DenyConsoleEgress
	if k.ShmDir != s.ShmDir {
		// Two different directories: neither is known to be the
		// container's; no shm rule (its files are written like any
		// other).
		m.ShmDir = entry.FileID{}
	}
	m.ExecAllow, m.ExecInterp, m.Spec = s.ExecAllow, s.ExecInterp, s.Spec
	return m
}

// meetList is what two allow lists both allow; open says a side allows
// everything (its field is not denied). The elements kept are s's, in
// s's order (they carry what the kernel's lack, e.g. a unix path).
func meetList[T any, K comparable](kOpen bool, k []T, sOpen bool, s []T, key func(T) K) []T {
	switch {
	case kOpen && sOpen:
		return nil
	case kOpen:
		return s
	case sOpen:
		return k
	}
	in := map[K]bool{}
	for _, x := range k {
		in[key(x)] = true
	}
	var out []T
	for _, x := range s {
		if in[key(x)] {
			out = append(out, x)
		}
	}
	return out
}

// endpointKey is an endpoint's identity as the map keeps it (a unix
// endpoint without its path).
func endpointKey(e endpoint.Endpoint) endpoint.Endpoint {
	e.Path = ""
	return e
}

// entryDiff names the fields in which two entries of one cgroup differ
// ("" when none): the ceiling's fields and every allow list.
func entryDiff(a, b entry.Entry) string {
	var d []string
	add := func(differ bool, name string) {
		if differ {
			d = append(d, name)
		}
	}
	add(a.Ceiling.Network != b.Ceiling.Network, "network")
	add(a.Ceiling.Write != b.Ceiling.Write, "write")
	add(a.Ceiling.Shell != b.Ceiling.Shell, "shell")
	add(a.AuditOnly != b.AuditOnly, "audit_only")
	add(a.Pending != b.Pending, "pending")
	add(!sameSet(a.AllowConnect, b.AllowConnect, endpointKey), "allow_connect")
	add(!sameSet(a.WriteRoots, b.WriteRoots, func(f entry.FileID) entry.FileID { return f }), "write_roots")
	add(!sameSet(a.AllowDevices, b.AllowDevices, func(d entry.Device) entry.Device { return d }), "allow_devices")
	add(!sameSet(a.Terminals, b.Terminals, func(t entry.Terminal) entry.Terminal { return t }), "terminals")
	add(a.DenyConsoleEgress != b.DenyConsoleEgress, "deny_console_egress")
	return strings.Join(d, ",")
}

func sameSet[T any, K comparable](a, b []T, key func(T) K) bool {
	ka := make([]K, 0, len(a))
	for _, x := range a {
		ka = append(ka, key(x))
	}
	for _, x := range b {
		if !slices.Contains(ka, key(x)) {
			return false
		}
	}
	for _, k := range ka {
		if !slices.ContainsFunc(b, func(x T) bool { return key(x) == k }) {
			return false
		}
	}
	return true
}

// meetContainer is c narrowed to the meet m of its stored entry and its
// kernel entry k: its session clamped to m's kernel fields and its
// ceiling, kernel ceiling and fingerprint re-derived from it (as a
// narrowing would), its audit-only and allow lists those of m. The returned entry is what the map is to hold: m with the
// re-derived kernel ceiling (never wider than m's).
func (r *Registry) meetContainer(c state.Container, k entry.Entry) (state.Container, entry.Entry) {
	m := meetEntry(k, storedEntry(c))
	nc := c
	if m.Ceiling != c.Kernel {
		nc.Session = c.Session.Clamp(kernelBound(m.Ceiling))
		surf := policy.ResolveSurface(storedRole(c.Role), nc.Session, c.ToolGroups)
		nc.Ceiling, nc.Kernel, nc.Fingerprint = surf.Ceiling, surf.Kernel.Clamp(m.Ceiling), surf.Fingerprint
		m.Ceiling = nc.Kernel
		nc.Unenforced = r.o.Enforcer.CoverageOf(entry.Entry{Ceiling: nc.Kernel, AllowConnect: m.AllowConnect, Spec: c.Spec}).Gaps()
	}
	nc.AuditOnly = m.AuditOnly
	nc.AllowConnect = m.AllowConnect
	nc.WriteRoots = nil
	for _, wr := range c.WriteRoots {
		if slices.Contains(m.WriteRoots, entry.FileID{Dev: wr.Dev, Ino: wr.Ino}) {
			nc.WriteRoots = append(nc.WriteRoots, wr)
		}
	}
	nc.AllowDevices = nil
	for _, d := range c.AllowDevices {
		if slices.Contains(m.AllowDevices, entry.Device{Block: d.Block, Dev: d.Dev()}) {
			nc.AllowDevices = append(nc.AllowDevices, d)
		}
	}
	nc.Terminals = nil
	for _, t := range c.Terminals {
		if slices.Contains(m.Terminals, entry.Terminal{Dev: t.Dev, PtsDev: t.PtsDev}) {
			nc.Terminals = append(nc.Terminals, t)
		}
	}
	nc.DenyConsoleEgress = m.DenyConsoleEgress
	// A pending container whose entry the kernel activated stays pending
	// here: CheckPending records the activation (EventActivatedAtExec).
	if c.State == state.StateKilled {
		m.Pending = false // freezeLocked activates a killed container's entry
	}
	m.AllowPartial = k.AllowPartial || len(r.o.Enforcer.CoverageOf(m).Partial) > 0
	return nc, m
}

// meetAllLocked gives every live container in the map the meet of its
// kernel entry and its stored entry, in the map (first) and in memory
// (the caller saves the state): one EventReconciled, and a warning in
// the log, per container whose entries differed. A container whose entry
// cannot be written keeps the kernel's in the map and the meet in
// memory: never wider than the kernel (Report.Failed). Containers out of
// the map or whose cgroup is gone are Sweep's.
func (r *Registry) meetAllLocked(rep *Report) []Event {
	var evs []Event
	for _, id := range r.sortedIDs() {
		c := r.byID[id]
		k, err := r.o.Enforcer.Lookup(c.CgroupID)
		if err != nil {
			continue
		}
		cg, err := r.o.Cgroups.Open(c.Cgroup)
		if err != nil || cg.ID != c.CgroupID {
			continue
		}
		s := storedEntry(c)
		if s.Pending && !k.Pending {
			// An exec activated it while no daemon ran: not a crash's
			// doing; CheckPending records the activation.
			s.Pending = false
		}
		diff := entryDiff(k, s)
		if diff == "" {
			continue
		}
		nc, m := r.meetContainer(c, k)
		why := fmt.Sprintf("kernel entry (%s) and state file (%s) differed in %s after a restart; both now hold their meet (%s)",
			entrySummary(k), entrySummary(s), diff, entrySummary(m))
		if entryDiff(k, m) != "" {
			if err := r.o.Enforcer.Register(cg, m); err != nil {
				r.o.Log.Error("reconcile: cannot write the meet of the kernel and state entries; the kernel keeps its own", "container", id, "err", err)
				rep.Failed = append(rep.Failed, id)
				// Memory and state take the meet all the same: never
				// wider than the kernel.
			}
			failpoint.Hit("reconcile.map")
		}
		r.byID[id] = nc
		rep.Met = append(rep.Met, id)
		r.o.Log.Warn("reconcile: kernel and state disagreed; kept the meet", "container", id, "fields", diff, "kernel", entrySummary(k), "state", entrySummary(s), "now", entrySummary(m))
		ev := r.event(nc, EventReconciled, why)
		ev.Unenforced = codes(nc.Unenforced)
		evs = append(evs, ev)
	}
	return evs
}

// entrySummary is an entry's ceiling and flags for a log line or record.
func entrySummary(e entry.Entry) string {
	s := e.Ceiling.String()
	if e.AuditOnly {
		s += " audit-only"
	}
	if e.Pending {
		s += " pending"
	}
	if n := len(e.AllowConnect); n > 0 {
		s += fmt.Sprintf(" allow_connect=%d", n)
	}
	if n := len(e.WriteRoots); n > 0 {
		s += fmt.Sprintf(" write_roots=%d", n)
	}
	if n := len(e.AllowDevices); n > 0 {
		s += fmt.Sprintf(" allow_devices=%d", n)
	}
	if n := len(e.Terminals); n > 0 {
		s += fmt.Sprintf(" terminals=%d", n)
	}
	if e.DenyConsoleEgress {
		s += " deny_console_egress"
	}
	return s
}

// adoptIntent settles the registration a crash left in flight (its
// intent, state.SaveIntent, saved before its entry was installed): when
// its live cgroup holds a kernel entry no container owns, it is adopted,
// in the activation state the kernel gives, so it can be managed (POST
// answers 409, DELETE and narrow work), with one EventReconciled; when
// the state has it already (the crash came after its save) nothing
// changes; otherwise it is dropped, and its entry removed when its cgroup
// is gone.
func (r *Registry) adoptIntent(c state.Container, rep *Report) []Event {
	if have, ok := r.byID[c.ID]; ok && have.CgroupID == c.CgroupID {
		return nil
	}
	cg, cerr := r.o.Cgroups.Open(c.Cgroup)
	live := cerr == nil && cg.ID == c.CgroupID
	k, kerr := r.o.Enforcer.Lookup(c.CgroupID)
	_, idTaken := r.byID[c.ID]
	_, cgTaken := r.byCgroup[c.CgroupID]
	if !live || kerr != nil || idTaken || cgTaken {
		if kerr == nil && !live && !cgTaken {
			if err := r.o.Enforcer.Unregister(c.CgroupID); err != nil {
				r.o.Log.Warn("reconcile: remove the entry of a registration in flight whose cgroup is gone", "container", c.ID, "err", err)
			}
		}
		rep.Abandoned = append(rep.Abandoned, c.ID)
		r.o.Log.Warn("reconcile: registration in flight at a crash dropped (the kernel holds no entry for it, or its cgroup is gone)", "container", c.ID, "cgroup", c.Cgroup)
		return nil
	}
	c.State, c.PendingDeadline = state.StateActive, nil
	if k.Pending {
		d := r.o.Now().Add(r.o.PendingDeadline)
		c.State, c.PendingDeadline = state.StatePending, &d
	}
	r.byID[c.ID] = c
	r.byCgroup[c.CgroupID] = c.ID
	rep.Adopted = append(rep.Adopted, c.ID)
	r.o.Log.Warn("reconcile: registration in flight at a crash adopted (the kernel holds its entry)", "container", c.ID, "cgroup", c.Cgroup)
	return []Event{r.event(c, EventReconciled, "registration in flight at a crash adopted: the kernel holds its entry ("+entrySummary(k)+")")}
}

func (r *Registry) sortedIDs() []string {
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
