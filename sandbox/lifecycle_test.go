package sandbox

// The whole lifecycle against the kernel: natively as root (cgroup-BPF) and
// in the vmtest guest (BPF LSM). The sandboxed command is this test binary
// re-executed as a probe (test/probe) of one of the operations below.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

var testPinDir, testPinShared = vmtest.PinDir("sandbox")

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GateArg {
		// Run's exec gate (gate.go), as the enforcerd binary dispatches it.
		os.Exit(GateMain(os.Args[2:], os.Stderr))
	}
	probe.Main() // the sandboxed command runs its operation and exits here
	code := m.Run()
	if !testPinShared {
		os.RemoveAll(testPinDir)
	}
	os.Exit(code)
}

// The sandboxed command's operations. Each line it prints is KEY VALUE.
//
//	connect ADDR: prints its cgroup, starts a straggler (sleep, in a new
//	    session: it outlives the command) and prints its pid, then
//	    connects to ADDR and prints the errno (0: connected)
//	sleep: sleeps for a minute
//	signal: prints "ready", exits 7 on SIGUSR1 (1 after 30 s without)
func init() {
	probe.RegisterAll(map[string]probe.Op{
		"connect": func(r *probe.Result, a []string) {
			g, err := cgroup.PidGroup(os.Getpid())
			if !r.Require(err, "own cgroup") {
				return
			}
			fmt.Printf("cgroup %s\n", g)
			s := exec.Command("/proc/self/exe")
			s.Env = probe.Env("sleep")
			s.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if !r.Require(s.Start(), "start the straggler") {
				return
			}
			fmt.Printf("straggler %d\n", s.Process.Pid)
			c, err := net.DialTimeout("tcp4", a[0], 2*time.Second)
			var errno syscall.Errno
			switch {
			case err == nil:
				c.Close()
			case errors.As(err, &errno):
				r.Errno = errno
			default:
				r.Setup = "connect: " + err.Error()
				return
			}
			fmt.Printf("errno %d\n", int(errno))
		},
		"sleep": func(r *probe.Result, a []string) { time.Sleep(time.Minute) },
		"signal": func(r *probe.Result, a []string) {
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGUSR1)
			fmt.Println("ready 1")
			select {
			case <-ch:
				os.Exit(7) // the exit status is what the test checks
			case <-time.After(30 * time.Second):
				os.Exit(1)
			}
		},
	})
}

// helperCmd is this test binary as the sandboxed command op, its stdout
// in a file (a pipe would keep Wait waiting for the straggler).
func helperCmd(t *testing.T, op string, args ...string) (*exec.Cmd, *os.File) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), probe.Env(op, args...)...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	return cmd, out
}

func helperOutput(t *testing.T, f *os.File) map[string]string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		m[k] = v
	}
	return m
}

// collector gathers the denials WatchDenials delivers.
type collector struct {
	mu sync.Mutex
	ds []Denial
}

func (c *collector) add(d Denial) { c.mu.Lock(); c.ds = append(c.ds, d); c.mu.Unlock() }

var noNetwork = policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}

// gone reports whether pid no longer runs (exited, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// TestLifecycle: the command runs inside the sandbox's cgroup under the
// registered ceiling (its inet connection denied, the denial delivered and
// attributed to the sandbox, the listener never reached) with RLIMIT_CORE
// 1/1; Close kills the straggler it left, removes the cgroup and only then
// unregisters.
func TestLifecycle(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Control: without a restriction the command connects.
	control, err := Open(Config{Ceiling: full, Entrypoint: self, PinDir: testPinDir,
		CgroupName: fmt.Sprintf("enforcerd-sandbox-test-control-%d", os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	if err := control.Register(); err != nil {
		t.Fatal(err)
	}
	cmd, out := helperCmd(t, "connect", l.Addr().String())
	if err := control.Run(cmd); err != nil || helperOutput(t, out)["errno"] != "0" {
		t.Fatalf("control: %v, %v", err, helperOutput(t, out))
	}
	if err := control.Close(); err != nil {
		t.Fatalf("control: Close: %v", err)
	}
	l.SetDeadline(time.Now().Add(time.Second))
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("control: the listener accepted nothing: %v", err)
	}
	c.Close()

	sb, err := Open(Config{Ceiling: noNetwork, AllowPartial: true, Entrypoint: self, PinDir: testPinDir,
		CgroupName: fmt.Sprintf("enforcerd-sandbox-test-%d", os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := sb.Register(); err != nil {
		t.Fatal(err)
	}
	cg := sb.Cgroup()
	en, err := sb.enf.Lookup(cg.ID)
	if err != nil || en.Ceiling != noNetwork || en.AllowPartial != (len(sb.Coverage().Partial) > 0) {
		t.Fatalf("registered entry %+v, %v; want %v", en, err, noNetwork)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim != (unix.Rlimit{Cur: CoreLimit, Max: CoreLimit}) {
		t.Errorf("RLIMIT_CORE after Register: %v, %v; want 1/1 (inherited by the command)", lim, err)
	}
	var got collector
	stop, err := sb.WatchDenials(got.add)
	if err != nil {
		t.Fatal(err)
	}
	cmd, out = helperCmd(t, "connect", l.Addr().String())
	if err := sb.Run(cmd); err != nil {
		t.Fatalf("Run: %v", err)
	}
	stop()
	res := helperOutput(t, out)
	if res["cgroup"] != cg.Group {
		t.Errorf("the command ran in cgroup %q, want %q", res["cgroup"], cg.Group)
	}
	if res["errno"] != strconv.Itoa(int(unix.EPERM)) {
		t.Errorf("BYPASS: connect from the sandbox: %v, want EPERM", res)
	}
	l.SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err = l.Accept(); err == nil {
		c.Close()
		t.Errorf("BYPASS: the listener outside accepted a connection")
	}
	own := 0
	for _, d := range got.ds {
		if d.CeilingCgroupID == cg.ID && d.Outer == nil && d.Field == "network" {
			own++
		}
	}
	if own == 0 {
		t.Errorf("no network denial of the sandbox delivered: %+v", got.ds)
	}
	straggler, err := strconv.Atoi(res["straggler"])
	if err != nil || gone(straggler) {
		t.Fatalf("the straggler did not start or is gone before Close: %v", res)
	}
	if err := sb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); !gone(straggler); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the straggler %d still runs after Close", straggler)
		}
	}
	if _, err := os.Stat(cg.Path()); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there after Close: %v", cg.Path(), err)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: cg.Mountpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	if _, err := enf.Lookup(cg.ID); !errors.Is(err, enforcer.ErrNotRegistered) {
		t.Errorf("still registered after Close: %v", err)
	}
}

// TestRunForwardsSignals: a signal this process receives while the command
// runs reaches the command.
func TestRunForwardsSignals(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Open(Config{Ceiling: noNetwork, AllowPartial: true, Entrypoint: self, PinDir: testPinDir,
		CgroupName: fmt.Sprintf("enforcerd-sandbox-test-sig-%d", os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := sb.Register(); err != nil {
		t.Fatal(err)
	}
	cmd, out := helperCmd(t, "signal")
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if helperOutput(t, out)["ready"] != "" {
				_ = unix.Kill(os.Getpid(), unix.SIGUSR1)
				return
			}
		}
	}()
	err = sb.Run(cmd, unix.SIGUSR1)
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("command: %v (%v), want exit 7: SIGUSR1 forwarded", cmd.ProcessState, err)
	}
}

// TestNestedOuterCeiling: a sandbox created under a registered cgroup
// lists it as an outer ceiling, and the denials that ceiling decides for
// the command are delivered, attributed to it, although the sandbox's own
// ceiling restricts nothing.
func TestNestedOuterCeiling(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	own, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	outer, err := cgroup.Create(mount, path.Join(own, fmt.Sprintf("enforcerd-sandbox-test-outer-%d", os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outer.Remove(RemoveTimeout) })
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	if err := enf.Register(outer, entry.Entry{Ceiling: noNetwork, AllowPartial: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Unregister(outer.ID) })
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sb, err := Open(Config{Ceiling: full, Entrypoint: self, PinDir: testPinDir, CgroupParent: outer.Group})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := sb.Register(); err != nil {
		t.Fatal(err)
	}
	if o := sb.Outer(); len(o) != 1 || o[0].Cgroup.ID != outer.ID || o[0].Entry.Ceiling != noNetwork {
		t.Fatalf("outer ceilings %+v, want %s with %v", o, outer, noNetwork)
	}
	var got collector
	stop, err := sb.WatchDenials(got.add)
	if err != nil {
		t.Fatal(err)
	}
	cmd, out := helperCmd(t, "connect", l.Addr().String())
	if err := sb.Run(cmd); err != nil {
		t.Fatalf("Run: %v", err)
	}
	stop()
	if res := helperOutput(t, out); res["errno"] != strconv.Itoa(int(unix.EPERM)) {
		t.Errorf("BYPASS: connect from a sandbox inside a network=false cgroup: %v, want EPERM", res)
	}
	attributed := 0
	for _, d := range got.ds {
		if d.Outer != nil && d.Outer.Cgroup.ID == outer.ID && d.CeilingCgroupID == outer.ID {
			attributed++
		}
	}
	if attributed == 0 {
		t.Errorf("no denial attributed to the outer ceiling: %+v", got.ds)
	}
	if err := sb.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
