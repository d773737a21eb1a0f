package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// testInitRegistrar registers into the pins as a daemon would: pending,
// naming the init. It records what Run gave it, and refuses with fail.
type testInitRegistrar struct {
	enf       *enforcer.Enforcer
	fail      error
	pid       int
	initGroup string
	pending   bool // the entry was pending when RegisterInit returned
}

func (r *testInitRegistrar) Register(cgroup.Cgroup, entry.Entry) error {
	return errors.New("Register of an InitRegistrar called")
}

func (r *testInitRegistrar) RegisterInit(cg cgroup.Cgroup, e entry.Entry, pid int) error {
	r.pid = pid
	r.initGroup, _ = cgroup.PidGroup(pid)
	if r.fail != nil {
		return r.fail
	}
	if err := r.enf.Register(cg, e); err != nil {
		return err
	}
	en, err := r.enf.Lookup(cg.ID)
	r.pending = err == nil && en.Pending
	return nil
}

func (r *testInitRegistrar) Unregister(cg cgroup.Cgroup) error { return r.enf.Unregister(cg.ID) }

// TestInitRegistrarGatesTheCommand: with an InitRegistrar, Run names the
// exec gate (inside the cgroup) as the init of a pending registration and
// the command runs under it, activated at its exec (its inet connection
// denied, the listener never reached); a registrar that refuses makes Run
// fail with coverage.ErrCannotEnforce and the command never runs (its
// file is not created); the same command through the gate without a
// restriction creates it (control).
func TestInitRegistrarGatesTheCommand(t *testing.T) {
	vmtest.RequireLSM(t, nil)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string, reg *testInitRegistrar) *Sandbox {
		t.Helper()
		sb, err := Open(Config{Ceiling: noNetwork, AllowPartial: true, Entrypoint: self, PinDir: testPinDir,
			CgroupName: fmt.Sprintf("enforcerd-sandbox-test-%s-%d", name, os.Getpid())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		reg.enf = sb.enf
		if err := sb.SetRegistrar(reg); err != nil {
			t.Fatal(err)
		}
		if err := sb.Register(); err != nil {
			t.Fatal(err)
		}
		if en, err := sb.enf.Lookup(sb.Cgroup().ID); !errors.Is(err, enforcer.ErrNotRegistered) {
			t.Fatalf("Register with an InitRegistrar installed an entry (%+v, %v): it is Run's", en, err)
		}
		return sb
	}
	// (a) Control: accepted, a command without a restriction in it
	// creates its file.
	dir := t.TempDir()
	file := filepath.Join(dir, "ran")
	ok := &testInitRegistrar{}
	sb := open("control", ok)
	cmd, _ := helperCmd(t, "exec", "/bin/sh", "-c", "echo > "+file)
	if err := sb.Run(cmd); err != nil {
		t.Fatalf("control: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("control: the command did not run: %v", err)
	}
	if want := sb.Cgroup().Group; ok.pid != cmd.Process.Pid || ok.initGroup != want || !ok.pending {
		t.Fatalf("control: init %d in %q, pending %v; want the command's pid %d in %s, pending", ok.pid, ok.initGroup, ok.pending, cmd.Process.Pid, want)
	}
	if en, err := sb.enf.Lookup(sb.Cgroup().ID); err != nil || en.Pending {
		t.Fatalf("control: after the command's exec the entry is %+v, %v; want active", en, err)
	}

	// (b) Refused: the command never runs.
	os.Remove(file)
	refused := &testInitRegistrar{fail: errors.New("refused by the test")}
	sb = open("refused", refused)
	cmd, _ = helperCmd(t, "exec", "/bin/sh", "-c", "echo > "+file)
	err = sb.Run(cmd)
	if !errors.Is(err, coverage.ErrCannotEnforce) || refused.pid == 0 {
		t.Fatalf("refused registration: Run: %v (init %d); want ErrCannotEnforce after naming the gate", err, refused.pid)
	}
	if _, serr := os.Stat(file); !errors.Is(serr, os.ErrNotExist) {
		t.Fatalf("refused registration: the command ran (stat: %v)", serr)
	}

	// (c) Accepted with network=false: the command's connection is denied.
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sb = open("deny", &testInitRegistrar{})
	cmd, out := helperCmd(t, "connect", l.Addr().String())
	if err := sb.Run(cmd); err != nil {
		t.Fatalf("network=false: %v", err)
	}
	if got := helperOutput(t, out)["errno"]; got != strconv.Itoa(int(syscall.EPERM)) {
		t.Fatalf("network=false through the gate: connect errno %q, want EPERM (%d)", got, int(syscall.EPERM))
	}
}
