package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/denial"
)

func TestFromDenial(t *testing.T) {
	d := denial.Denial{Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), CgroupID: 7, CeilingCgroupID: 6, TGID: 42,
		Comm: "curl", Hook: denial.HookSocketCreate, Errno: syscall.EPERM, Field: "network",
		Object: denial.Object{Kind: denial.ObjectSocket, Family: 2, SockType: 1}}
	r := FromDenial(d, "c1", "v1;x")
	if r.Time != "2026-01-02T03:04:05.000000006Z" || r.Hook != "socket_create" || r.Operation != "socket" ||
		r.Errno != 1 || r.Error != "EPERM" || r.Decision != "denied" || r.Container != "c1" || r.PID != 42 ||
		r.Object != "AF_INET SOCK_STREAM" {
		t.Fatalf("record = %+v", r)
	}
	if r.Type != TypeDenial || r.SchemaVersion != 4 || r.Count != 0 {
		t.Fatalf("record = %+v, want type denial, schema 3, no count", r)
	}
	// The fingerprint by reference: its id, not its text.
	if r.Fingerprint != "" || r.FingerprintID != FingerprintID("v1;x") || r.Host != Host {
		t.Fatalf("record = %+v, want fingerprint_id %s only, host %q", r, FingerprintID("v1;x"), Host)
	}
}

func TestFromSummary(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := denial.Summary{CeilingCgroupID: 6, Hook: denial.HookFileOpen, Errno: syscall.EPERM, Field: "write",
		Object: denial.Object{Kind: denial.ObjectFile, Dev: 8<<20 | 1, Ino: 99}, Count: 1000,
		Since: t0, Until: t0.Add(time.Second)}
	r := FromSummary(s, "c1", "v1;x", "/etc/passwd")
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != "summary" || m["count"] != float64(1000) || m["since"] != "2026-01-02T03:04:05Z" ||
		m["time"] != "2026-01-02T03:04:06Z" || m["object"] != "/etc/passwd (dev 8:1 ino 99)" || m["hook"] != "file_open" ||
		m["decision"] != "denied" || m["error"] != "EPERM" || m["container"] != "c1" || m["overflow"] != nil {
		t.Fatalf("summary record = %s", b)
	}
	s.Overflow, s.Object = true, denial.Object{}
	if r := FromSummary(s, "c1", "", ""); !r.Overflow || r.Object != "" || r.Count != 1000 {
		t.Fatalf("overflow summary record = %+v", r)
	}
}

func TestLogRotatesBySize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(p, 1000, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if err := l.Write(Record{Container: "c", Hook: "file_open", PID: uint32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for _, name := range []string{p, p + ".1", p + ".2"} {
		fi, err := os.Stat(name)
		if err != nil || fi.Size() > 1000 || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
		f, _ := os.Open(name)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: line %q: %v", name, sc.Text(), err)
			}
		}
		f.Close()
	}
	if _, err := os.Stat(p + ".3"); err == nil {
		t.Fatal("more backups than configured")
	}
}

// TestLogReopenAfterExternalRotation: logrotate renames the file, then the
// daemon reopens on SIGHUP: records before the reopen are in the renamed
// file, records after it in a new file at the path, none lost.
func TestLogReopenAfterExternalRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(p, 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lines := func(name string) int {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range b {
			if c == '\n' {
				n++
			}
		}
		return n
	}
	l.Write(Record{Container: "before"})
	if err := os.Rename(p, p+".rotated"); err != nil {
		t.Fatal(err)
	}
	l.Write(Record{Container: "between"}) // still the renamed file
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.Write(Record{Container: "after"})
	if a, b := lines(p+".rotated"), lines(p); a != 2 || b != 1 {
		t.Errorf("rotated file has %d records (want 2), new file %d (want 1)", a, b)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v, %v; want mode 0600", fi, err)
	}
}

// TestHubRecent: the hub keeps the last RecentRecords records, oldest
// first, with or without followers.
func TestHubRecent(t *testing.T) {
	h := NewHub()
	if r := h.Recent(); r == nil || len(r) != 0 {
		t.Fatalf("empty hub: %v", r)
	}
	for i := range 3 {
		h.Publish(Record{PID: uint32(i)})
	}
	if r := h.Recent(); len(r) != 3 || r[0].PID != 0 || r[2].PID != 2 {
		t.Fatalf("3 records: %+v", r)
	}
	for i := 3; i < RecentRecords+10; i++ {
		h.Publish(Record{PID: uint32(i)})
	}
	r := h.Recent()
	if len(r) != RecentRecords || r[0].PID != 10 || r[len(r)-1].PID != RecentRecords+9 {
		t.Fatalf("wrapped: %d records, first %d, last %d", len(r), r[0].PID, r[len(r)-1].PID)
	}
	for i := 1; i < len(r); i++ {
		if r[i].PID != r[i-1].PID+1 {
			t.Fatalf("out of order at %d: %d after %d", i, r[i].PID, r[i-1].PID)
		}
	}
}
