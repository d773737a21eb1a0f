package daemon_test

// systemd-nspawn machines under systemd as PID 1 (the Debian guest), with
// the daemon installed from the release tarball by its install.sh and the
// release's drop-in for systemd-nspawn@.service: the unit started with
// systemctl start and machinectl start (machined registration on), and
// one-off machines through the documented systemd-run --scope -p
// Delegate=yes enforcerd nspawn ... command.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// The machine of the unit tests: systemd-nspawn@vmtest-agent.service,
// its tree in /var/lib/machines (where the unit and machinectl look),
// its registration id (the drop-in's ExecStopPost= unregisters it).
const (
	unitMachine    = "vmtest-agent"
	unitMachineDir = "/var/lib/machines/" + unitMachine
	unitMachineSvc = "systemd-nspawn@" + unitMachine + ".service"
	unitMachineID  = "nspawn-" + unitMachine
	// unitMachineCeiling is the ceiling under test, with the write root /w.
	unitMachineCeiling = "network=false,write=false,shell=none"
	unitMachineAllow   = "network=true,write=true"
	unitMachineFlags   = "--write-root /w"
)

// nspawn-unit-agent is the command of those machines (this test binary,
// static, at /agent): nspawn-agent's actions (a TCP connect to a[0]
// first), its line printed and written to /w/result (inside the write
// root), then it waits for /w/release (at most 3 minutes) so that the
// test sees the machine running.
func init() {
	probe.Register("nspawn-unit-agent", func(r *probe.Result, a []string) {
		line := nspawnAgentActions(a[0])
		fmt.Println(line)
		if err := os.WriteFile("/w/result", []byte(line+"\n"), 0o644); err != nil {
			r.Setup = "write /w/result: " + err.Error()
			return
		}
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat("/w/release"); err == nil {
				return
			}
		}
	})
}

// unitNspawn is the machine tree, the listener its agent connects to and
// the installed daemon's client.
type unitNspawn struct {
	addr   string
	hits   *atomic.Int64
	env    []string // the agent's probe environment
	client *api.Client
	// whileRunning, when set, runs while a machine runs (its agent has
	// written its result), with the machine's cgroup.
	whileRunning func(cg string)
}

// machineOutcome is one start: what the start command said, the agent's
// line, the registration while it ran, nspawn's cgroup and machined's
// record, and how it ended.
type machineOutcome struct {
	startErr   string // "" when the start command succeeded
	mainStart  string // the unit's ExecMainStartTimestampMonotonic after a failed start
	result     string // the agent's line; "" when it never ran
	cgroup     string // the machine's cgroup (the unit's or the scope's)
	reg        api.Container
	regErr     error
	supervisor bool   // systemd-nspawn ran in <machine>/supervisor
	machineOf  string // machined's Unit= of the machine ("" when not registered)
	ended      string // the unit's Result=, or the one-off's exit status
	unregd     bool   // the registration was gone after the machine ended
	took       time.Duration
}

// newUnitNspawn writes the machine tree (its /usr the guest's, bound
// read-only; /bin, /lib... links into it; this test binary as /agent; /w
// the write root), its .nspawn file (Boot=no, Parameters=/agent, the
// host's network, no user namespace) and installs the release's drop-in
// for systemd-nspawn@.service.
func newUnitNspawn(t *testing.T, top string) *unitNspawn {
	t.Helper()
	for _, d := range []string{"usr", "etc", "w", "proc", "sys", "dev", "run", "tmp", "var"} {
		if err := os.MkdirAll(filepath.Join(unitMachineDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(unitMachineDir, l)); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, "cp /proc/"+fmt.Sprint(os.Getpid())+"/exe "+unitMachineDir+"/agent")
	if err := os.WriteFile(filepath.Join(unitMachineDir, "etc/os-release"), []byte("ID=agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h := &unitNspawn{addr: ln.Addr().String(), hits: &atomic.Int64{}, client: api.NewClient(unitSocket, 10*time.Second)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.hits.Add(1)
			c.Close()
		}
	}()
	h.env = probe.Env("nspawn-unit-agent", h.addr)
	nsf := "[Exec]\nBoot=no\nParameters=/agent\nPrivateUsers=no\n"
	for _, kv := range h.env {
		// Single quotes: nspawn unquotes the value, and the probe's
		// arguments are JSON with double quotes.
		nsf += "Environment='" + kv + "'\n"
	}
	nsf += "[Files]\nBindReadOnly=/usr\n[Network]\nVirtualEthernet=no\n"
	writeFile(t, "/etc/systemd/nspawn/"+unitMachine+".nspawn", nsf)
	dropIn, err := os.ReadFile(filepath.Join(top, "deploy/nspawn/enforcerd.conf"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, "/etc/systemd/system/systemd-nspawn@.service.d/enforcerd.conf", string(dropIn))
	sh(t, "systemctl daemon-reload")
	t.Cleanup(func() {
		exec.Command("systemctl", "stop", unitMachineSvc).Run()
		exec.Command("systemctl", "reset-failed", unitMachineSvc).Run()
		for _, p := range []string{"/etc/systemd/nspawn/" + unitMachine + ".nspawn", "/etc/systemd/system/systemd-nspawn@.service.d",
			unitMachineEnv, unitMachineDir} {
			os.RemoveAll(p)
		}
		exec.Command("systemctl", "daemon-reload").Run()
	})
	return h
}

// writeFile writes text to path, creating its directory.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unitMachineEnv is the machine's environment file for the drop-in.
const unitMachineEnv = "/etc/enforcerd/nspawn/" + unitMachine + ".env"

// setCeiling gives the unit's machine ceiling and flags in its
// environment file (the way deploy/nspawn/enforcerd.conf documents; read
// at each start).
func (h *unitNspawn) setCeiling(t *testing.T, ceiling, flags string) {
	t.Helper()
	writeFile(t, unitMachineEnv, fmt.Sprintf("ENFORCERD_CEILING=%s\nENFORCERD_NSPAWN_FLAGS=%s\n", ceiling, flags))
}

// exists says whether the machine's tree holds name.
func (h *unitNspawn) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(unitMachineDir, name))
	return err == nil
}

// clean removes what an agent created and the release file.
func (h *unitNspawn) clean(t *testing.T) {
	t.Helper()
	for _, n := range []string{"probe", "w/root", "w/probe-sh", "w/result", "w/release"} {
		if err := os.Remove(filepath.Join(unitMachineDir, n)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// awaitResult waits (within) for the agent's line in /w/result, or for
// gone to say the machine is gone; "" when there is none.
func (h *unitNspawn) awaitResult(within time.Duration, gone func() bool) string {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(unitMachineDir, "w/result")); bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		if gone() {
			return ""
		}
	}
	return ""
}

// observe records, while the machine in cgroup cg runs, its registration
// id, whether systemd-nspawn is in cg/supervisor and machined's record of
// machine; then runs whileRunning.
func (h *unitNspawn) observe(o *machineOutcome, cg, id, machine string) {
	o.cgroup = cg
	o.reg, o.regErr = h.client.Get(context.Background(), id)
	nspawn, _ := exec.LookPath("systemd-nspawn")
	nst, _ := os.Stat(nspawn)
	b, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", cg, "supervisor/cgroup.procs"))
	for _, p := range strings.Fields(string(b)) {
		if st, err := os.Stat("/proc/" + p + "/exe"); err == nil && nst != nil && os.SameFile(st, nst) {
			o.supervisor = true
		}
	}
	out, _ := exec.Command("machinectl", "show", machine, "--property=Unit", "--value").Output()
	o.machineOf = strings.TrimSpace(string(out))
	if h.whileRunning != nil {
		h.whileRunning(cg)
	}
}

// release lets the agent end.
func (h *unitNspawn) release(t *testing.T) {
	t.Helper()
	writeFile(t, filepath.Join(unitMachineDir, "w/release"), "")
}

// unitStates is the unit's ActiveState.
func unitState(unit string) string {
	out, _ := exec.Command("systemctl", "show", "-P", "ActiveState", unit).Output()
	return strings.TrimSpace(string(out))
}

// startUnit starts the machine's unit with how ("systemctl start UNIT" or
// "machinectl start NAME"), observes it while it runs, releases the agent
// and waits for the unit to end.
func (h *unitNspawn) startUnit(t *testing.T, how string) (o machineOutcome) {
	t.Helper()
	t0 := time.Now()
	defer func() { o.took = time.Since(t0) }()
	if out, err := exec.Command("/bin/sh", "-c", how).CombinedOutput(); err != nil {
		j, _ := exec.Command("/bin/sh", "-c", "journalctl -b --no-pager --since=@"+fmt.Sprint(t0.Unix()-1)+" | tail -n 40").Output()
		o.startErr = fmt.Sprintf("%v: %s\njournal since the start:\n%s", err, bytes.TrimSpace(out), j)
		if b, err := os.ReadFile(filepath.Join(unitMachineDir, "w/result")); err == nil {
			o.result = string(b)
		}
		o.ended = unitProp(t, unitMachineSvc, "Result")
		o.mainStart = unitProp(t, unitMachineSvc, "ExecMainStartTimestampMonotonic")
		sh(t, "systemctl reset-failed "+unitMachineSvc)
		return o
	}
	o.result = h.awaitResult(60*time.Second, func() bool {
		s := unitState(unitMachineSvc)
		return s != "active" && s != "activating"
	})
	if o.result != "" {
		h.observe(&o, unitProp(t, unitMachineSvc, "ControlGroup"), unitMachineID, unitMachine)
	}
	h.release(t)
	awaitCond(t, 60*time.Second, unitMachineSvc+" did not end after its agent's release", func() bool {
		s := unitState(unitMachineSvc)
		return s == "inactive" || s == "failed"
	})
	o.ended = unitProp(t, unitMachineSvc, "Result")
	_, err := h.client.Get(context.Background(), unitMachineID)
	o.unregd = err != nil
	if o.ended != "success" {
		exec.Command("systemctl", "reset-failed", unitMachineSvc).Run()
	}
	return o
}

// oneOffArgv is the documented one-off command line: systemd-run --scope
// -p Delegate=yes enforcerd nspawn ... -- nspawn's arguments (machined
// registration on: no --register=no).
func (h *unitNspawn) oneOffArgv(name, ceiling string, flags ...string) []string {
	argv := []string{"systemd-run", "--scope", "-p", "Delegate=yes", "--quiet", "--unit=" + name,
		"enforcerd", "nspawn", "--ceiling", ceiling}
	argv = append(argv, flags...)
	argv = append(argv, "--", "--quiet", "--pipe", "--machine="+name, "-D", unitMachineDir, "--bind-ro=/usr")
	for _, kv := range h.env {
		argv = append(argv, "--setenv="+kv)
	}
	return append(argv, "/agent")
}

// startOneOff runs a one-off machine named name (its scope name.scope,
// its registration nspawn-NAME), observes it while it runs, releases the
// agent and waits for the command to end.
func (h *unitNspawn) startOneOff(t *testing.T, name string, argv []string) (o machineOutcome) {
	t.Helper()
	t0 := time.Now()
	defer func() { o.took = time.Since(t0) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	ended := false
	o.result = h.awaitResult(60*time.Second, func() bool {
		select {
		case err = <-done:
			ended = true
		default:
		}
		return ended
	})
	if o.result != "" {
		h.observe(&o, unitProp(t, name+".scope", "ControlGroup"), "nspawn-"+name, name)
	}
	h.release(t)
	if !ended {
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%v did not end after its agent's release; output:\n%s", argv, buf.String())
		}
	}
	o.ended = "exit 0"
	if ee, ok := err.(*exec.ExitError); ok {
		o.ended = fmt.Sprintf("exit %d", ee.ExitCode())
	} else if err != nil {
		t.Fatal(err)
	}
	o.startErr = buf.String()
	return o
}

// stopDaemon stops enforcerd.service and enforcerd.socket and checks
// nothing listens on the socket any more (systemd leaves the file:
// RemoveOnStop=no).
func stopDaemon(t *testing.T) {
	t.Helper()
	sh(t, "systemctl stop enforcerd.service enforcerd.socket")
	if c, err := net.Dial("unix", unitSocket); err == nil {
		c.Close()
		t.Fatalf("%s accepts a connection with enforcerd.socket and enforcerd.service stopped", unitSocket)
	}
}

// unitNspawnDenied says whether line shows the agent's connect (at
// socket(2) or connect(2)), its write outside /w and its exec of /bin/sh
// denied with EPERM, and its write in the root /w allowed.
func unitNspawnDenied(addr, line string) bool {
	for _, op := range []string{"socket", "connect"} {
		if line == "connect=dial tcp "+addr+": "+op+": operation not permitted root=ok write=open /probe: operation not permitted exec=operation not permitted" {
			return true
		}
	}
	return false
}

// confined checks a start under the ceiling: it started and ended well,
// the agent's first action (the connect) and the rest denied, the
// effects absent (hits is the listener's count before the start), the
// registration active from the agent's exec (the inner child adopted, no
// intruder), nspawn in <machine>/supervisor, machined's record naming
// unit, and the registration gone afterwards when wantUnregd.
func (h *unitNspawn) confined(t *testing.T, what string, o machineOutcome, hits int64, unit string, wantUnregd bool) bool {
	t.Helper()
	if h.hits.Load() != hits || h.exists("probe") || h.exists("w/probe-sh") {
		t.Fatalf("BYPASS: %s: listener %d (want %d), /probe %v, /w/probe-sh %v; agent: %q",
			what, h.hits.Load(), hits, h.exists("probe"), h.exists("w/probe-sh"), o.result)
	}
	ok := true
	if !unitNspawnDenied(h.addr, o.result) || !h.exists("w/root") {
		t.Errorf("%s: agent %q (want connect, /probe and exec EPERM, /w/root created: %v); start: %s", what, o.result, h.exists("w/root"), o.startErr)
		ok = false
	}
	if c := o.reg; o.regErr != nil || c.State != state.StateActive || c.Activation != state.ActivationAtExec || c.ActivationReason != "" ||
		c.Cgroup != o.cgroup+"/payload" {
		t.Errorf("%s: registration %s %s %q of %s (want active at exec, no reason, %s/payload): %v", what, c.State, c.Activation, c.ActivationReason, c.Cgroup, o.cgroup, o.regErr)
		ok = false
	}
	if !o.supervisor || o.machineOf != unit {
		t.Errorf("%s: nspawn in <machine>/supervisor %v, machined's unit %q (want %s)", what, o.supervisor, o.machineOf, unit)
		ok = false
	}
	if (o.ended != "success" && o.ended != "exit 0") || (wantUnregd && !o.unregd) {
		t.Errorf("%s: ended %q, unregistered afterwards %v", what, o.ended, o.unregd)
		ok = false
	}
	return ok
}

// neverStarted checks a refused start: the agent never ran (no line, no
// connection), machined has no such machine.
func (h *unitNspawn) neverStarted(t *testing.T, what string, o machineOutcome, hits int64, machine string) {
	t.Helper()
	out, err := exec.Command("machinectl", "show", machine, "--property=Unit", "--value").CombinedOutput()
	if o.result != "" || h.hits.Load() != hits || err == nil {
		t.Errorf("%s: the machine started: agent %q, listener %d (want %d), machinectl show: %v %s", what, o.result, h.hits.Load(), hits, err, out)
	}
}

// TestVMSystemdUnitNspawn: systemd-nspawn machines confined from their
// first instruction under systemd as PID 1, the daemon installed from the
// release (install.sh) and the release's drop-in for
// systemd-nspawn@.service; machined registration on. Tri-state over
// network=false, write=false with the write root /w, and shell=none: (a)
// under network=true,write=true (the unit's ceiling drop-in) the agent
// connects, creates /probe and runs /bin/sh with their effects; (b) under
// the ceiling each is EPERM and (c) their effects are absent, /w/root is
// created. 20 consecutive unit starts (every other one with machinectl
// start; the 11th with enforcerd.socket and enforcerd.service stopped,
// nothing listening: the drop-in's Requires= starts the socket again),
// each with the agent's first action (a connect) EPERM, nspawn in
// <machine>/supervisor and outside the ceiling (a process there connects,
// once), the registration active at the agent's exec, machined's record
// naming the unit, and ExecStopPost= unregistering. A start whose
// registration is refused, or whose daemon cannot be reached, never runs
// nspawn. Then the documented one-off command (systemd-run --scope -p
// Delegate=yes enforcerd nspawn ...): a control, 3 starts under the
// ceiling, and one with the daemon down (socket unit stopped, nothing
// listening), which never starts.
func TestVMSystemdUnitNspawn(t *testing.T) {
	vmtest.RequireDebianGuest(t)
	vmtest.RequireLSM(t, nil)
	dist := os.Getenv("ENFORCERD_VMTEST_DIST")
	if dist == "" {
		t.Fatal("ENFORCERD_VMTEST_DIST is not set: scripts/vmtest --rootfs debian packs the release tarball for packages with testdata/needs-dist")
	}
	t0 := time.Now()
	top := unpackDist(t, dist)
	// The daemon's first start loads its programs: under TCG on a loaded
	// host that has taken longer than systemd's default 90 s.
	// The shipped unit as it is (no RestrictSUIDSGID=, whose seccomp filter
	// fails openat2 with ENOSYS: a shell=none machine's entrypoint, vetted
	// inside its root with openat2, would be refused), with a longer start
	// timeout only.
	writeFile(t, "/etc/systemd/system/enforcerd.service.d/vmtest-nspawn.conf", "[Service]\nTimeoutStartSec=5min\n")
	installFromDist(t, top)
	t.Cleanup(func() {
		os.RemoveAll("/etc/systemd/system/enforcerd.service.d")
		exec.Command("systemctl", "stop", "enforcerd.service", "enforcerd.socket").Run()
		if out, err := exec.Command("/bin/sh", "-c", "cd "+top+" && ./uninstall.sh --purge").CombinedOutput(); err != nil {
			t.Errorf("uninstall.sh --purge: %v\n%s", err, out)
		}
	})
	h := newUnitNspawn(t, top)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("journal:\n%s", sh(t, "journalctl -b -u "+unitMachineSvc+" -u enforcerd.service -u enforcerd.socket -u systemd-machined.service --no-pager | tail -n 120"))
		}
	})
	t.Logf("install and machine tree: %s", time.Since(t0).Round(time.Millisecond))

	// (a) Control through the unit: the ceiling allows everything; the
	// shipped drop-in's empty ENFORCERD_NSPAWN_FLAGS adds no argument.
	t1 := time.Now()
	h.setCeiling(t, unitMachineAllow, "")
	o := h.startUnit(t, "systemctl start "+unitMachineSvc)
	if o.startErr != "" || o.result != "connect=ok root=ok write=ok exec=ok" || h.hits.Load() != 1 || !h.exists("probe") || !h.exists("w/probe-sh") ||
		o.reg.State != state.StateActive || o.reg.ActivationReason != "" || o.ended != "success" || !o.unregd {
		t.Fatalf("control machine: start %q, agent %q, listener %d, /probe %v, /w/probe-sh %v, registration %s %q, ended %q, unregistered %v",
			o.startErr, o.result, h.hits.Load(), h.exists("probe"), h.exists("w/probe-sh"), o.reg.State, o.reg.ActivationReason, o.ended, o.unregd)
	}
	h.clean(t)
	t.Logf("unit control: %s", time.Since(t1).Round(time.Millisecond))

	// (b) + (c): 20 consecutive starts under the ceiling.
	h.setCeiling(t, unitMachineCeiling, unitMachineFlags)
	var supOut string
	var supHits int64
	h.whileRunning = func(cg string) {
		before := h.hits.Load()
		defer func() { supHits = h.hits.Load() - before }()
		dir, err := os.Open(filepath.Join("/sys/fs/cgroup", cg, "supervisor"))
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = probe.Env("tcp-connect", h.addr)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
		b, _ := cmd.CombinedOutput()
		supOut = string(b)
	}
	const starts = 20
	var denied, failed int
	var took time.Duration
	for i := range starts {
		how := "systemctl start " + unitMachineSvc
		if i%2 == 1 {
			how = "machinectl start " + unitMachine
		}
		if i == 10 {
			// The daemon down: the start brings it up through the
			// socket (Requires=); its cold start may exceed the
			// default 8 s --timeout under TCG.
			stopDaemon(t)
			h.setCeiling(t, unitMachineCeiling, unitMachineFlags+" --timeout 80s")
		}
		hits := h.hits.Load()
		o := h.startUnit(t, how)
		switch i {
		case 0:
			h.whileRunning = nil
			if hits += supHits; supHits != 1 {
				t.Errorf("a process in <machine>/supervisor while the payload's ceiling is in force did not connect (%d connections): %s", supHits, supOut)
			}
		case 10:
			h.setCeiling(t, unitMachineCeiling, unitMachineFlags)
			if st := unitState("enforcerd.service"); st != "active" {
				t.Errorf("enforcerd.service after a machine's start with the socket stopped: %s, want active (the drop-in's Requires= started the socket)", st)
			}
		}
		if o.startErr != "" {
			failed++
		}
		if h.confined(t, fmt.Sprintf("start %d (%s)", i, how), o, hits, unitMachineSvc, true) {
			denied++
		}
		took += o.took
		h.clean(t)
	}
	t.Logf("unit: %d starts under %s: first connect EPERM (and the rest denied, effects absent) in %d, failed starts %d; %s a start",
		starts, unitMachineCeiling, denied, failed, (took / starts).Round(time.Millisecond))

	// Refused before nspawn runs: the unit's ExecStartPre= fails.
	for _, tc := range []struct{ what, ceiling, flags, msg string }{
		{"registration refused", "network=maybe", "", "refusing to start it"},
		{"daemon unreachable (no socket at the path)", unitMachineCeiling, unitMachineFlags + " --socket /run/enforcerd/absent.sock --timeout 2s", "refusing to start it"},
	} {
		h.setCeiling(t, tc.ceiling, tc.flags)
		before := unitProp(t, unitMachineSvc, "ExecMainStartTimestampMonotonic")
		hits := h.hits.Load()
		o := h.startUnit(t, "systemctl start "+unitMachineSvc)
		if o.startErr == "" || o.ended != "exit-code" || o.mainStart != before {
			t.Errorf("%s: start %q, unit result %q, nspawn's start time %s -> %s: want the start failed at ExecStartPre, nspawn never run",
				tc.what, o.startErr, o.ended, before, o.mainStart)
		}
		h.neverStarted(t, tc.what, o, hits, unitMachine)
		if j := sh(t, "journalctl -b -u "+unitMachineSvc+" --no-pager | tail -n 20"); !strings.Contains(j, tc.msg) {
			t.Errorf("%s: the unit's journal does not say %q:\n%s", tc.what, tc.msg, j)
		}
		h.clean(t)
	}
	os.Remove(unitMachineEnv)
	t.Logf("unit total: %s", time.Since(t1).Round(time.Millisecond))

	// The one-off command: a control, 3 starts under the ceiling.
	t2 := time.Now()
	hits := h.hits.Load()
	o = h.startOneOff(t, "vmtest-oneoff-ctl", h.oneOffArgv("vmtest-oneoff-ctl", unitMachineAllow))
	if o.result != "connect=ok root=ok write=ok exec=ok" || h.hits.Load() != hits+1 || !h.exists("probe") || !h.exists("w/probe-sh") ||
		o.reg.State != state.StateActive || o.reg.ActivationReason != "" || o.ended != "exit 0" {
		t.Fatalf("one-off control: agent %q, listener %d (want %d), /probe %v, /w/probe-sh %v, registration %s %q %v, %s; output:\n%s",
			o.result, h.hits.Load(), hits+1, h.exists("probe"), h.exists("w/probe-sh"), o.reg.State, o.reg.ActivationReason, o.regErr, o.ended, o.startErr)
	}
	h.clean(t)
	const oneOffs = 3
	denied = 0
	for i := range oneOffs {
		name := fmt.Sprintf("vmtest-oneoff-%d", i)
		hits := h.hits.Load()
		o := h.startOneOff(t, name, h.oneOffArgv(name, unitMachineCeiling, strings.Fields(unitMachineFlags)...))
		if h.confined(t, "one-off "+name, o, hits, name+".scope", false) {
			denied++
		}
		h.clean(t)
	}
	t.Logf("one-off: %d starts under %s: first connect EPERM in %d", oneOffs, unitMachineCeiling, denied)

	// The daemon down: the one-off never starts nspawn.
	stopDaemon(t)
	hits = h.hits.Load()
	o = h.startOneOff(t, "vmtest-oneoff-down", h.oneOffArgv("vmtest-oneoff-down", unitMachineCeiling, "--timeout", "2s"))
	if o.ended != "exit 125" {
		t.Errorf("daemon down: one-off %s (want exit 125, nspawn never run); output:\n%s", o.ended, o.startErr)
	}
	h.neverStarted(t, "one-off, daemon down", o, hits, "vmtest-oneoff-down")
	t.Logf("one-off total: %s; the whole test: %s", time.Since(t2).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
}
