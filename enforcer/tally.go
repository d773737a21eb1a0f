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
	"github.com/enforcerd/enforcerd/denial"
)

// keyOfTally is the denial.Key of a tally map key (the same fields).
func keyOfTally(k bpf.SharedTallyKey) denial.Key {
	return denial.Key{
		CeilingCgroupId: k.CeilingCgroupId, ObjectId: k.ObjectId, NamesHash: k.NamesHash, Dev: k.Dev,
		Hook: k.Hook, Decision: k.Decision, DenyBit: k.DenyBit, ObjectKind: k.ObjectKind,
		SockType: k.SockType, Protocol: k.Protocol, Family: k.Family, Port: k.Port, Pad: k.Pad, Addr: k.Addr,
	}
}

// overflowKey is struct tally_overflow_key of bpf/tally.h.
type overflowKey bpf.SharedTallyOverflowKey

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
	pending       map[summaryID]*denial.Summary
}

type summaryID struct {
	key denial.Key
	ovf overflowKey
}

// Tally returns the reader of the kernel's denial counts. Errors: the
// shared tally maps are missing (an Enforcer from Open always has them).
func (e *Enforcer) Tally() (*Tally, error) {
	if e.tallySlot == nil || e.tallyOvfSlot == nil {
		return nil, errors.New("tally maps missing")
	}
	return &Tally{slot: e.tallySlot, ovfSlot: e.tallyOvfSlot, spec: e.tallySpec, ovfSpec: e.tallyOvfSpec,
		since: time.Now(), pending: map[summaryID]*denial.Summary{}}, nil
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
	var read []denial.Summary
	if old != nil {
		var k bpf.SharedTallyKey
		var n uint64
		it := old.Iterate()
		for it.Next(&k, &n) {
			read = append(read, summaryOf(keyOfTally(k), n))
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
func (t *Tally) Collect() []denial.Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return nil
	}
	out := make([]denial.Summary, 0, len(t.pending))
	for _, s := range t.pending {
		out = append(out, *s)
	}
	t.pending = map[summaryID]*denial.Summary{}
	sortSummaries(out)
	return out
}

// merge adds summaries to pending: the counts of equal keys add up.
func merge(pending map[summaryID]*denial.Summary, read []denial.Summary) {
	for _, s := range read {
		id := idOf(s)
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

// idOf is the pending key of s: its Key, or for an overflow summary its
// overflow key.
func idOf(s denial.Summary) summaryID {
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

func sortSummaries(s []denial.Summary) {
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
func summaryOf(k denial.Key, n uint64) denial.Summary {
	s := denial.Summary{
		Key: k, CeilingCgroupID: k.CeilingCgroupId, Hook: denial.Hook(k.Hook),
		Audited: k.Decision == uint16(bpf.SharedDecisionDECISION_AUDITED),
		Field:   fieldOf(k.DenyBit), Count: n,
		Object: objectOf(denial.ObjectKind(k.ObjectKind), k.Dev, k.ObjectId, 0, k.Family, k.SockType, k.Protocol, k.Port, k.Addr),
	}
	s.Rule = ruleOf(s.Hook, k.DenyBit)
	if !s.Audited {
		s.Errno = syscall.EPERM
	}
	return s
}

// overflowSummary decodes a tally overflow map entry. The deny bit is kept
// in Key.DenyBit (the rest of Key is zero).
func overflowSummary(k overflowKey, n uint64) denial.Summary {
	s := denial.Summary{
		Key: denial.Key{DenyBit: k.DenyBit}, CeilingCgroupID: k.CeilingCgroupId, Hook: denial.Hook(k.Hook),
		Audited: k.Decision == uint16(bpf.SharedDecisionDECISION_AUDITED),
		Field:   fieldOf(k.DenyBit), Overflow: true, Count: n,
	}
	s.Rule = ruleOf(s.Hook, k.DenyBit)
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
