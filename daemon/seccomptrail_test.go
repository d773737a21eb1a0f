package daemon

import (
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
)

// TestSeccompTrailSummaries: the first denial of a distinct denial
// (ceiling cgroup, hook, rule) in an interval is written, the others are
// one summary with their count at the interval's end; a distinct denial
// met once has no summary, and the next interval starts afresh.
func TestSeccompTrailSummaries(t *testing.T) {
	var got []audit.Record
	s := &seccompTrail{write: func(r audit.Record) { got = append(got, r) }, since: time.Unix(100, 0), counts: map[seccompKey]*seccompCount{}}
	rec := func(ceiling uint64, hook string, pid uint32) audit.Record {
		return audit.Record{Type: audit.TypeDenial, CeilingCgroupID: ceiling, CgroupID: ceiling + 1, Hook: hook, Rule: "write", PID: pid, Comm: "x", Exe: "/x"}
	}
	for i, r := range []audit.Record{rec(7, "seccomp:fchmodat", 1), rec(7, "seccomp:fchmodat", 2), rec(7, "seccomp:fchmodat", 3), rec(7, "seccomp:socket", 4), rec(8, "seccomp:fchmodat", 5)} {
		if first := s.count(r); first != (i == 0 || i >= 3) {
			t.Errorf("record %d: first %v", i, first)
		}
	}
	s.summarize(time.Unix(101, 0))
	if len(got) != 1 {
		t.Fatalf("summaries: %+v", got)
	}
	sum := got[0]
	if sum.Type != audit.TypeSummary || sum.Count != 2 || sum.CeilingCgroupID != 7 || sum.Hook != "seccomp:fchmodat" ||
		sum.PID != 0 || sum.CgroupID != 0 || sum.Comm != "" || sum.Exe != "" ||
		sum.Since != time.Unix(100, 0).UTC().Format(time.RFC3339Nano) || sum.Time != time.Unix(101, 0).UTC().Format(time.RFC3339Nano) {
		t.Errorf("summary %+v", sum)
	}
	if !s.count(rec(7, "seccomp:fchmodat", 9)) {
		t.Error("the next interval's first denial is not written")
	}
}
