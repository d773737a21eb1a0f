package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// startGated starts path argv... through the exec gate (this test binary,
// TestMain dispatching GateArg) and returns the command and its gate.
func startGated(t *testing.T, path string, args ...string) (*exec.Cmd, *gate) {
	t.Helper()
	c := &exec.Cmd{Path: path, Args: append([]string{path}, args...), Stderr: os.Stderr}
	g, err := wrapGate(c, "/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start()
	g.started()
	if err != nil {
		t.Fatal(err)
	}
	return c, g
}

// exitOf is c's exit status after Wait.
func exitOf(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	err := c.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode()
}

// TestGateReleaseRunsTheCommand: released, the gate execs the command
// (its side effect is there, its exit status is the command's).
func TestGateReleaseRunsTheCommand(t *testing.T) {
	f := filepath.Join(t.TempDir(), "ran")
	c, g := startGated(t, "/bin/sh", "-c", `echo ran > "$0"; exit 3`, f)
	if err := g.release(); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, c); code != 3 {
		t.Fatalf("exit %d, want the command's 3", code)
	}
	if b, err := os.ReadFile(f); err != nil || string(b) != "ran\n" {
		t.Fatalf("side effect: %q, %v", b, err)
	}
}

// TestGateAbortNeverRunsTheCommand: the pipe closed without the release
// byte, the gate exits GateAborted and the command never runs (its side
// effect is absent); the same command released does run (control).
func TestGateAbortNeverRunsTheCommand(t *testing.T) {
	dir := t.TempDir()
	for _, release := range []bool{true, false} {
		f := filepath.Join(dir, fmt.Sprint(release))
		c, g := startGated(t, "/bin/sh", "-c", `echo ran > "$0"`, f)
		want := GateAborted
		if release {
			want = 0
			if err := g.release(); err != nil {
				t.Fatal(err)
			}
		} else {
			g.abort()
		}
		if code := exitOf(t, c); code != want {
			t.Fatalf("release=%v: exit %d, want %d", release, code, want)
		}
		_, err := os.Stat(f)
		if release && err != nil {
			t.Fatalf("control: the released command did not run: %v", err)
		}
		if !release && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("aborted gate: the command ran (stat: %v)", err)
		}
	}
}

// TestGatePipeDoesNotLeak: the command holds no descriptor of the gate's
// pipe (by inode: every link of its /proc/PID/fd is listed).
func TestGatePipeDoesNotLeak(t *testing.T) {
	c := &exec.Cmd{Path: "/bin/sh", Args: []string{"/bin/sh", "-c", `for f in /proc/$$/fd/*; do readlink "$f" || :; done`}}
	var out strings.Builder
	c.Stdout, c.Stderr = &out, os.Stderr
	g, err := wrapGate(c, "/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(g.r.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	pipe := fmt.Sprintf("pipe:[%d]", st.Ino)
	err = c.Start()
	g.started()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.release(); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, c); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "/dev/") && !strings.Contains(out.String(), "pipe:") {
		t.Fatalf("the listing shows no descriptor at all (%q): it proves nothing", out.String())
	}
	if strings.Contains(out.String(), pipe) {
		t.Fatalf("the command holds the gate's pipe %s:\n%s", pipe, out.String())
	}
}

// TestGateExecFailures: a missing program is 127, one that is not
// executable 126, as a shell reports them; nothing runs.
func TestGateExecFailures(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\necho ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{filepath.Join(dir, "missing"): GateNotFound, noexec: GateNotExecutable} {
		c, g := startGated(t, path)
		if err := g.release(); err != nil {
			t.Fatal(err)
		}
		if code := exitOf(t, c); code != want {
			t.Errorf("%s: exit %d, want %d", path, code, want)
		}
	}
}
