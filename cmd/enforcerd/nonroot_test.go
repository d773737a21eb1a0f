package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// TestNonRootSaysNeedsRoot: run, check and daemon started by a user other
// than root say "needs root" (run: exit 125, the workload never ran;
// check, daemon: exit 1), not the permission error of a bpffs write; and
// CMD does not run.
func TestNonRootSaysNeedsRoot(t *testing.T) {
	testroot.Require(t, "the test drops from root to uid 65534")
	dir, err := os.MkdirTemp("", "enforcerd-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "enforcerd")
	src, err := os.Open(clitest.Bin(t))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(dst, src)
	src.Close()
	dst.Close()
	mark := filepath.Join(dir, "ran")
	os.Chmod(dir, 0o777)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "--network=deny", "--", "/bin/sh", "-c", "touch " + mark}, cli.ExitCannotEnforce},
		{[]string{"check"}, cli.ExitFailure},
		{[]string{"daemon"}, cli.ExitFailure},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code ||
			!strings.HasPrefix(stderr.String(), "enforcerd "+tc.args[0]+": needs root (running as uid 65534)") {
			t.Errorf("%q as uid 65534: %v, stderr %q; want exit %d saying needs root", tc.args, err, stderr.String(), tc.code)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("run as non-root ran CMD")
	}
}
