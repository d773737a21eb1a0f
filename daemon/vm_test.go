package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestMain: a re-executed probe (workload_vm_test.go) runs and exits in
// probe.Main.
func TestMain(m *testing.M) {
	probe.Main()
	os.Exit(m.Run())
}

type vmEnv struct {
	t      *testing.T
	bin    string
	dir    string
	cfg    string
	sock   string
	audit  string
	mount  string
	pin    string
	daemon *exec.Cmd
	// wrap: a command line the daemon runs under (e.g. setpriv), nil
	// for none.
	wrap []string
}

// newVMEnv prepares a daemon configuration in a temp dir (socket, state,
// audit log, the boot's shared pins, metrics on metricsAddr). It fails the
// test in the VM when the enforcerd binary is missing.
func newVMEnv(t *testing.T, metricsAddr string, extraCfg ...string) *vmEnv {
	t.Helper()
	vmtest.RequireLSM(t, nil)
	return newVMEnvAnyLSM(t, metricsAddr, extraCfg...)
}

// newVMEnvAnyLSM is newVMEnv for tests that also run in the boot without
// BPF LSM.
func newVMEnvAnyLSM(t *testing.T, metricsAddr string, extraCfg ...string) *vmEnv {
	t.Helper()
	vmtest.RequireRoot(t)
	bin := os.Getenv("ENFORCERD_BIN")
	if bin == "" {
		vmtest.Skip(t, "ENFORCERD_BIN not set")
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &vmEnv{t: t, bin: bin, dir: dir, cfg: filepath.Join(dir, "config.yaml"), sock: filepath.Join(dir, "api.sock"),
		audit: filepath.Join(dir, "audit.jsonl"), mount: mount}
	pin, _ := vmtest.PinDir("daemon-test")
	e.pin = pin
	cfg := fmt.Sprintf("socket: %s\nstate: %s/state.json\npin_dir: %s\naudit:\n  path: %s\nmetrics:\n  listen: %q\n",
		e.sock, dir, pin, e.audit, metricsAddr) + strings.Join(extraCfg, "")
	if err := os.WriteFile(e.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// startVMDaemon is the one prologue of the daemon's VM tests: the
// environment of newVMEnv (metrics on metricsAddr, extraCfg appended to the
// configuration) with its daemon started; the daemon is stopped when the
// test ends, its log shown when the test failed.
func startVMDaemon(t *testing.T, metricsAddr string, extraCfg ...string) *vmEnv {
	t.Helper()
	return startedDaemon(t, newVMEnv(t, metricsAddr, extraCfg...))
}

// startVMDaemonAnyLSM is startVMDaemon for tests that also run in the boot
// without BPF LSM (newVMEnvAnyLSM).
func startVMDaemonAnyLSM(t *testing.T, metricsAddr string, extraCfg ...string) *vmEnv {
	t.Helper()
	return startedDaemon(t, newVMEnvAnyLSM(t, metricsAddr, extraCfg...))
}

// startedDaemon starts e's daemon and stops it when the test ends, with its
// log when the test failed.
func startedDaemon(t *testing.T, e *vmEnv) *vmEnv {
	t.Helper()
	e.startDaemon()
	t.Cleanup(func() { e.stopDaemon(t.Failed()) })
	return e
}

// stopDaemon stops a daemon that is still running, and logs its output.
func (e *vmEnv) stopDaemon(logOutput bool) {
	if e.daemon != nil && e.daemon.ProcessState == nil {
		e.daemon.Process.Signal(syscall.SIGTERM)
		e.daemon.Wait()
	}
	if logOutput {
		b, _ := os.ReadFile(filepath.Join(e.dir, "daemon.log"))
		e.t.Logf("daemon log:\n%s", b)
	}
}

func (e *vmEnv) startDaemon() {
	e.t.Helper()
	logf, err := os.OpenFile(filepath.Join(e.dir, "daemon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	argv := append(append([]string{}, e.wrap...), e.bin, "daemon", "--config", e.cfg)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon = cmd
	t0 := time.Now()
	defer func() { e.t.Logf("daemon up in %v", time.Since(t0)) }()
	// Up means ready (GET /v1/ready: pins adopted, state reconciled, API
	// served), so every daemon test also checks readiness on the real
	// enforcer.
	c := api.NewClient(e.sock, time.Second)
	var last string
	for deadline := time.Now().Add(180 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, err := c.Ready(context.Background())
		if err == nil && r.Ready {
			return
		}
		last = fmt.Sprintf("ready=%v missing=%v err=%v", r.Ready, r.Missing, err)
	}
	b, _ := os.ReadFile(filepath.Join(e.dir, "daemon.log"))
	e.t.Fatalf("daemon did not become ready (%s):\n%s", last, b)
}

func (e *vmEnv) hook(stage, stdin string) (int, string) {
	cmd := exec.Command(e.bin, "hook", "--socket", e.sock, "--timeout", "60s", stage)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return 0, string(out)
}

// container simulates a runtime starting one container: a fresh cgroup,
// "runc init" in it (the probe runtime-init), createRuntime hook, then the
// entrypoint exec (start).
type container struct {
	id, group string
	p         *probe.Process
}

func (e *vmEnv) create(id, ceiling string) (*container, int, string) {
	e.t.Helper()
	return e.createIn(id, ceiling, "/b")
}

// createIn is create with the state's bundle directory (the hook judges
// its config.json, docs/no-bpf-lsm.md "Containers").
func (e *vmEnv) createIn(id, ceiling, bundle string) (*container, int, string) {
	e.t.Helper()
	c := &container{id: id, group: "/vmtest-runtime/" + id}
	wdir := filepath.Join(e.dir, id)
	os.MkdirAll(wdir, 0o755)
	c.p = startIn(e.t, e.mount, c.group, probe.Cmd{Op: "runtime-init", Args: []string{wdir}})
	state := fmt.Sprintf(`{"ociVersion":"1.0.2-dev","id":%q,"status":"created","pid":%d,"bundle":%q,"annotations":{"enforcerd.io/ceiling":%q}}`,
		id, c.p.Pid(), bundle, ceiling)
	code, msg := e.hook("createRuntime", state)
	return c, code, msg
}

func (c *container) start(t *testing.T) {
	if err := c.p.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
}

// stop ends the container and removes its cgroup; it returns the lines the
// entrypoint printed.
func (c *container) stop(t *testing.T, e *vmEnv) []string {
	stopProbe(c.p)
	if cg, err := cgroup.Open(e.mount, c.group); err == nil {
		cg.Remove(5 * time.Second)
	}
	return c.p.Lines()
}

func (c *container) count() int { return len(c.p.Lines()) }

func TestVMDaemonHookFlowAuditMetricsAndRestart(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19464")
	e.startDaemon()
	defer e.stopDaemon(true)

	// Refusals: malformed annotation, then (below) daemon down.
	bad, code, msg := e.create("bad", "network=maybe")
	if code != 2 {
		t.Fatalf("malformed annotation: hook exit %d, want 2: %s", code, msg)
	}
	bad.stop(t, e)

	a, code, msg := e.create("a", "network=false,write=false")
	if code != 0 {
		t.Fatalf("createRuntime a: exit %d: %s", code, msg)
	}
	b, code, msg := e.create("b", "network=false")
	if code != 0 {
		t.Fatalf("createRuntime b: exit %d: %s", code, msg)
	}
	a.start(t)
	b.start(t)
	waitLines := func(c *container, n int) {
		for deadline := time.Now().Add(10 * time.Second); c.count() < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("container %s printed only %d lines", c.id, c.count())
			}
		}
	}
	waitLines(a, 3)
	waitLines(b, 3)

	// The denial is in the audit log and in /metrics.
	var auditOK, metricsOK bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !(auditOK && metricsOK); time.Sleep(100 * time.Millisecond) {
		if buf, _ := os.ReadFile(e.audit); strings.Contains(string(buf), `"container":"a"`) && strings.Contains(string(buf), `"decision":"denied"`) {
			auditOK = true
		}
		if resp, err := http.Get("http://127.0.0.1:19464/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metricsOK = strings.Contains(string(body), `enforcerd_denials_total{container="a"`)
		}
	}
	if !auditOK || !metricsOK {
		buf, _ := os.ReadFile(e.audit)
		t.Fatalf("audit log has a's denial: %v; /metrics has it: %v\naudit:\n%s", auditOK, metricsOK, buf)
	}

	// SIGKILL the daemon; b exits meanwhile; a stays denied throughout.
	e.daemon.Process.Kill()
	e.daemon.Wait()
	n := a.count()
	// A real init (a's: pid 1 is refused before the daemon is asked).
	if code, msg := e.hook("createRuntime", fmt.Sprintf(`{"ociVersion":"1.0.2-dev","id":"c","pid":%d,"annotations":{"enforcerd.io/role":"test"}}`, a.p.Pid())); code != 125 {
		t.Fatalf("daemon down: hook exit %d, want 125: %s", code, msg)
	}
	b.stop(t, e)
	waitLines(a, n+10)
	e.startDaemon()
	list, err := api.NewClient(e.sock, 5*time.Second).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "a" {
		t.Fatalf("list after restart = %+v, want only a", list)
	}
	n = a.count()
	waitLines(a, n+5)
	lines := a.stop(t, e)
	for i, l := range lines {
		if l != "net=denied write=denied" {
			t.Fatalf("container a line %d: %q (must stay denied the whole time)", i, l)
		}
	}
	t.Logf("container a: %d attempts, all denied, across a daemon SIGKILL and restart", len(lines))
	if code, msg := e.hook("poststop", `{"ociVersion":"1.0.2-dev","id":"a","status":"stopped"}`); code != 0 {
		t.Fatalf("poststop: %d %s", code, msg)
	}
}

// TestNoBPFLSMDaemonPartialCoverage: in the boot without BPF LSM a
// network=false container whose spec conforms (its config.json, judged by
// the hook: docs/no-bpf-lsm.md "Containers") is enforced only in part
// (unix sockets, no tamper protection): the daemon refuses it (the hook
// exits 125, nothing registered, the entrypoint never runs unconfined)
// unless its configuration says allow_partial: true; then the container is
// registered, its inet socket is denied, and list, the audit record and
// the metric name the gaps. A container whose config.json cannot be read
// is accepted under allow_partial with the cgroup-BPF layer alone (gap
// network-non-inet, the operator's opt-in), and its inet socket is denied
// too. With BPF LSM every container is enforced in
// full, with no gap named.
func TestNoBPFLSMDaemonPartialCoverage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		allow    bool
		conform  bool
		refusal  string // without BPF LSM: the API error code in the hook's message
		gapNamed string // and the gap code it names
		gaps     string // accepted without BPF LSM: the unenforced gap codes
	}{
		{"allow_partial=false", false, true, "partial_coverage", "network-unix", ""},
		{"allow_partial=true", true, true, "", "", "network-unix tamper"},
		{"allow_partial=true, unreadable spec", true, false, "", "", "network-non-inet tamper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newVMEnvAnyLSM(t, "127.0.0.1:19466", fmt.Sprintf("allow_partial: %v\n", tc.allow))
			e.startDaemon()
			defer e.stopDaemon(t.Failed())
			bundle := "/nonexistent-bundle"
			if tc.conform {
				bundle = specNetBundle(t, e, "p", "network=false", true, nil)
			}
			c, code, msg := e.createIn("p", "network=false", bundle)
			lsm, _ := vmtest.LSMActive()
			if !lsm && tc.refusal != "" {
				if code != 125 || !strings.Contains(msg, tc.refusal) || !strings.Contains(msg, tc.gapNamed) {
					t.Fatalf("no BPF LSM, %s: hook exit %d, want 125 naming %s and %s: %s", tc.name, code, tc.refusal, tc.gapNamed, msg)
				}
				list, err := api.NewClient(e.sock, 5*time.Second).List(context.Background())
				if err != nil || len(list) != 0 {
					t.Fatalf("a refused container is listed: %v, %v", list, err)
				}
				c.stop(t, e)
				return
			}
			if code != 0 {
				t.Fatalf("hook exit %d: %s", code, msg)
			}
			c.start(t)
			for deadline := time.Now().Add(20 * time.Second); c.count() < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			}
			lines := c.stop(t, e)
			if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "net=denied") {
				t.Fatalf("BYPASS: entrypoint under network=false: %v", lines)
			}
			list, err := api.NewClient(e.sock, 5*time.Second).List(context.Background())
			if err != nil || len(list) != 1 {
				t.Fatalf("list: %v, %v", list, err)
			}
			var codes []string
			for _, g := range list[0].Unenforced {
				codes = append(codes, g.Code)
			}
			want := "[" + tc.gaps + "]"
			if lsm {
				want = "[]"
			}
			if fmt.Sprint(codes) != want {
				t.Errorf("list: unenforced %v, want %s", codes, want)
			}
			audit, _ := os.ReadFile(e.audit)
			if !strings.Contains(string(audit), `"decision":"registered"`) || lsm == strings.Contains(string(audit), `"unenforced":["`+strings.ReplaceAll(tc.gaps, " ", `","`)+`"]`) {
				t.Errorf("audit log: registration record missing or its gaps wrong (lsm %v):\n%s", lsm, audit)
			}
			resp, err := http.Get("http://127.0.0.1:19466/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if first, _, _ := strings.Cut(tc.gaps, " "); !lsm && !strings.Contains(string(body), `enforcerd_unenforced_containers{gap="`+first+`"} 1`) {
				t.Errorf("metrics do not count the partial container")
			}
		})
	}
}
