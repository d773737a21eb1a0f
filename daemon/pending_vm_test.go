package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/test/probe"
)

// workload is the probe workload started directly in a cgroup: it is
// running before any registration and never execs again.
type workload struct{ p *probe.Process }

func startWorkload(t *testing.T, e *vmEnv, group, name string) *workload {
	t.Helper()
	wdir := filepath.Join(e.dir, name)
	os.MkdirAll(wdir, 0o755)
	return &workload{p: startIn(t, e.mount, group, probe.Cmd{Op: "workload", Args: []string{wdir}})}
}

func (w *workload) snapshot() []string { return w.p.Lines() }

// waitFor waits until the workload printed n lines in total.
func (w *workload) waitFor(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l := w.snapshot(); len(l) >= n {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("workload printed only %d lines, want %d", len(w.snapshot()), n)
		}
	}
}

func (w *workload) stop() { stopProbe(w.p) }

func removeGroup(e *vmEnv, group string) {
	if cg, err := cgroup.Open(e.mount, group); err == nil {
		cg.Remove(5 * time.Second)
	}
}

// allDenied fails unless every line is "net=denied write=denied".
func allDenied(t *testing.T, what string, lines []string) {
	t.Helper()
	if len(lines) == 0 {
		t.Fatalf("%s: no lines", what)
	}
	for i, l := range lines {
		if l != "net=denied write=denied" {
			t.Fatalf("%s: line %d is %q, want denied", what, i, l)
		}
	}
}

// TestVMDaemonImmediateActivationNonInitProcess: a registration asking for
// activation at exec is in force at once when the cgroup already holds a
// process other than the runtime's init (hook path: the state's pid; API
// path without init_pid: any process). Control: a cgroup holding only the
// init stays pending and its entrypoint's exec activates it.
func TestVMDaemonImmediateActivationNonInitProcess(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19465")
	client := api.NewClient(e.sock, 5*time.Second)
	ctx := context.Background()

	// Control: only the runtime init in the cgroup → pending, then the
	// entrypoint exec activates it (its very first line is denied).
	ctl, code, msg := e.create("ctl", "network=false,write=false")
	if code != 0 || !strings.Contains(msg, "activation at-exec") {
		t.Fatalf("control createRuntime: exit %d: %s", code, msg)
	}
	if c, err := client.Get(ctx, "ctl"); err != nil || c.State != state.StatePending || c.Activation != state.ActivationAtExec {
		t.Fatalf("control before start: %+v, %v; want pending at-exec", c, err)
	}
	ctl.start(t)
	for deadline := time.Now().Add(10 * time.Second); ctl.count() < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("control entrypoint printed nothing")
		}
	}
	if c, err := client.Get(ctx, "ctl"); err != nil || c.State != state.StateActive {
		t.Fatalf("control after exec: %+v, %v; want active", c, err)
	}
	allDenied(t, "control entrypoint", ctl.stop(t, e))
	e.hook("poststop", `{"ociVersion":"1.0.2-dev","id":"ctl","status":"stopped"}`)

	// Hook path: the runtime init plus a workload that is already running
	// (and will never exec again) in the container's cgroup.
	group := "/vmtest-runtime/imm"
	w := startWorkload(t, e, group, "imm")
	defer removeGroup(e, group)
	defer w.stop()
	before := w.waitFor(t, 3)
	if before[0] != "net=allowed write=allowed" {
		t.Fatalf("before registration: %q, want allowed (nothing registered yet)", before[0])
	}
	initP := startIn(t, e.mount, group, probe.Cmd{Op: "runtime-init", Args: []string{filepath.Join(e.dir, "imm")}})
	defer stopProbe(initP)
	st := fmt.Sprintf(`{"ociVersion":"1.0.2-dev","id":"imm","status":"created","pid":%d,"bundle":"/b","annotations":{"enforcerd.io/ceiling":"network=false,write=false"}}`,
		initP.Pid())
	code, msg = e.hook("createRuntime", st)
	n := len(w.snapshot())
	if code != 0 || !strings.Contains(msg, "activation immediate") || !strings.Contains(msg, strconv.Itoa(w.p.Pid())) {
		t.Fatalf("createRuntime with a non-init process: exit %d: %s", code, msg)
	}
	c, err := client.Get(ctx, "imm")
	if err != nil || c.State != state.StateActive || c.Activation != state.ActivationImmediate || c.InitPID != initP.Pid() {
		t.Fatalf("registration: %+v, %v; want active, immediate", c, err)
	}
	// One iteration may have been under way when the hook returned.
	after := w.waitFor(t, n+11)[n+1:]
	allDenied(t, "running workload after registration", after)
	t.Logf("workload pid %d: %d lines allowed before registration, %d denied after; reason: %s", w.p.Pid(), n, len(after), c.ActivationReason)

	// API path, no init_pid: any process in the cgroup activates at once.
	group2 := "/vmtest-runtime/imm2"
	w2 := startWorkload(t, e, group2, "imm2")
	defer removeGroup(e, group2)
	defer w2.stop()
	w2.waitFor(t, 2)
	c2, err := client.Register(ctx, api.RegisterRequest{ID: "imm2", Cgroup: group2, Ceiling: "network=false,write=false", Activate: api.ActivateExec})
	n2 := len(w2.snapshot())
	if err != nil || c2.Activation != state.ActivationImmediate || c2.State != state.StateActive {
		t.Fatalf("API register with a running process: %+v, %v; want immediate", c2, err)
	}
	allDenied(t, "API-registered running workload", w2.waitFor(t, n2+11)[n2+1:])

	// The decisions are in the audit log.
	b, _ := os.ReadFile(e.audit)
	if got := strings.Count(string(b), `"decision":"activated_immediately"`); got < 2 {
		t.Fatalf("audit log has %d activated_immediately records, want 2:\n%s", got, b)
	}
}

// TestVMDaemonPendingIntruderActivates: a process moved into a pending
// cgroup by a write to cgroup.procs (no exec) is enforced within the
// pending check interval. Control: before the move it runs unenforced.
func TestVMDaemonPendingIntruderActivates(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19466")
	client := api.NewClient(e.sock, 5*time.Second)
	ctx := context.Background()

	ctr, code, msg := e.create("intr", "network=false,write=false")
	defer removeGroup(e, ctr.group)
	defer stopProbe(ctr.p)
	if code != 0 || !strings.Contains(msg, "activation at-exec") {
		t.Fatalf("createRuntime: exit %d: %s", code, msg)
	}
	outside := "/vmtest-runtime/outside"
	w := startWorkload(t, e, outside, "intr-w")
	defer removeGroup(e, outside)
	defer w.stop()
	before := w.waitFor(t, 3)
	allowed := 0
	for _, l := range before {
		if l == "net=allowed write=allowed" {
			allowed++
		}
	}
	if allowed != len(before) {
		t.Fatalf("control: outside the container the workload is %v, want allowed", before)
	}
	procs := filepath.Join(e.mount, ctr.group, "cgroup.procs")
	if err := os.WriteFile(procs, []byte(strconv.Itoa(w.p.Pid())), 0o644); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	var c api.Container
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if c, err = client.Get(ctx, "intr"); err == nil && c.State == state.StateActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registration after an intruder: %+v, want active", c)
		}
	}
	took := time.Since(moved)
	n := len(w.snapshot())
	allDenied(t, "moved workload after activation", w.waitFor(t, n+11)[n+1:])
	t.Logf("activated %v after the move (check interval 100ms); reason: %s", took, c.ActivationReason)
}

// TestVMDaemonPendingDeadlineFreezes: a pending registration whose cgroup
// sees no exec by the deadline is frozen, shown as such in the API, the
// audit log and /metrics, and its init never gets to exec the workload.
// Control: a container started within the deadline activates normally.
func TestVMDaemonPendingDeadlineFreezes(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19467", "pending:\n  deadline: 3s\n  check_interval: 100ms\n")
	client := api.NewClient(e.sock, 5*time.Second)
	ctx := context.Background()

	ok, code, msg := e.create("ontime", "network=false,write=false")
	if code != 0 {
		t.Fatalf("createRuntime ontime: %d %s", code, msg)
	}
	late, code, msg := e.create("late", "network=false,write=false")
	if code != 0 {
		t.Fatalf("createRuntime late: %d %s", code, msg)
	}
	defer removeGroup(e, late.group)
	registered := time.Now()
	ok.start(t)
	for deadline := time.Now().Add(10 * time.Second); ok.count() < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("ontime entrypoint printed nothing")
		}
	}

	var c api.Container
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if c, err = client.Get(ctx, "late"); err == nil && c.State == state.StateFrozen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late after its deadline: %+v, want %q", c, state.StateFrozen)
		}
	}
	frozenAfter := time.Since(registered)
	cg, err := cgroup.Open(e.mount, late.group)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := cg.Frozen(); err != nil || !f {
		t.Fatalf("cgroup.events frozen = %v, %v; want 1", f, err)
	}
	// Side effect absent: told to go, the frozen init never execs the
	// entrypoint, so nothing runs and nothing is printed.
	late.start(t)
	time.Sleep(time.Second)
	if n := late.count(); n != 0 {
		t.Fatalf("frozen container printed %d lines", n)
	}
	if c, err := client.Get(ctx, "ontime"); err != nil || c.State != state.StateActive {
		t.Fatalf("control ontime: %+v, %v; want active (not frozen)", c, err)
	}
	if okcg, err := cgroup.Open(e.mount, ok.group); err != nil {
		t.Fatal(err)
	} else if fr, _ := okcg.Frozen(); fr {
		t.Fatal("control ontime cgroup is frozen")
	}
	allDenied(t, "control ontime", ok.stop(t, e))

	b, _ := os.ReadFile(e.audit)
	if !strings.Contains(string(b), `"container":"late"`) || !strings.Contains(string(b), `"decision":"frozen"`) {
		t.Fatalf("audit log has no frozen record for late:\n%s", b)
	}
	resp, err := http.Get("http://127.0.0.1:19467/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `enforcerd_pending_outcomes_total{outcome="frozen"} 1`) {
		t.Fatalf("/metrics has no frozen outcome:\n%s", grepLines(string(body), "pending"))
	}
	t.Logf("late frozen %v after registration (deadline 3s); reason: %s", frozenAfter, c.ActivationReason)

	// Cleanup: cgroup.kill ends frozen processes too.
	if err := cg.Kill(); err != nil {
		t.Fatal(err)
	}
	stopProbe(late.p)
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
