package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/enforcer"
)

// hostPolicyPID reads the daemon pid recorded in the pin directory's
// host_policy map (entry 1).
func hostPolicyPID(t *testing.T, pin string) uint32 {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(pin, enforcer.HostPolicyPin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var pid uint32
	if err := m.Lookup(uint32(1), &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestVMDaemonOnePerPinDir: a second daemon given the same pin directory
// (with its own socket and state file) refuses to start, naming the
// first's pid, and leaves the first's host_policy as it was; the first
// clears its pid when it stops.
func TestVMDaemonOnePerPinDir(t *testing.T) {
	e := startVMDaemonAnyLSM(t, "127.0.0.1:19499")
	first := e.daemon.Process.Pid
	if got := hostPolicyPID(t, e.pin); got != uint32(first) {
		t.Fatalf("host_policy pid = %d, want the daemon's %d", got, first)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf("socket: %s/api.sock\nstate: %s/state.json\npin_dir: %s\naudit:\n  path: \"\"\nmetrics:\n  listen: \"\"\n", dir, dir, e.pin)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	second := exec.Command(e.bin, "daemon", "--config", cfg)
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		second.Process.Kill()
		<-done
		t.Fatalf("the second daemon on %s did not refuse to start:\n%s", e.pin, out.String())
	}
	if code := second.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("second daemon: exit %d, want 1:\n%s", code, out.String())
	}
	if msg := out.String(); !strings.Contains(msg, "pin directory in use") || !strings.Contains(msg, fmt.Sprintf("pid %d", first)) {
		t.Fatalf("second daemon's error does not name the pin directory's holder (pid %d):\n%s", first, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "api.sock")); err == nil {
		t.Fatal("the refused daemon created its socket")
	}
	if got := hostPolicyPID(t, e.pin); got != uint32(first) {
		t.Fatalf("after the second daemon exited, host_policy pid = %d, want the first's %d", got, first)
	}

	if err := e.daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := e.daemon.Wait(); err != nil {
		t.Fatalf("first daemon: %v", err)
	}
	if got := hostPolicyPID(t, e.pin); got != 0 {
		t.Fatalf("after the first daemon stopped, host_policy pid = %d, want 0", got)
	}
}
