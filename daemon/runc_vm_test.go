package daemon_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// runcBundle writes an OCI bundle whose busybox process tries an HTTP fetch
// from addr and creating /probe in its rootfs, with the enforcerd hooks and
// the given annotations.
func runcBundle(t *testing.T, e *vmEnv, id, addr string, annotations map[string]string) string {
	t.Helper()
	return runcBundleProcess(t, e, id, []string{"/bin/sh", "-c", "wget -q -O- http://" + addr + "/ >/dev/null; echo wget=$?; " +
		"touch /probe; echo touch=$?"}, []string{"PATH=/bin"}, annotations)
}

// runcBundleProcess writes an OCI bundle whose rootfs holds busybox (with
// sh, wget, touch and echo links in /bin) and whose process runs args with
// env, with the enforcerd hooks and the given annotations.
func runcBundleProcess(t *testing.T, e *vmEnv, id string, args, env []string, annotations map[string]string) string {
	t.Helper()
	b := filepath.Join(e.dir, "bundle-"+id)
	bin := filepath.Join(b, "rootfs", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "wget", "touch", "echo"} {
		if err := os.Symlink("busybox", filepath.Join(bin, a)); err != nil {
			t.Fatal(err)
		}
	}
	writeBundleConfig(t, e, b, id, map[string]any{
		"process": map[string]any{
			"terminal": false,
			"user":     map[string]int{"uid": 0, "gid": 0},
			"args":     args,
			"env":      env,
			"cwd":      "/",
		},
		"root":        map[string]any{"path": "rootfs"},
		"mounts":      []map[string]any{{"destination": "/proc", "type": "proc", "source": "proc"}},
		"annotations": annotations,
		"linux": map[string]any{
			// No network namespace: the container shares the guest's
			// loopback, so only the ceiling stands between it and addr.
			"namespaces":  []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}},
			"cgroupsPath": "/vmtest-runc/" + id,
		},
	})
	return b
}

// writeBundleConfig is the one config.json writer of the runc tests: cfg
// (process, root, mounts, annotations, linux) with the OCI version,
// hostname id and enforcerd's createRuntime and poststop hooks on e's
// socket, written to bundle b.
func writeBundleConfig(t *testing.T, e *vmEnv, b, id string, cfg map[string]any) {
	t.Helper()
	hook := func(stage string) map[string]any {
		return map[string]any{"path": e.bin, "args": []string{"enforcerd", "hook", "--socket", e.sock, stage}, "timeout": 60}
	}
	cfg["ociVersion"] = "1.0.2-dev"
	cfg["hostname"] = id
	cfg["hooks"] = map[string]any{"createRuntime": []any{hook("createRuntime")}, "poststop": []any{hook("poststop")}}
	buf, _ := json.MarshalIndent(cfg, "", " ")
	if err := os.WriteFile(filepath.Join(b, "config.json"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// requireRunc fails the test in the VM, and skips it on a host, when runc
// is not installed.
func requireRunc(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("runc"); err != nil {
		vmtest.Skip(t, "runc not installed (scripts/setup-deps installs it; scripts/vmtest packs it)")
	}
}

// startRuncDaemon is startVMDaemon for the runc tests: runc must be
// installed (requireRunc).
func startRuncDaemon(t *testing.T, metricsAddr string) *vmEnv {
	t.Helper()
	requireRunc(t)
	return startVMDaemon(t, metricsAddr)
}

// runRunc runs a container to completion and returns runc's exit code and
// combined output.
func runRunc(t *testing.T, e *vmEnv, id, bundle string) (int, string) {
	t.Helper()
	cmd := exec.Command("runc", "--root", filepath.Join(e.dir, "runc-state"), "run", "--no-pivot", "--bundle", bundle, id)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("runc: %v", err)
	}
	// runc leaves the cgroup behind when a hook failed.
	if cg, err := cgroup.Open(e.mount, "/vmtest-runc/"+id); err == nil {
		cg.Remove(5 * time.Second)
	}
	return code, string(out)
}

// TestVMRuncCreateRuntimeHook runs real containers with Debian's runc and the
// createRuntime hook: a control container (ceiling allows everything) reaches
// a loopback listener and writes its rootfs; a no-network/read-only one is
// denied both in the kernel with no side effect, the denial is in the audit
// log and /metrics; a malformed annotation and a stopped daemon make runc
// refuse the container before its process runs.
func TestVMRuncCreateRuntimeHook(t *testing.T) {
	e := startRuncDaemon(t, "127.0.0.1:19465")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var hits atomic.Int64
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "task")
	}))
	addr := ln.Addr().String()

	// (a) control: the ceiling allows everything.
	b := runcBundle(t, e, "ctl", addr, map[string]string{"enforcerd.io/ceiling": "network=true,write=true"})
	code, out := runRunc(t, e, "ctl", b)
	if code != 0 || !strings.Contains(out, "wget=0") || !strings.Contains(out, "touch=0") {
		t.Fatalf("control container: runc exit %d, output:\n%s", code, out)
	}
	if hits.Load() != 1 {
		t.Fatalf("control container: listener got %d requests, want 1", hits.Load())
	}
	if _, err := os.Stat(filepath.Join(b, "rootfs", "probe")); err != nil {
		t.Fatalf("control container: /probe not created: %v", err)
	}

	// (b) enforced: denied in the kernel; (c) no side effect.
	b = runcBundle(t, e, "ro", addr, map[string]string{"enforcerd.io/ceiling": "network=false,write=false"})
	code, out = runRunc(t, e, "ro", b)
	if code != 0 || !strings.Contains(out, "wget=1") || !strings.Contains(out, "touch=1") ||
		!strings.Contains(out, "Operation not permitted") {
		t.Fatalf("enforced container: runc exit %d, want 0 with wget=1 touch=1 (EPERM); output:\n%s", code, out)
	}
	if hits.Load() != 1 {
		t.Fatalf("enforced container reached the listener (%d requests)", hits.Load())
	}
	if _, err := os.Stat(filepath.Join(b, "rootfs", "probe")); err == nil {
		t.Fatal("enforced container created /probe")
	}
	var auditOK, metricsOK bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !(auditOK && metricsOK); time.Sleep(100 * time.Millisecond) {
		if buf, _ := os.ReadFile(e.audit); strings.Contains(string(buf), `"container":"ro"`) && strings.Contains(string(buf), `"decision":"denied"`) {
			auditOK = true
		}
		if resp, err := http.Get("http://127.0.0.1:19465/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metricsOK = strings.Contains(string(body), `enforcerd_denials_total{container="ro"`)
		}
	}
	if !auditOK || !metricsOK {
		buf, _ := os.ReadFile(e.audit)
		t.Fatalf("audit log has the denial: %v; /metrics has it: %v\naudit:\n%s", auditOK, metricsOK, buf)
	}

	// Refusals: runc must fail and the process must never run.
	b = runcBundle(t, e, "bad", addr, map[string]string{"enforcerd.io/ceiling": "network=maybe"})
	code, out = runRunc(t, e, "bad", b)
	if code == 0 || strings.Contains(out, "wget=") {
		t.Fatalf("malformed annotation: runc exit %d (want non-zero, process not run); output:\n%s", code, out)
	}
	e.daemon.Process.Signal(syscall.SIGTERM)
	e.daemon.Wait()
	b = runcBundle(t, e, "down", addr, map[string]string{"enforcerd.io/ceiling": "network=false"})
	code, out = runRunc(t, e, "down", b)
	if code == 0 || strings.Contains(out, "wget=") {
		t.Fatalf("daemon down: runc exit %d (want non-zero, process not run); output:\n%s", code, out)
	}
	if hits.Load() != 1 {
		t.Fatalf("a refused container reached the listener (%d requests)", hits.Load())
	}
}

// TestVMRuncShellNoneEntrypoint (threat model X6): under shell=none a
// container's entrypoint is the one program it may execute, so the
// createRuntime hook has the daemon vet it and runc refuses the container
// when it is BusyBox's sh (a multi-call binary: every applet would run
// in-process). Tri-state with Debian's runc: (a) without the ceiling the
// shell runs and creates /probe; (b) with shell=none the hook fails, runc
// refuses, the process never runs and /probe is absent. An entrypoint
// that is not a shell (this test binary, static) still runs under
// shell=none: it creates /probe, and its exec of /bin/sh, which works
// without the ceiling, is denied in the kernel (no /probe-sh).
func TestVMRuncShellNoneEntrypoint(t *testing.T) {
	e := startRuncDaemon(t, "127.0.0.1:19466")
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	exists := func(b, name string) bool {
		_, err := os.Lstat(filepath.Join(b, "rootfs", name))
		return err == nil
	}
	shArgs := []string{"sh", "-c", "touch /probe; echo touch=$?"} // found through PATH
	entry := func(id, ceiling string) string {
		b := runcBundleProcess(t, e, id, []string{"/bin/entry"}, append([]string{"PATH=/bin"}, probe.Env("oci-entry")...),
			map[string]string{"enforcerd.io/ceiling": ceiling})
		if err := os.WriteFile(filepath.Join(b, "rootfs", "bin", "entry"), self, 0o755); err != nil {
			t.Fatal(err)
		}
		return b
	}

	// (a) Control: without shell=none, BusyBox's sh runs.
	b := runcBundleProcess(t, e, "sh-ctl", shArgs, []string{"PATH=/bin"}, map[string]string{"enforcerd.io/ceiling": "network=true,write=true"})
	code, out := runRunc(t, e, "sh-ctl", b)
	if code != 0 || !strings.Contains(out, "touch=0") || !exists(b, "probe") {
		t.Fatalf("control (shell=full), BusyBox sh entrypoint: runc exit %d, /probe %v, output:\n%s", code, exists(b, "probe"), out)
	}
	// (b) shell=none: refused before the process runs; (c) no /probe.
	b = runcBundleProcess(t, e, "sh-none", shArgs, []string{"PATH=/bin"}, map[string]string{"enforcerd.io/ceiling": "network=true,write=true,shell=none"})
	code, out = runRunc(t, e, "sh-none", b)
	if code == 0 || strings.Contains(out, "touch=") || exists(b, "probe") {
		t.Fatalf("BYPASS: shell=none, BusyBox sh entrypoint: runc exit %d, /probe %v (want refused, never run); output:\n%s", code, exists(b, "probe"), out)
	}
	if !strings.Contains(out, "multi-call binary") || !strings.Contains(out, "/bin/sh") {
		t.Errorf("the refusal does not name /bin/sh as a multi-call binary:\n%s", out)
	}
	t.Logf("shell=none with sh as the entrypoint: runc exit %d:\n%s", code, out)

	// A non-shell entrypoint: control, then shell=none.
	b = entry("entry-ctl", "network=true,write=true")
	code, out = runRunc(t, e, "entry-ctl", b)
	if code != 0 || !strings.Contains(out, "exec=ok create=ok") || !exists(b, "probe-sh") || !exists(b, "probe") {
		t.Fatalf("control (shell=full), non-shell entrypoint: runc exit %d, /probe-sh %v, /probe %v; output:\n%s", code, exists(b, "probe-sh"), exists(b, "probe"), out)
	}
	b = entry("entry-none", "network=true,write=true,shell=none")
	code, out = runRunc(t, e, "entry-none", b)
	if code != 0 || !strings.Contains(out, "create=ok") || !exists(b, "probe") {
		t.Fatalf("shell=none, non-shell entrypoint: runc exit %d, /probe %v (want it to run); output:\n%s", code, exists(b, "probe"), out)
	}
	if !strings.Contains(out, "exec=operation not permitted") || exists(b, "probe-sh") {
		t.Fatalf("BYPASS: shell=none: the entrypoint's exec of /bin/sh: /probe-sh %v, want EPERM and no /probe-sh; output:\n%s", exists(b, "probe-sh"), out)
	}
}
