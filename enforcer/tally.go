package enforcer

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
)

// DenialKey identifies a distinct denial: the registered cgroup whose
// ceiling decided, the hook, decision and deny bit, and the object (for
// files also a hash of the recorded path components). The acting process is
// not part of it. It is struct tally_key of bpf/tally.h: the kernel counts
// denials per key (Tally) and sends only the first record of each key per
// summary interval through the ring buffer.
type DenialKey bpf.SharedTallyKey

// overflowKey is struct tally_overflow_key of bpf/tally.h.
type overflowKey bpf.SharedTallyOverflowKey

// Summary is the exact number of denials of one distinct denial (or, when
// Overflow, of one registered cgroup and hook whose distinct denials the
// tally map had no room for) in [Since, Until).
type Summary struct {
	Key             DenialKey // zero when Overflow
	CeilingCgroupID uint64    // the registered cgroup whose ceiling decided
	Hook            Hook
	Audited         bool          // audit-only: the operations were allowed
	Errno           syscall.Errno // returned to the processes (0 when audited)
	Field           string        // as Denial.Field
	Rule            Rule          // as Denial.Rule
	operation       string        // as Denial.operation
	// Object is what the denials targeted, from the key: no Path (the key
	// holds a hash of it; the first record of the key has it). Kind
	// ObjectNone when Overflow.
	Object Object
	// Overflow: the tally map was full; Count covers every denial of
	// CeilingCgroupID at Hook (with this decision and field) not counted
	// per distinct denial. Their records went through the ring buffer.
	Overflow bool
	Count    uint64
	Since    time.Time // the tally map was installed (or this Tally began)
	Until    time.Time // it was swapped out
}

// Operation is what was attempted, as Denial.Operation.
func (s Summary) Operation() string {
	if s.operation != "" {
		return s.operation
	}
	return s.Hook.Operation()
}

// Decision is "denied" or "audited".
func (s Summary) Decision() string {
	if s.Audited {
		return "audited"
	}
	return "denied"
}

// Tally reads the kernel's denial counts (bpf/tally.h). Rotate swaps fresh
// count maps in and reads the old ones, whose counts are final (the kernel
// waits for every program that may still use them before the swap
// returns); Collect hands out what Rotate read. One process rotates at a
// time (the daemon): two would split the counts between them.
type Tally struct {
	mu            sync.Mutex
	slot, ovfSlot *ebpf.Map
	spec, ovfSpec *ebpf.MapSpec
	since         time.Time
	pending       map[summaryID]*Summary
}

type summaryID struct {
	key DenialKey
	ovf overflowKey
}

// Tally returns the reader of the kernel's denial counts. Errors: the
// shared tally maps are missing (an Enforcer from Open always has them).
func (e *Enforcer) Tally() (*Tally, error) {
	if e.tallySlot == nil || e.tallyOvfSlot == nil {
		return nil, errors.New("tally maps missing")
	}
	return &Tally{slot: e.tallySlot, ovfSlot: e.tallyOvfSlot, spec: e.tallySpec, ovfSpec: e.tallyOvfSpec,
		since: time.Now(), pending: map[summaryID]*Summary{}}, nil
}

// openTally keeps the shared tally slots and installs count maps in the
// empty ones (a first Open, or an upgrade from a build without them), so
// that the programs count every denial from now on.
func (e *Enforcer) openTally(spec *ebpf.CollectionSpec) error {
	e.tallySlot, e.tallyOvfSlot = e.shared[bpf.SharedMapTallySlot], e.shared[bpf.SharedMapTallyOverflowSlot]
	for _, s := range []struct {
		slot *ebpf.Map
		spec **ebpf.MapSpec
		name string
	}{{e.tallySlot, &e.tallySpec, bpf.SharedMapTallySlot}, {e.tallyOvfSlot, &e.tallyOvfSpec, bpf.SharedMapTallyOverflowSlot}} {
		ms := spec.Maps[s.name]
		if s.slot == nil || ms == nil || ms.InnerMap == nil {
			return fmt.Errorf("map %s: no inner map spec", s.name)
		}
		*s.spec = ms.InnerMap
		var id uint32
		err := s.slot.Lookup(uint32(0), &id)
		if err == nil {
			continue
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("read %s: %w", s.name, err)
		}
		m, err := ebpf.NewMap(ms.InnerMap)
		if err != nil {
			return fmt.Errorf("create %s map: %w", s.name, err)
		}
		// Array slots take BPF_ANY only; two Opens racing here install
		// one empty map over another.
		err = s.slot.Update(uint32(0), m, ebpf.UpdateAny)
		m.Close()
		if err != nil {
			return fmt.Errorf("install %s map: %w", s.name, err)
		}
	}
	return nil
}

// swap installs a fresh map from spec in slot and returns the one it
// replaced (nil when the slot was empty).
func swap(slot *ebpf.Map, spec *ebpf.MapSpec) (*ebpf.Map, error) {
	var old *ebpf.Map
	if err := slot.Lookup(uint32(0), &old); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil, err
	}
	fresh, err := ebpf.NewMap(spec)
	if err != nil {
		old.Close()
		return nil, err
	}
	defer fresh.Close() // the slot holds it
	if err := slot.Update(uint32(0), fresh, ebpf.UpdateAny); err != nil {
		old.Close()
		return nil, err
	}
	return old, nil
}

// Rotate swaps fresh count maps in and adds the counts of the old ones to
// what Collect returns. When it returns, every record of a denial counted
// in the old maps is in the ring buffer (or counted lost): read the ring
// buffer to its end (Reader.Flush) before Collect, and each summary comes
// after the first record of its key. Errors: a map could not be created,
// swapped or read (the counts stay where they are, for the next Rotate).
func (t *Tally) Rotate() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, err := swap(t.slot, t.spec)
	if err != nil {
		return fmt.Errorf("swap tally map: %w", err)
	}
	oldOvf, err := swap(t.ovfSlot, t.ovfSpec)
	if err != nil {
		old.Close()
		return fmt.Errorf("swap tally overflow map: %w", err)
	}
	defer old.Close()
	defer oldOvf.Close()
	now := time.Now()
	var read []Summary
	if old != nil {
		var k bpf.SharedTallyKey
		var n uint64
		it := old.Iterate()
		for it.Next(&k, &n) {
			read = append(read, summaryOf(DenialKey(k), n))
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("read tally map: %w", err)
		}
	}
	if oldOvf != nil {
		var k bpf.SharedTallyOverflowKey
		var n uint64
		it := oldOvf.Iterate()
		for it.Next(&k, &n) {
			read = append(read, overflowSummary(overflowKey(k), n))
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("read tally overflow map: %w", err)
		}
	}
	for i := range read {
		read[i].Since, read[i].Until = t.since, now
	}
	merge(t.pending, read)
	t.since = now
	return nil
}

// Collect returns the summaries Rotate read since the last Collect, merged
// per key (counts added, the earliest Since, the latest Until), ordered by
// cgroup, hook and key; nil when there are none.
func (t *Tally) Collect() []Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	out := make([]Summary, 0, len(t.pending))
	for _, s := range t.pending {
		out = append(out, *s)
	}
	t.pending = map[summaryID]*Summary{}
	sortSummaries(out)
	return out
}

// merge adds summaries to pending: the counts of equal keys add up.
func merge(pending map[summaryID]*Summary, read []Summary) {
	for _, s := range read {
		id := s.id()
		p, ok := pending[id]
		if !ok {
			c := s
			pending[id] = &c
			continue
		}
		p.Count += s.Count
		if s.Since.Before(p.Since) {
			p.Since = s.Since
		}
		if s.Until.After(p.Until) {
			p.Until = s.Until
		}
	}
}

func (s Summary) id() summaryID {
	if s.Overflow {
		return summaryID{ovf: overflowKey{CeilingCgroupId: s.CeilingCgroupID, Hook: uint16(s.Hook), Decision: decisionOf(s.Audited), DenyBit: s.Key.DenyBit}}
	}
	return summaryID{key: s.Key}
}

func decisionOf(audited bool) uint16 {
	if audited {
		return uint16(bpf.SharedDecisionDECISION_AUDITED)
	}
	return uint16(bpf.SharedDecisionDECISION_DENIED)
}

func sortSummaries(s []Summary) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.CeilingCgroupID != b.CeilingCgroupID {
			return a.CeilingCgroupID < b.CeilingCgroupID
		}
		if a.Hook != b.Hook {
			return a.Hook < b.Hook
		}
		if a.Overflow != b.Overflow {
			return !a.Overflow
		}
		return fmt.Sprint(a.Key) < fmt.Sprint(b.Key)
	})
}

// summaryOf decodes a tally map entry.
func summaryOf(k DenialKey, n uint64) Summary {
	s := Summary{
		Key: k, CeilingCgroupID: k.CeilingCgroupId, Hook: Hook(k.Hook),
		Audited: k.Decision == uint16(bpf.SharedDecisionDECISION_AUDITED),
		Field:   fieldOf(k.DenyBit), Count: n,
		Object: objectOf(ObjectKind(k.ObjectKind), k.Dev, k.ObjectId, 0, k.Family, k.SockType, k.Protocol, k.Port, k.Addr),
	}
	s.Rule, s.operation = ruleOf(s.Hook, k.DenyBit)
	if !s.Audited {
		s.Errno = syscall.EPERM
	}
	return s
}

// overflowSummary decodes a tally overflow map entry. The deny bit is kept
// in Key.DenyBit (the rest of Key is zero).
func overflowSummary(k overflowKey, n uint64) Summary {
	s := Summary{
		Key: DenialKey{DenyBit: k.DenyBit}, CeilingCgroupID: k.CeilingCgroupId, Hook: Hook(k.Hook),
		Audited: k.Decision == uint16(bpf.SharedDecisionDECISION_AUDITED),
		Field:   fieldOf(k.DenyBit), Overflow: true, Count: n,
	}
	s.Rule, s.operation = ruleOf(s.Hook, k.DenyBit)
	if !s.Audited {
		s.Errno = syscall.EPERM
	}
	return s
}

// UnattributedDenials is the number of denials counted in no tally map (it
// and its overflow map were full, or a CPU had no free scratch record):
// exact, but of no container. The denials themselves were enforced.
func (e *Enforcer) UnattributedDenials() (uint64, error) {
	return e.stat(bpf.SharedStatIndexSTAT_UNATTRIBUTED)
}
