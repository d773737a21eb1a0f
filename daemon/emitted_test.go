package daemon

import (
	"testing"

	"github.com/enforcerd/enforcerd/denial"
)

// TestEmittedRecords: a summary counts only the denials no record read
// stands for, so records plus summary counts add up to the kernel's count
// and a single denial sent as a record gets no summary: per distinct
// denial, for an overflow summary by its cgroup, hook, decision and deny
// bit, with a record read after the cut carried to the next pass once.
func TestEmittedRecords(t *testing.T) {
	rec := func(cg uint64, obj uint64) denial.Denial {
		return denial.Denial{CeilingCgroupID: cg, Hook: denial.HookSocketCreate, Key: denial.Key{CeilingCgroupId: cg, ObjectId: obj, Hook: uint16(denial.HookSocketCreate), DenyBit: 1}}
	}
	sum := func(d denial.Denial, n uint64) denial.Summary {
		return denial.Summary{Key: d.Key, CeilingCgroupID: d.CeilingCgroupID, Hook: d.Hook, Count: n}
	}
	ovf := func(cg, n uint64) denial.Summary {
		return denial.Summary{Key: denial.Key{DenyBit: 1}, CeilingCgroupID: cg, Hook: denial.HookSocketCreate, Overflow: true, Count: n}
	}
	type step struct {
		records []denial.Denial
		sums    []denial.Summary
		want    []uint64 // unemitted per summary
	}
	a, b, c := rec(7, 1), rec(7, 2), rec(8, 1)
	for name, steps := range map[string][]step{
		"one denial, one record: no summary":  {{[]denial.Denial{a}, []denial.Summary{sum(a, 1)}, []uint64{0}}},
		"flood: the rest":                     {{[]denial.Denial{a}, []denial.Summary{sum(a, 1000)}, []uint64{999}}},
		"record lost: counted":                {{nil, []denial.Summary{sum(a, 3)}, []uint64{3}}},
		"other keys untouched":                {{[]denial.Denial{a, b}, []denial.Summary{sum(a, 2), sum(c, 2)}, []uint64{1, 2}}},
		"overflow takes its cgroup's records": {{[]denial.Denial{b, b, c}, []denial.Summary{ovf(7, 5), ovf(8, 1)}, []uint64{3, 0}}},
		"distinct summary before overflow":    {{[]denial.Denial{a, b, b}, []denial.Summary{sum(a, 1), ovf(7, 2)}, []uint64{0, 0}}},
		"record after the cut carried once": {
			{[]denial.Denial{a, a}, []denial.Summary{sum(a, 1)}, []uint64{0}},
			{nil, []denial.Summary{sum(a, 4)}, []uint64{3}},
		},
		"carried only once": {
			{[]denial.Denial{b}, nil, nil},
			{nil, nil, nil},
			{nil, []denial.Summary{sum(b, 1)}, []uint64{1}},
		},
	} {
		e := newEmittedRecords()
		for i, st := range steps {
			for _, r := range st.records {
				e.add(r)
			}
			for j, s := range st.sums {
				if got := e.unemitted(s); got != st.want[j] {
					t.Errorf("%s: pass %d, summary %d: %d unemitted, want %d", name, i, j, got, st.want[j])
				}
			}
			e.endPass()
		}
	}
}
