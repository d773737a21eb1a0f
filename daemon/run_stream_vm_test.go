package daemon_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestVMRunPrintsItsDenialsFromTheDaemon: with a daemon reading the denial
// records of the same pins, `enforcerd run` prints its own denials from
// the daemon's stream (filtered by its cgroup id), and they are in the
// daemon's audit log too. Tri-state: the command's socket attempt fails
// with the ceiling (nc exits non-zero), the record is printed by run and
// present in the audit log; without the ceiling no denial is printed.
func TestVMRunPrintsItsDenialsFromTheDaemon(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19492")
	run := func(ceiling ...string) (int, string) {
		args := append([]string{"run", "--pin-dir", e.pin, "--socket", e.sock}, ceiling...)
		// nc by its path: BusyBox's shell runs a bare applet name in a
		// forked child that renames itself (prctl PR_SET_NAME, refused
		// under every ceiling), which would print a denial of its own.
		args = append(args, "--", "/bin/sh", "-c", "/bin/busybox nc -w 1 127.0.0.1 9 </dev/null ; exit 0")
		cmd := exec.Command(e.bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stderr.String()
	}
	// (a) no ceiling: nothing denied, nothing printed.
	if code, out := run(); code != 0 || strings.Contains(out, "enforcerd: denied") {
		t.Fatalf("control run: exit %d, stderr %q", code, out)
	}
	// (b) network=false: run prints the socket denial from the daemon.
	code, out := run("--network=deny")
	if code != 0 || !strings.Contains(out, "enforcerd: denied socket AF_INET") || strings.Contains(out, "not printing") {
		t.Fatalf("run --network=deny with a daemon: exit %d, stderr %q; want the denial printed from the daemon's stream", code, out)
	}
	// (c) and the daemon's audit log has it.
	b, err := os.ReadFile(e.audit)
	if err != nil || !strings.Contains(string(b), `"hook":"socket_create"`) {
		t.Errorf("audit log lacks the run's socket_create denial: %v\n%s", err, b)
	}
}
