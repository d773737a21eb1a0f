package enforcer

import (
	"bytes"
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/denial"
)

func TestSummaryOfSocket(t *testing.T) {
	k := denial.Key{CeilingCgroupId: 7, Hook: uint16(denial.HookSocketConnect), Decision: uint16(bpf.SharedDecisionDECISION_DENIED),
		DenyBit: denyNetwork, ObjectKind: uint32(denial.ObjectSocket), Family: unix.AF_INET, SockType: unix.SOCK_STREAM, Port: 443,
		Addr: [16]uint8{10, 0, 0, 1}}
	s := summaryOf(k, 42)
	if s.Count != 42 || s.CeilingCgroupID != 7 || s.Field != "network" || s.Errno != syscall.EPERM || s.Audited || s.Overflow {
		t.Errorf("summary %+v", s)
	}
	if got, want := s.Object.String(), "AF_INET SOCK_STREAM 10.0.0.1:443"; got != want {
		t.Errorf("object %q, want %q", got, want)
	}
	if s.Operation() != "connect" || s.Decision() != "denied" {
		t.Errorf("operation %q decision %q", s.Operation(), s.Decision())
	}
}

func TestSummaryOfFileAndOverflow(t *testing.T) {
	k := denial.Key{CeilingCgroupId: 9, Hook: uint16(denial.HookFileOpen), Decision: uint16(bpf.SharedDecisionDECISION_AUDITED),
		DenyBit: denyWrite, ObjectKind: uint32(denial.ObjectFile), Dev: 8<<20 | 1, ObjectId: 1234}
	s := summaryOf(k, 1)
	if !s.Audited || s.Errno != 0 || s.Object.Ino != 1234 || s.Field != "write" {
		t.Errorf("summary %+v", s)
	}
	if got, want := s.Object.String(), "inode (dev 8:1 ino 1234)"; got != want {
		t.Errorf("object %q, want %q", got, want)
	}
	o := overflowSummary(overflowKey{CeilingCgroupId: 9, Hook: uint16(denial.HookFileOpen), Decision: uint16(bpf.SharedDecisionDECISION_DENIED), DenyBit: denyWrite}, 5)
	if !o.Overflow || o.Count != 5 || o.Field != "write" || o.Object.Kind != denial.ObjectNone || o.Errno != syscall.EPERM {
		t.Errorf("overflow summary %+v", o)
	}
}

func TestMergeSummaries(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := summaryOf(denial.Key{CeilingCgroupId: 1, Hook: 1, ObjectKind: uint32(denial.ObjectSocket), Protocol: 6}, 3)
	a.Since, a.Until = t0, t0.Add(time.Second)
	b := a
	b.Count, b.Since, b.Until = 4, t0.Add(time.Second), t0.Add(2*time.Second)
	c := summaryOf(denial.Key{CeilingCgroupId: 1, Hook: 1, ObjectKind: uint32(denial.ObjectSocket), Protocol: 17}, 1)
	o1 := overflowSummary(overflowKey{CeilingCgroupId: 1, Hook: 1, DenyBit: denyNetwork}, 10)
	o2 := overflowSummary(overflowKey{CeilingCgroupId: 1, Hook: 1, DenyBit: denyNetwork}, 5)
	o3 := overflowSummary(overflowKey{CeilingCgroupId: 2, Hook: 1, DenyBit: denyNetwork}, 1)
	tl := &Tally{pending: map[summaryID]*denial.Summary{}}
	merge(tl.pending, []denial.Summary{a, c, o1})
	merge(tl.pending, []denial.Summary{b, o2, o3})
	got := tl.Collect()
	if len(got) != 4 {
		t.Fatalf("merged %d summaries, want 4: %+v", len(got), got)
	}
	var total uint64
	for _, s := range got {
		total += s.Count
		switch {
		case s.Overflow && s.CeilingCgroupID == 1 && s.Count != 15:
			t.Errorf("overflow of cgroup 1: %d, want 15", s.Count)
		case !s.Overflow && s.Key == a.Key && (s.Count != 7 || !s.Since.Equal(t0) || !s.Until.Equal(t0.Add(2*time.Second))):
			t.Errorf("merged %+v, want count 7 over [t0, t0+2s]", s)
		}
	}
	if total != 3+4+1+10+5+1 {
		t.Errorf("total %d", total)
	}
	if got[len(got)-1].CeilingCgroupID != 2 {
		t.Errorf("order: %+v", got)
	}
	if tl.Collect() != nil {
		t.Errorf("second Collect not empty")
	}
}

// A record's Key equals the kernel's tally key (tally_key_fill): the same
// fields, and the path components hashed with their zero padding.
func TestDecodeEventKey(t *testing.T) {
	ev := bpf.SharedEvent{CeilingCgroupId: 5, Hook: uint16(denial.HookInodeCreate), Decision: uint16(bpf.SharedDecisionDECISION_DENIED),
		DenyBit: denyWrite, ObjectKind: uint32(denial.ObjectFile), Err: 1}
	copy(ev.Names[0][:], []int8{'a', 'b'})
	raw := new(bytes.Buffer)
	if err := binary.Write(raw, binary.NativeEndian, &ev); err != nil {
		t.Fatal(err)
	}
	d, err := decodeEvent(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	h := uint64(0xcbf29ce484222325)
	words := make([]uint64, 32)
	words[0] = uint64('a') | uint64('b')<<8
	for _, w := range words {
		h = (h ^ w) * 0x100000001b3
	}
	want := denial.Key{CeilingCgroupId: 5, Hook: uint16(denial.HookInodeCreate), Decision: uint16(bpf.SharedDecisionDECISION_DENIED),
		DenyBit: denyWrite, ObjectKind: uint32(denial.ObjectFile), NamesHash: h}
	if d.Key != want {
		t.Errorf("key %+v, want %+v", d.Key, want)
	}
	ev.Names[0][1] = 'c'
	raw.Reset()
	_ = binary.Write(raw, binary.NativeEndian, &ev)
	if d2, _ := decodeEvent(raw.Bytes()); d2.Key == d.Key {
		t.Errorf("another name, same key")
	}
}
