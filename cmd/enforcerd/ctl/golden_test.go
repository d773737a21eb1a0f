package ctl

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
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

// statusOfHost is a status whose BPF LSM programs all failed to load for
// one reason, with the cgroup-BPF layer attached and an optional
// lifecycle program absent.
func statusOfHost() api.Status {
	const eperm = "load program: operation not permitted (MEMLOCK may be too low, or lockdown=confidentiality forbids BPF LSM programs: check dmesg)"
	st := api.Status{Version: "v-golden", PID: 42, PinDir: "/sys/fs/bpf/enforcerd", AllowPartial: true,
		Coverage: []coverage.Field{{Field: "network", State: "partial", By: "cgroup-bpf",
			Gaps: []coverage.Gap{{Code: coverage.GapNetworkNonInet, Field: "network", Detail: eperm}}}}}
	for i := range 73 {
		st.Hooks = append(st.Hooks, api.HookStatus{Program: fmt.Sprintf("lsm_%02d", i), Hook: fmt.Sprintf("hook_%02d", i), Layer: "bpf-lsm", Error: eperm})
	}
	for _, h := range []string{"cgroup/connect4", "cgroup/connect6", "cgroup/sendmsg4"} {
		st.Hooks = append(st.Hooks, api.HookStatus{Program: strings.ReplaceAll(h, "/", "_"), Hook: h, Layer: "cgroup-bpf", Attached: true})
	}
	st.Hooks = append(st.Hooks, api.HookStatus{Program: "exec_tp", Hook: "sched_process_exec", Layer: "lifecycle", Attached: true, Adopted: true},
		api.HookStatus{Program: "fork_new", Hook: "new_hook", Layer: "lifecycle", Optional: true, Error: coverage.ErrHookNotInKernel})
	return st
}

// TestStatusGolden: ctl status prints one line per layer, the reason
// the BPF LSM programs failed once with their count; --verbose adds the
// per-hook table.
func TestStatusGolden(t *testing.T) {
	for name, verbose := range map[string]bool{"status.golden": false, "status-verbose.golden": true} {
		var b strings.Builder
		if err := printStatus(&b, statusOfHost(), verbose); err != nil {
			t.Fatal(err)
		}
		golden(t, name, b.String())
	}
}
