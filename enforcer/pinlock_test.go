package enforcer_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// bpffsDir mounts a private bpf filesystem for the test (root only).
func bpffsDir(t *testing.T) string {
	t.Helper()
	vmtest.RequireRootFor(t, "mounts a bpf filesystem")
	dir := t.TempDir()
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mount bpffs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// One daemon per pin directory: a second lock on the directory, from
// another process, is refused while the first is held, and taken once it
// is released.
func TestLockPinDirIsExclusiveAcrossProcesses(t *testing.T) {
	if os.Getenv("ENFORCERD_PINLOCK_CHILD") != "" {
		_, err := enforcer.LockPinDir(os.Getenv("ENFORCERD_PINLOCK_CHILD"))
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(3)
		}
		os.Exit(0)
	}
	pin := filepath.Join(bpffsDir(t), "enforcerd")
	child := func() (int, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockPinDirIsExclusiveAcrossProcesses$")
		cmd.Env = append(os.Environ(), "ENFORCERD_PINLOCK_CHILD="+pin)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	unlock, err := enforcer.LockPinDir(pin)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := child(); code != 3 || !strings.Contains(out, "pin directory in use") || !strings.Contains(out, pin) {
		t.Fatalf("second lock while the first is held: exit %d %q, want refused naming the pin dir", code, out)
	}
	unlock()
	if code, out := child(); code != 0 {
		t.Fatalf("lock after unlock: exit %d %q", code, out)
	}
}
