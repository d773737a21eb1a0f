package ctl

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/audit"
)

var updateGolden = flag.Bool("update-golden", false, "write the golden files of ctl's output for people")

// golden compares got with testdata/name (-update-golden writes it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update-golden writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -run %s -update-golden rewrites it):\n%s\nwant\n%s", p, t.Name(), got, want)
	}
}

// TestDenialsFollowColumns: denials --follow prints records in fixed-width
// columns under its header: a denial, a daemon decision with its reason,
// a summary of the denials no record stood for, an overflow summary, and
// a record whose comm and object are quoted.
func TestDenialsFollowColumns(t *testing.T) {
	recs := []audit.Record{
		{Type: audit.TypeDenial, Time: "2026-01-02T03:04:05.000000006Z", Container: "web", CgroupID: 4242, PID: 7, Comm: "curl",
			Hook: "socket_connect", Rule: "network", Operation: "connect", Field: "network", Decision: "denied", Error: "EPERM", Object: "AF_INET SOCK_STREAM 1.2.3.4:443"},
		{Type: audit.TypeDaemon, Time: "2026-01-02T03:04:05.5Z", Container: "web", CgroupID: 4242, Hook: "enforcerd",
			Operation: "registration", Decision: "registered", Object: "/system.slice/web"},
		{Type: audit.TypeSummary, Time: "2026-01-02T03:04:06Z", Container: "web", Hook: "socket_connect", Rule: "network", Operation: "connect",
			Field: "network", Decision: "denied", Error: "EPERM", Object: "AF_INET SOCK_STREAM 1.2.3.4:443", Count: 41},
		{Type: audit.TypeSummary, Time: "2026-01-02T03:04:06Z", Container: "a-much-longer-container-id", Hook: "file_open", Rule: "write",
			Operation: "open-for-write", Field: "write", Decision: "denied", Error: "EPERM", Overflow: true, Count: 9000},
		{Type: audit.TypeDenial, Time: "2026-01-02T03:04:07Z", Container: "web", CgroupID: 4243, PID: 8, Comm: "x\ty",
			Hook: "inode_create", Rule: "write", Operation: "create", Field: "write", Decision: "denied", Error: "EACCES", Object: "/a\nb"},
	}
	var b strings.Builder
	b.WriteString(denialHeaderFollow + "\n")
	for _, r := range recs {
		b.WriteString(denialRowFollow(r) + "\n")
	}
	golden(t, "denials-follow.golden", b.String())
}
