package enforcer_test

// The kernel's denial tally (bpf/tally.h): the first record of each
// distinct denial goes through the ring buffer, every denial is counted,
// and the counts stay exact when the tally map is full and when the ring
// buffer is.

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// socket-flood FAMILY TYPE FIRST K N: N socket() calls, protocols
		// FIRST..FIRST+K-1 in turn (K distinct denials); Out is how many
		// calls were not refused with EPERM.
		"socket-flood": func(r *probe.Result, a []string) {
			var v [5]int
			for i := range v {
				n, err := strconv.Atoi(a[i])
				if !r.Require(err, "socket-flood argument") {
					return
				}
				v[i] = n
			}
			bad := 0
			for i := 0; i < v[4]; i++ {
				fd, err := unix.Socket(v[0], v[1], v[2]+i%v[3])
				if err == nil {
					unix.Close(fd)
				}
				if err != unix.EPERM {
					bad++
				}
			}
			r.Out = strconv.Itoa(bad)
		},
	})
}

// tallyStart rotates the shared tally (counts of earlier tests are dropped)
// and drains the ring buffer, so the test sees only its own denials.
func tallyStart(t *testing.T) (*enforcer.Enforcer, *enforcer.Tally) {
	t.Helper()
	e := kt.Enforcer(t)
	tl, err := e.Tally()
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Rotate(); err != nil {
		t.Fatal(err)
	}
	kt.Records(t, 0)
	tl.Collect()
	return e, tl
}

// tallyEnd rotates and returns the records and summaries of cgroup id cg.
func tallyEnd(t *testing.T, tl *enforcer.Tally, cg uint64) ([]denial.Denial, []denial.Summary) {
	t.Helper()
	if err := tl.Rotate(); err != nil {
		t.Fatal(err)
	}
	recs := kt.Records(t, cg)
	var sums []denial.Summary
	for _, s := range tl.Collect() {
		if s.CeilingCgroupID == cg {
			sums = append(sums, s)
		}
	}
	return recs, sums
}

func floodArgs(first, k, n int) []string {
	return []string{strconv.Itoa(unix.AF_INET), strconv.Itoa(unix.SOCK_DGRAM), strconv.Itoa(first), strconv.Itoa(k), strconv.Itoa(n)}
}

// floodControl: the same socket() calls succeed without the ceiling (a),
// so that the denials below are the ceiling's.
func floodControl(t *testing.T) {
	t.Helper()
	sb := kt.Sandbox(t, "control")
	if r := sb.Probe(t, "socket-flood", floodArgs(0, 1, 3)...); r.Setup != "" || r.Out != "3" {
		t.Fatalf("control: socket(AF_INET, SOCK_DGRAM, 0) x3 without a ceiling: %v, want 3 not refused", r)
	}
}

// N identical denials: one record, one summary counting N.
func TestTallyIdentical(t *testing.T) {
	_, tl := tallyStart(t)
	floodControl(t)
	const n = 20000
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: networkDeny})
	if r := sb.Probe(t, "socket-flood", floodArgs(0, 1, n)...); r.Setup != "" || r.Out != "0" {
		t.Fatalf("flood of %d socket() calls: %v (Out = calls not refused with EPERM)", n, r)
	}
	recs, sums := tallyEnd(t, tl, sb.Cg.ID)
	if len(recs) != 1 {
		t.Fatalf("records: %d, want 1 (the first): %v", len(recs), recs)
	}
	if len(sums) != 1 {
		t.Fatalf("summaries: %+v, want 1", sums)
	}
	s := sums[0]
	if s.Count != n || s.Key != recs[0].Key || s.Overflow || s.Hook != denial.HookSocketCreate || s.Audited {
		t.Errorf("summary %+v (object %s), want count %d, key of the record %+v", s, s.Object, n, recs[0].Key)
	}
	if s.Object.Family != unix.AF_INET || s.Object.SockType != unix.SOCK_DGRAM {
		t.Errorf("summary object %s, want AF_INET SOCK_DGRAM", s.Object)
	}
}

// K distinct denials, each repeated: K records, K summaries with exact
// counts; a second interval starts over with a first record per key.
func TestTallyDistinct(t *testing.T) {
	_, tl := tallyStart(t)
	const k, n = 5, 5003
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: networkDeny})
	for round := 0; round < 2; round++ {
		if r := sb.Probe(t, "socket-flood", floodArgs(0, k, n)...); r.Setup != "" || r.Out != "0" {
			t.Fatalf("round %d: flood: %v", round, r)
		}
		recs, sums := tallyEnd(t, tl, sb.Cg.ID)
		if len(recs) != k || len(sums) != k {
			t.Fatalf("round %d: %d records, %d summaries, want %d each", round, len(recs), len(sums), k)
		}
		first := map[denial.Key]bool{}
		for _, d := range recs {
			first[d.Key] = true
		}
		var total uint64
		for _, s := range sums {
			want := uint64(n / k)
			if int(s.Object.Protocol) < n%k {
				want++
			}
			if s.Count != want || !first[s.Key] {
				t.Errorf("round %d: summary protocol %d: count %d (want %d), first record seen %v", round, s.Object.Protocol, s.Count, want, first[s.Key])
			}
			total += s.Count
		}
		if total != n {
			t.Errorf("round %d: counted %d, want %d", round, total, n)
		}
	}
}

// The tally map full: every denial's record goes to the ring buffer, the
// per-(cgroup, hook) overflow counter counts them all, and records read plus
// records lost (ring buffer reserve failures) add up to them.
func TestTallyOverflow(t *testing.T) {
	e, tl := tallyStart(t)
	const n = 6000 // more records than the 1 MiB ring buffer holds
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: networkDeny})
	filled, err := enforcer.FillTally(e)
	if err != nil {
		t.Fatalf("fill the tally map: %v (%d added)", err, filled)
	}
	lost0, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	if r := sb.Probe(t, "socket-flood", floodArgs(0, 1, n)...); r.Setup != "" || r.Out != "0" {
		t.Fatalf("flood: %v", r)
	}
	lost1, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	recs, sums := tallyEnd(t, tl, sb.Cg.ID)
	if len(sums) != 1 || !sums[0].Overflow || sums[0].Count != n || sums[0].Hook != denial.HookSocketCreate {
		t.Fatalf("summaries %+v, want one overflow summary of socket_create counting %d", sums, n)
	}
	lost := lost1 - lost0
	t.Logf("tally map filled with %d keys; %d records read, %d lost", filled, len(recs), lost)
	if uint64(len(recs))+lost != n || lost == 0 {
		t.Errorf("records read %d + lost %d, want %d with some lost", len(recs), lost, n)
	}
}

// The ring buffer full while the tally has room: first records are lost
// (counted), their denials are all in the summaries.
func TestTallyLostFirstRecords(t *testing.T) {
	e, tl := tallyStart(t)
	const k = 4000 // distinct denials: more first records than the ring holds
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: networkDeny})
	lost0, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	if r := sb.Probe(t, "socket-flood", floodArgs(1000, k, 2*k)...); r.Setup != "" || r.Out != "0" {
		t.Fatalf("flood: %v", r)
	}
	lost1, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	recs, sums := tallyEnd(t, tl, sb.Cg.ID)
	lost := lost1 - lost0
	t.Logf("%d records read, %d lost, %d summaries", len(recs), lost, len(sums))
	if uint64(len(recs))+lost != k || lost == 0 {
		t.Errorf("records read %d + lost %d, want %d with some lost", len(recs), lost, k)
	}
	var total uint64
	for _, s := range sums {
		if s.Overflow || s.Count != 2 {
			t.Errorf("summary %+v, want count 2", s)
		}
		total += s.Count
	}
	if len(sums) != k || total != 2*k {
		t.Errorf("%d summaries counting %d, want %d counting %d", len(sums), total, k, 2*k)
	}
}
