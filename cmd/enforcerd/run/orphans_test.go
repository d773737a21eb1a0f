package run

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

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// TestRunCleansUpAfterAKilledRun: `enforcerd run` killed with SIGKILL
// leaves its cgroup (enforcerd-run-<pid>) and map entry while its command
// still runs; once the command ended, the next run removes both and says
// so.
func TestRunCleansUpAfterAKilledRun(t *testing.T) {
	vmtest.RequireRoot(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	parent := fmt.Sprintf("/enforcerd-run-orphan-test-%d", os.Getpid())
	pcg, err := cgroup.Create(mount, parent)
	if err != nil {
		t.Fatal(err)
	}
	defer pcg.Remove(time.Second)
	tmp := t.TempDir()
	started, done := filepath.Join(tmp, "started"), filepath.Join(tmp, "done")
	first := exec.Command(clitest.Bin(t), "run", "--pin-dir", testPinDir, "--cgroup-parent", parent, "-q",
		"--", "/bin/sh", "-c", "touch "+started+"; sleep 1; touch "+done)
	var stderr bytes.Buffer
	first.Stderr = &stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(pcg.Path(), fmt.Sprintf("enforcerd-run-%d", first.Process.Pid))
	// Killed once its command runs (in its cgroup, registered).
	for deadline := time.Now().Add(180 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			first.Process.Kill()
			first.Wait()
			t.Fatalf("the first run never started its command: %s", stderr.String())
		}
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed run's command never finished: %s", stderr.String())
		}
	}
	time.Sleep(100 * time.Millisecond) // the shell exits after touch
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the killed run left nothing (%v): nothing to clean up", err)
	}
	r := clitest.Run(t, nil, "run", "--pin-dir", testPinDir, "--cgroup-parent", parent, "--", "/bin/true")
	if r.Code == cli.ExitCannotEnforce {
		vmtest.Skip(t, "enforcerd run cannot enforce here: "+r.Stderr)
	}
	if r.Code != 0 || !strings.Contains(r.Stderr, "removed cgroup "+parent+"/"+filepath.Base(left)+" left by a killed enforcerd run (registered: true)") {
		t.Errorf("second run: exit %d, stderr %q; want it to remove %s", r.Code, r.Stderr, left)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("%s still there after the second run: %v", left, err)
	}
}
