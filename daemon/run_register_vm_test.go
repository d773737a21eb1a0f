package daemon_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/test/probe"
)

// runResult is one `enforcerd run` through the daemon.
type runResult struct {
	code           int
	stdout, stderr string
}

// enforcerdRun runs `enforcerd run` with the daemon's pins and socket,
// flags, then "--" and argv, with env added to this process's.
func (e *vmEnv) enforcerdRun(env []string, flags []string, argv ...string) runResult {
	e.t.Helper()
	args := append([]string{"run", "--pin-dir", e.pin, "--socket", e.sock}, flags...)
	cmd := exec.Command(e.bin, append(append(args, "--"), argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return runResult{code, stdout.String(), stderr.String()}
}

// TestVMRunExecGateNamesTheInit: `enforcerd run --shell none` through a
// daemon whose pending checker looks every millisecond. The registration
// is pending with the exec gate as its init, so nothing activates it
// before the gate's exec of CMD: that first exec is allowed (and puts CMD
// on the allow list), CMD's own later exec is denied (EPERM) and its side
// effect absent. Without shell=none (control) the same exec removes the
// file. A registration activated before CMD's exec would deny CMD itself
// (it is not on the allow list then): the probe would not report.
func TestVMRunExecGateNamesTheInit(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19493", "pending:\n  check_interval: 1ms\n")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "victim")
	reset := func() {
		t.Helper()
		if err := os.WriteFile(file, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	present := func() bool { _, err := os.Lstat(file); return err == nil }
	env := probe.Env("exec", "/bin/sh", "-c", "rm -f "+file)

	// (a) Control: through the daemon, without shell=none, the probe's
	// exec of /bin/sh removes the file.
	reset()
	r := e.enforcerdRun(env, nil, self)
	if res, err := probe.ParseResult([]byte(r.stdout)); r.code != 0 || err != nil || res.Errno != 0 || res.Setup != "" || present() {
		t.Fatalf("control: exit %d, result %v %v, file present %v\nstderr: %s", r.code, res, err, present(), r.stderr)
	}
	// (b) shell=none: the probe runs (the gate's exec of it is the
	// activating first exec), its exec of /bin/sh is denied.
	for i := 0; i < 5; i++ {
		reset()
		r = e.enforcerdRun(env, []string{"--shell=none"}, self)
		res, err := probe.ParseResult([]byte(r.stdout))
		if err != nil || r.code != 0 {
			t.Fatalf("run %d --shell=none: the probe did not report (its own exec denied?): exit %d, %v\nstdout: %s\nstderr: %s", i, r.code, err, r.stdout, r.stderr)
		}
		if res.Errno != syscall.EPERM || !present() {
			t.Fatalf("run %d --shell=none: the probe's exec of /bin/sh: %v, file present %v; want EPERM and the file kept\nstderr: %s", i, res, present(), r.stderr)
		}
	}
}

// TestVMRunThroughTheDaemon: with a daemon on --socket, run's cgroup is
// one of the daemon's containers while CMD runs (GET /v1/containers: the
// run's cgroup, its ceiling, activated at the exec of CMD with the exec
// gate as init, not at once), and it is gone once run returned.
func TestVMRunThroughTheDaemon(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19494")
	dir := t.TempDir()
	started, done := filepath.Join(dir, "started"), filepath.Join(dir, "done")
	cmd := exec.Command(e.bin, "run", "--pin-dir", e.pin, "--socket", e.sock, "--network=deny", "--",
		"/bin/sh", "-c", `echo $$ > "$0"; while [ ! -e "$1" ]; do sleep 0.05; done`, started, done)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	c := api.NewClient(e.sock, 5*time.Second)
	name := "enforcerd-run-" + strconv.Itoa(cmd.Process.Pid)
	var pid int
	for deadline := time.Now().Add(60 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("CMD did not start; stderr: %s", stderr.String())
		}
		if b, err := os.ReadFile(started); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	find := func() (api.Container, bool) {
		t.Helper()
		cs, err := c.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range cs {
			if filepath.Base(ct.Cgroup) == name {
				return ct, true
			}
		}
		return api.Container{}, false
	}
	ct, ok := find()
	if !ok {
		t.Fatalf("the daemon does not list the run's cgroup %s while CMD runs; stderr: %s", name, stderr.String())
	}
	// CMD (the shell) is the exec gate's process: its pid is the init.
	if ct.InitPID != pid || ct.Kernel.Network || ct.State != "active" || ct.Activation != "at-exec" || ct.ActivationReason != "" {
		t.Errorf("container %s: init_pid %d (CMD is %d), kernel %s, state %q, activation %q (%q); want CMD as init, network=false, active at exec",
			ct.ID, ct.InitPID, pid, ct.Kernel, ct.State, ct.Activation, ct.ActivationReason)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v; stderr: %s", err, stderr.String())
	}
	if ct, ok := find(); ok {
		t.Errorf("container %s (cgroup %s) still listed after run returned", ct.ID, ct.Cgroup)
	}
	if _, err := os.Stat(filepath.Join(e.mount, ct.Cgroup)); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there after run returned: %v", ct.Cgroup, err)
	}
}

// TestVMRunExecAllowThroughTheDaemon: `enforcerd run --shell=none
// --exec-allow FILE` through a daemon registers the list with the daemon
// (it is no longer installed behind the daemon's back). Tri-state, with
// two identical static programs (enforcerd and a copy of it, another
// inode): (a) without shell=none the probe runs the copy; (b) with
// shell=none and the original on the list, the probe runs the original
// ("enforcerd version" prints its version) and its exec of the copy is
// denied (EPERM), which then prints nothing.
func TestVMRunExecAllowThroughTheDaemon(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19495")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e.bin)
	if err != nil {
		t.Fatal(err)
	}
	twin := filepath.Join(t.TempDir(), "enforcerd-twin")
	if err := os.WriteFile(twin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	runs := func(r runResult) probe.Result {
		t.Helper()
		res, err := probe.ParseResult([]byte(r.stdout))
		if err != nil || r.code != 0 || res.Setup != "" {
			t.Fatalf("run: exit %d, result %v, %v\nstdout: %s\nstderr: %s", r.code, res, err, r.stdout, r.stderr)
		}
		return res
	}
	// (a) control: no shell=none, the copy runs.
	if res := runs(e.enforcerdRun(probe.Env("exec", twin, "version"), nil, self)); res.Errno != 0 || res.Exit != 0 || !strings.Contains(res.Out, "enforcerd") {
		t.Fatalf("control: exec of the copy: %v, want it to run", res)
	}
	flags := []string{"--shell=none", "--exec-allow", e.bin}
	// (b) the listed file runs.
	if res := runs(e.enforcerdRun(probe.Env("exec", e.bin, "version"), flags, self)); res.Errno != 0 || res.Exit != 0 || !strings.Contains(res.Out, "enforcerd") {
		t.Fatalf("--exec-allow %s: exec of it: %v, want it to run", e.bin, res)
	}
	// (b) the unlisted copy is denied and prints nothing.
	if res := runs(e.enforcerdRun(probe.Env("exec", twin, "version"), flags, self)); res.Errno != syscall.EPERM || strings.Contains(res.Out, "enforcerd") {
		t.Fatalf("BYPASS: --exec-allow %s: exec of an unlisted copy: %v, want EPERM and no output", e.bin, res)
	}
	// The daemon recorded the list: its audit log has the registration.
	audit, _ := os.ReadFile(e.audit)
	if !strings.Contains(string(audit), "enforcerd-run-") {
		t.Errorf("the daemon's audit log has no registration of the run's cgroup:\n%s", audit)
	}
}
