package daemon_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// nspawn-agent is the command of a systemd-nspawn machine (this test
// binary, static, at /bin/agent in the machine's root): its first action
// is a TCP connect to a[0]; then it creates /w/root (a write root under
// write=false) and /probe, and runs /bin/sh (BusyBox) to create
// /w/probe-sh; it prints each outcome.
func init() {
	probe.Register("nspawn-agent", func(r *probe.Result, a []string) {
		fmt.Println(nspawnAgentActions(a[0]))
	})
}

// nspawnAgentActions is what nspawn-agent does, in order, and its line
// "connect=... root=... write=... exec=..." (each "ok" or the error).
func nspawnAgentActions(addr string) string {
	outcome := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		conn.Close()
	}
	connect := outcome(err)
	create := func(name string) string {
		f, err := os.Create(name)
		if err == nil {
			f.Close()
		}
		return outcome(err)
	}
	root, write := create("/w/root"), create("/probe")
	sh := "ok"
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "touch /w/probe-sh"}, &syscall.ProcAttr{Env: []string{"PATH=/bin"}, Files: []uintptr{0, 1, 2}})
	if err != nil {
		sh = err.Error()
	} else {
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
	return fmt.Sprintf("connect=%s root=%s write=%s exec=%s", connect, root, write, sh)
}

// nspawnVM is a machine root and what its starts need.
type nspawnVM struct {
	e      *vmEnv
	root   string // the machine's root directory
	nspawn string // the systemd-nspawn binary
	addr   string // the listener the agent connects to
	hits   *atomic.Int64
	// afterRun, when set, runs once a start has ended, before its
	// machine cgroup is removed (and before its registration is).
	afterRun func(cg cgroup.Cgroup)
}

// newNspawnVM writes a machine root: BusyBox with sh and touch in /bin,
// this test binary as /bin/agent, /w for the write root, /usr and
// /etc/os-release (nspawn checks the tree).
func newNspawnVM(t *testing.T, e *vmEnv) *nspawnVM {
	t.Helper()
	// nspawn 252 finds no systemd in the machine's root and would mount a
	// legacy name=systemd hierarchy, visible in every process's
	// /proc/self/cgroup for the rest of the guest's life; the guest is
	// cgroup2-only, as the hosts the recipe is for.
	t.Setenv("SYSTEMD_NSPAWN_UNIFIED_HIERARCHY", "1")
	nspawn, err := exec.LookPath("systemd-nspawn")
	if err != nil {
		vmtest.Skip(t, "systemd-nspawn not installed (scripts/setup-deps installs systemd-container; scripts/vmtest packs it)")
	}
	root := filepath.Join(e.dir, "machine")
	for _, d := range []string{"bin", "usr", "etc", "w", "proc", "sys", "dev", "run", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, to), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("/bin/busybox", "bin/busybox")
	copyFile("/proc/self/exe", "bin/agent")
	for _, a := range []string{"sh", "touch"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID=agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	m := &nspawnVM{e: e, root: root, nspawn: nspawn, addr: ln.Addr().String(), hits: &atomic.Int64{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.hits.Add(1)
			c.Close()
		}
	}()
	return m
}

// exists says whether the machine's root holds name.
func (m *nspawnVM) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(m.root, name))
	return err == nil
}

// clean removes what an agent created.
func (m *nspawnVM) clean(t *testing.T) {
	for _, n := range []string{"probe", "w/root", "w/probe-sh"} {
		if err := os.Remove(filepath.Join(m.root, n)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// nspawnRun is one start's outcome.
type nspawnRun struct {
	code       int
	out        string
	innerSeen  bool // a process running systemd-nspawn was seen in the payload
	supervisor bool // nspawn's own process was seen in <machine>/supervisor
	reg        api.Container
}

// start runs argv (an enforcerd command line, or any other) directly in
// the machine cgroup /vmtest-nspawn/NAME (created fresh, removed after),
// watching the payload cgroup while it runs. When id is not "", the
// daemon's registration id is read (into nspawnRun.reg) and unregistered
// before the cgroup is removed.
func (m *nspawnVM) start(t *testing.T, name, id string, argv ...string) (r nspawnRun) {
	t.Helper()
	group := "/vmtest-nspawn/" + name
	cg, err := cgroup.Create(m.e.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if m.afterRun != nil {
			m.afterRun(cg)
		}
		if id != "" {
			r.reg = m.registration(t, id)
		}
		if err := cg.Remove(10 * time.Second); err != nil {
			t.Errorf("remove the machine cgroup: %v", err)
		}
	}()
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// A start that hangs fails the test, not the VM's time limit.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		nsp, _ := os.Stat(m.nspawn)
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, sub := range []string{"payload", "supervisor"} {
				b, _ := os.ReadFile(filepath.Join(cg.Path(), sub, "cgroup.procs"))
				for _, p := range strings.Fields(string(b)) {
					if st, err := os.Stat("/proc/" + p + "/exe"); err == nil && nsp != nil && os.SameFile(st, nsp) {
						if sub == "payload" {
							r.innerSeen = true
						} else {
							r.supervisor = true
						}
					}
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	err = cmd.Run()
	close(done)
	wg.Wait()
	r.out = buf.String()
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	// The payload cgroup may hold the machine's last processes briefly.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(cg.Path(), "payload", "cgroup.procs")); len(strings.TrimSpace(string(b))) == 0 {
			break
		}
	}
	return r
}

// allDenied says whether an agent's output shows its connect (denied at
// socket(2) or connect(2)), its write outside /w and its exec of /bin/sh
// denied with EPERM, and its write in the root /w allowed.
func (m *nspawnVM) allDenied(out string) bool {
	for _, op := range []string{"socket", "connect"} {
		if strings.Contains(out, "connect=dial tcp "+m.addr+": "+op+": operation not permitted root=ok write=open /probe: operation not permitted exec=operation not permitted\n") {
			return true
		}
	}
	return false
}

// oneOff is the command line of a one-off machine under ceiling.
func (m *nspawnVM) oneOff(id, ceiling string, extra ...string) []string {
	argv := []string{m.e.bin, "nspawn", "--socket", m.e.sock, "--id", id, "--ceiling", ceiling}
	argv = append(argv, extra...)
	argv = append(argv, "--", "--quiet", "--register=no", "--link-journal=no", "--pipe", "-D", m.root)
	for _, kv := range probe.Env("nspawn-agent", m.addr) {
		argv = append(argv, "--setenv="+kv)
	}
	return append(argv, "/bin/agent")
}

// registration returns the daemon's record of id and unregisters it.
func (m *nspawnVM) registration(t *testing.T, id string) api.Container {
	t.Helper()
	c := api.NewClient(m.e.sock, 5*time.Second)
	got, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("registration %s: %v", id, err)
	}
	if err := c.Unregister(context.Background(), id); err != nil {
		t.Fatalf("unregister %s: %v", id, err)
	}
	return got
}

// TestVMNspawnConfinedFromFirstInstruction runs real systemd-nspawn
// machines (Debian's, --register=no: no systemd in the VM) through
// enforcerd nspawn, each in a cgroup of its own as systemd-run --scope
// -p Delegate=yes or systemd-nspawn@.service gives it. Tri-state over
// network=false, write=false with the write root /w, and shell=none: (a)
// under a ceiling that allows everything the agent connects, creates
// /probe and runs /bin/sh, with their effects; (b) under the ceiling each
// is EPERM, (c) the listener sees nothing, /probe and /w/probe-sh are
// absent, while /w/root is created. nspawn (the supervisor, in
// <machine>/supervisor) stays outside the ceiling, the registration is
// activated by the agent's exec (nspawn's inner child in the payload
// before it was adopted, not an intruder), and in 20 consecutive starts
// the agent's first action, a connect under network=false, is EPERM and
// no start fails. The unit path (--prestart from ExecStartPre= with a
// Boot=no .nspawn file, then nspawn as systemd-nspawn@.service runs it)
// holds the same way. A machine whose registration fails, whose daemon
// is down, or that boots, never starts.
func TestVMNspawnConfinedFromFirstInstruction(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19467", "pending:\n  deadline: 60s\n  check_interval: 2ms\n")
	m := newNspawnVM(t, e)
	e.startDaemon()
	defer e.stopDaemon(t.Failed())

	const allowAll = "network=true,write=true"
	const ceiling = "network=false,write=false,shell=none"
	// (a) Control.
	r := m.start(t, "ctl", "nspawn-ctl", m.oneOff("nspawn-ctl", allowAll)...)
	if r.code != 0 || !strings.Contains(r.out, "connect=ok root=ok write=ok exec=ok") || m.hits.Load() != 1 ||
		!m.exists("probe") || !m.exists("w/probe-sh") {
		t.Fatalf("control machine: exit %d, listener %d, /probe %v, /w/probe-sh %v; output:\n%s",
			r.code, m.hits.Load(), m.exists("probe"), m.exists("w/probe-sh"), r.out)
	}
	if c := r.reg; c.State != state.StateActive || c.Activation != state.ActivationAtExec || c.ActivationReason != "" {
		t.Fatalf("control machine: registration %+v, want active at exec", c)
	}
	m.clean(t)

	// (b) + (c): the ceiling, 20 consecutive starts.
	const starts = 20
	var denied, failed, inner, sup int
	for i := range starts {
		id := fmt.Sprintf("nspawn-%d", i)
		r := m.start(t, id, id, m.oneOff(id, ceiling, "--write-root", "/w")...)
		c := r.reg
		ok := r.code == 0 && m.allDenied(r.out)
		if r.code != 0 || c.ActivationReason != "" || c.Activation != state.ActivationAtExec {
			failed++
			t.Errorf("start %d: exit %d, registration %s %s %q; output:\n%s", i, r.code, c.State, c.Activation, c.ActivationReason, r.out)
		}
		if ok {
			denied++
		} else {
			t.Errorf("start %d: want connect, /probe and exec denied (EPERM), /w/root created; output:\n%s", i, r.out)
		}
		if r.innerSeen {
			inner++
		}
		if r.supervisor {
			sup++
		}
		if m.hits.Load() != 1 || m.exists("probe") || m.exists("w/probe-sh") || !m.exists("w/root") {
			t.Fatalf("BYPASS: start %d: listener %d (want 1, the control's), /probe %v, /w/probe-sh %v, /w/root %v",
				i, m.hits.Load(), m.exists("probe"), m.exists("w/probe-sh"), m.exists("w/root"))
		}
		m.clean(t)
	}
	t.Logf("%d starts under %s: first connect EPERM in %d, failed starts %d; nspawn's inner child seen in the payload before its exec in %d, nspawn in <machine>/supervisor in %d",
		starts, ceiling, denied, failed, inner, sup)
	if sup == 0 {
		t.Errorf("nspawn was never seen in <machine>/supervisor")
	}

	// The supervisor's cgroup is outside the ceiling: a process there
	// connects while the payload's registration is in force.
	var supOut string
	m.afterRun = func(cg cgroup.Cgroup) {
		dir, err := os.Open(filepath.Join(cg.Path(), "supervisor"))
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = probe.Env("tcp-connect", m.addr)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
		b, _ := cmd.CombinedOutput()
		supOut = string(b)
	}
	r = m.start(t, "sup", "nspawn-sup", m.oneOff("nspawn-sup", ceiling, "--write-root", "/w")...)
	m.afterRun = nil
	if c := r.reg; r.code != 0 || c.State != state.StateActive || m.hits.Load() != 2 {
		t.Fatalf("a process in <machine>/supervisor while the payload is registered (%s): listener %d (want 2: it connects); output:\n%s\nmachine:\n%s",
			c.State, m.hits.Load(), supOut, r.out)
	}
	m.clean(t)

	// The unit path: ExecStartPre= (--prestart) in the unit's cgroup, then
	// nspawn as the stock unit runs it (--boot --settings=override; the
	// .nspawn file says Boot=no and names the agent).
	t.Run("unit", func(t *testing.T) {
		if err := os.MkdirAll("/etc/systemd/nspawn", 0o755); err != nil {
			t.Fatal(err)
		}
		env := probe.Env("nspawn-agent", m.addr)
		nsf := "[Exec]\nBoot=no\nParameters=/bin/agent\n"
		for _, kv := range env {
			// Single quotes: nspawn unquotes the value, and the
			// probe's arguments are JSON with double quotes.
			nsf += "Environment='" + kv + "'\n"
		}
		if err := os.WriteFile("/etc/systemd/nspawn/machine.nspawn", []byte(nsf), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove("/etc/systemd/nspawn/machine.nspawn")
		script := fmt.Sprintf("%s nspawn --socket %s --prestart machine --directory %s --ceiling %s --write-root /w && "+
			"exec %s --quiet --keep-unit --boot --link-journal=no --register=no --pipe --settings=override --machine=machine -D %s",
			e.bin, e.sock, m.root, ceiling, m.nspawn, m.root)
		r := m.start(t, "unit", "nspawn-machine", "/bin/sh", "-c", script)
		c := r.reg
		if r.code != 0 || !m.allDenied(r.out) ||
			c.ActivationReason != "" || c.Activation != state.ActivationAtExec {
			t.Errorf("unit path: exit %d, registration %s %s %q; output:\n%s", r.code, c.State, c.Activation, c.ActivationReason, r.out)
		}
		if m.hits.Load() != 2 || m.exists("probe") || m.exists("w/probe-sh") {
			t.Fatalf("BYPASS: unit path: listener %d, /probe %v, /w/probe-sh %v", m.hits.Load(), m.exists("probe"), m.exists("w/probe-sh"))
		}
		m.clean(t)
		// A .nspawn file that boots: refused at ExecStartPre, nothing registered.
		if err := os.WriteFile("/etc/systemd/nspawn/machine.nspawn", []byte("[Exec]\nParameters=/bin/agent\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r = m.start(t, "unit-boot", "", "/bin/sh", "-c", script)
		if r.code != 2 || !strings.Contains(r.out, "the machine boots") || strings.Contains(r.out, "connect=") {
			t.Errorf("booting machine: exit %d (want 2, refused before nspawn); output:\n%s", r.code, r.out)
		}
	})

	// Refusals: the machine never starts.
	for _, tc := range []struct {
		name string
		argv []string
		code int
		msg  string
	}{
		{"registration refused", m.oneOff("nspawn-bad", "network=maybe"), 1, "refusing to start it"},
		{"--boot", append(m.oneOff("nspawn-boot", ceiling)[:8], "--", "-b", "-D", m.root), 2, "-b is refused"},
	} {
		r := m.start(t, "refused", "", tc.argv...)
		if r.code != tc.code || !strings.Contains(r.out, tc.msg) || strings.Contains(r.out, "connect=") || r.innerSeen {
			t.Errorf("%s: exit %d (want %d, %q, machine never started); output:\n%s", tc.name, r.code, tc.code, tc.msg, r.out)
		}
	}
	e.stopDaemon(false)
	r = m.start(t, "down", "", append(m.oneOff("nspawn-down", ceiling)[:2], append([]string{"--timeout", "2s"}, m.oneOff("nspawn-down", ceiling)[2:]...)...)...)
	if r.code != 125 || strings.Contains(r.out, "connect=") || r.innerSeen {
		t.Errorf("daemon down: exit %d (want 125, machine never started); output:\n%s", r.code, r.out)
	}
	if m.hits.Load() != 2 {
		t.Fatalf("a refused machine reached the listener (%d connections)", m.hits.Load())
	}
}
