package daemon

import "github.com/enforcerd/enforcerd/denial"

// maxEmitted bounds the denial records one summary pass remembers by
// distinct denial (emittedRecords.add).
const maxEmitted = 65536

// overflowID is what an overflow summary counts by (enforcer's overflow
// key): the registered cgroup, the hook, audit-only or not, the deny bit.
type overflowID struct {
	cgroup  uint64
	hook    denial.Hook
	audited bool
	denyBit uint32
}

// emittedRecords are the denial records the daemon read, by distinct
// denial, until a summary covers them: a summary record then counts only
// the denials not emitted on their own (Summary.Count minus its records),
// and is written only when that is at least one. The kernel's exact cut
// (Tally.Rotate) comes before the ring buffer is read to its end, so a
// record read in one pass may be the first of the next interval: records
// no summary covered are carried to the next pass once, then dropped.
type emittedRecords struct {
	cur, carried map[denial.Key]uint64
	// ids are the overflowIDs of the keys in cur and carried.
	ids map[denial.Key]overflowID
	// byOverflow indexes cur and carried by overflowID, built at the
	// pass's first overflow summary (they come after the others).
	byOverflow map[overflowID][]denial.Key
}

func newEmittedRecords() *emittedRecords {
	return &emittedRecords{cur: map[denial.Key]uint64{}, carried: map[denial.Key]uint64{}, ids: map[denial.Key]overflowID{}}
}

// add remembers record d (up to maxEmitted distinct denials a pass;
// past that a record is not subtracted from its summary).
func (e *emittedRecords) add(d denial.Denial) {
	if _, ok := e.cur[d.Key]; ok || len(e.cur) < maxEmitted {
		e.cur[d.Key]++
		e.ids[d.Key] = overflowID{cgroup: d.CeilingCgroupID, hook: d.Hook, audited: d.Audited, denyBit: d.Key.DenyBit}
	}
}

// unemitted is the number of s's denials no record read stands for (0:
// its summary would repeat its records), taking the records it covers:
// those of its distinct denial, or for an overflow summary those of its
// cgroup, hook, decision and deny bit that no other summary took.
func (e *emittedRecords) unemitted(s denial.Summary) uint64 {
	left := s.Count
	if !s.Overflow {
		left -= e.take(e.carried, s.Key, left)
		return left - e.take(e.cur, s.Key, left)
	}
	if e.byOverflow == nil {
		e.byOverflow = map[overflowID][]denial.Key{}
		for k, id := range e.ids {
			e.byOverflow[id] = append(e.byOverflow[id], k)
		}
	}
	id := overflowID{cgroup: s.CeilingCgroupID, hook: s.Hook, audited: s.Audited, denyBit: s.Key.DenyBit}
	for _, k := range e.byOverflow[id] {
		left -= e.take(e.carried, k, left)
		left -= e.take(e.cur, k, left)
	}
	return left
}

// take removes up to n records of k from m and returns how many.
func (e *emittedRecords) take(m map[denial.Key]uint64, k denial.Key, n uint64) uint64 {
	got := min(m[k], n)
	if m[k] -= got; m[k] == 0 {
		delete(m, k)
	}
	return got
}

// endPass carries the records of this pass no summary covered to the
// next one, and drops those carried into this one.
func (e *emittedRecords) endPass() {
	e.carried, e.cur, e.byOverflow = e.cur, map[denial.Key]uint64{}, nil
	for k := range e.ids {
		if _, ok := e.carried[k]; !ok {
			delete(e.ids, k)
		}
	}
}
