package enforcer_test

// Kernel enforcement tests. They need BPF LSM programs, so they run
// inside the scripts/vmtest guest (make vmtest KERNEL=6.12|6.1) and skip with
// the reason on hosts that refuse LSM programs.
//
// Every case is tri-state (docs/threat-model.md): (a) a control run in
// an unregistered cgroup succeeds and has its side effect; (b) under the
// ceiling the operation fails with EPERM/EACCES; (c) the side effect is
// absent. Each run is a child probe (internal/probe) started directly inside
// the cgroup with CLONE_INTO_CGROUP.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/probe"
	"github.com/enforcerd/enforcerd/internal/vmtest"
	"github.com/enforcerd/enforcerd/policy"
)

func TestMain(m *testing.M) {
	upgradeLoopMain() // the upgrade test's workload exits here
	probe.Main()      // a re-executed probe child exits here
	code := m.Run()
	if shared.enf != nil && !shared.pinShared {
		if err := shared.enf.Uninstall(); err != nil {
			fmt.Fprintln(os.Stderr, "uninstall test pins:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is the one load of the programs per test binary (loading takes
// seconds under TCG), with a private pin dir so nothing else is touched.
var shared struct {
	once  sync.Once
	enf   *enforcer.Enforcer
	err   error
	mount string
	rd    *enforcer.Reader
	// pinShared: the pins are the VM boot's shared ones (vmtest.PinDir).
	pinShared bool
}

func openShared() error {
	shared.once.Do(func() {
		if shared.mount, shared.err = cgroup.Mountpoint(); shared.err != nil {
			return
		}
		var pin string
		pin, shared.pinShared = vmtest.PinDir("enforcer-test")
		shared.enf, shared.err = enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: shared.mount})
		if shared.err != nil {
			return
		}
		if shared.err = shared.enf.LayerError(enforcer.LayerLSM); shared.err != nil {
			return
		}
		shared.rd, shared.err = shared.enf.NewReader()
	})
	return shared.err
}

// kernel returns the shared enforcer, or skips (host) / fails (VM).
func kernel(t *testing.T) *enforcer.Enforcer {
	t.Helper()
	vmtest.RequireLSM(t, openShared)
	return shared.enf
}

var (
	writeDeny   = policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
	networkDeny = policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	bothDeny    = policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}
)

// sandbox is one transient cgroup a probe starts in.
type sandbox struct {
	cg  cgroup.Cgroup
	dir *os.File
}

var sandboxSeq atomic.Int64

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	group := fmt.Sprintf("/enforcerd-test-%d/case-%d", os.Getpid(), sandboxSeq.Add(1))
	cg, err := cgroup.Create(shared.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{cg: cg, dir: dir}
	t.Cleanup(func() {
		dir.Close()
		_ = shared.enf.Unregister(cg.ID)
		if err := cg.Remove(5 * time.Second); err != nil {
			t.Errorf("remove %s: %v", cg, err)
		}
		_ = unix.Rmdir(filepath.Dir(cg.Path())) // fails while other cases exist
	})
	return sb
}

// sub returns a sub-cgroup below the sandbox, created by the test (for the
// write ceiling, under which the child cannot mkdir in cgroupfs), opened for
// CLONE_INTO_CGROUP.
func (sb *sandbox) sub(t *testing.T) *os.File {
	t.Helper()
	cg, err := cgroup.Create(shared.mount, sb.cg.Group+"/e1")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir
}

func (sb *sandbox) register(t *testing.T, en enforcer.Entry) {
	t.Helper()
	if err := shared.enf.Register(sb.cg, en); err != nil {
		t.Fatal(err)
	}
}

// denials returns the records decided by cgroup id ceiling since the last
// call (the probe has exited: all of its records are in the ring).
func denials(t *testing.T, ceiling uint64) []enforcer.Denial {
	t.Helper()
	if err := shared.rd.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	var out []enforcer.Denial
	for {
		d, err := shared.rd.Read()
		if errors.Is(err, enforcer.ErrFlushed) {
			return out
		}
		if err != nil {
			t.Fatalf("read denials: %v", err)
		}
		if d.CeilingCgroupID == ceiling {
			out = append(out, d)
		}
	}
}

// attempt is one prepared run: the probe, and how to observe its side
// effect (nil when a successful operation leaves nothing to observe, e.g. a
// socket that is closed again).
type attempt struct {
	cmd    probe.Cmd
	effect func() (happened bool, what string)
}

// tcase is one threat-model case.
type tcase struct {
	name    string
	prepare func(t *testing.T) attempt
	hook    enforcer.Hook // expected denial record; 0: not checked
	altHook enforcer.Hook // also accepted (a hook that denies earlier); 0: none
	// hooks, when set, gives hook and altHook at run time.
	hooks func() (enforcer.Hook, enforcer.Hook)
	// absent: the control may fail with this errno because the guest
	// kernel lacks the family without modules (EAFNOSUPPORT). The LSM hook
	// runs before the family lookup, so the ceiling must still say EPERM.
	absent syscall.Errno
}

// where a case runs relative to the registered cgroup.
type where int

const (
	inSandbox  where = iota
	inTestSub        // a sub-cgroup the test created below it (E1, write)
	inChildSub       // a sub-cgroup the child itself creates and enters (E1)
)

// triState runs c in a control (unregistered) cgroup and under ceiling.
func triState(t *testing.T, c tcase, ceiling policy.KernelCeiling, at where) {
	t.Helper()
	sb := newSandbox(t)
	dir := sb.dir
	switch at {
	case inTestSub:
		dir = sb.sub(t)
	}
	run := func() (probe.Result, attempt) {
		a := c.prepare(t)
		if at == inChildSub {
			a.cmd.SubCgroup = filepath.Join(sb.cg.Path(), "e1")
		}
		r := probe.Run(t, dir, a.cmd)
		for _, f := range a.cmd.Files {
			f.Close()
		}
		if r.Setup != "" {
			t.Fatalf("probe could not attempt the operation (a test bug, not a pass): %v", r)
		}
		return r, a
	}

	// (a) control: no ceiling.
	r, a := run()
	switch {
	case r.Errno != 0 && c.absent != 0 && r.Errno == c.absent:
		t.Logf("%s control: %v: family not built into this kernel (a module); the ceiling must still deny at the LSM hook, which runs before the family lookup", c.name, r)
	case r.Errno != 0:
		t.Fatalf("control (no ceiling): %v, want success", r)
	case a.effect != nil:
		if ok, what := a.effect(); !ok {
			t.Fatalf("control (no ceiling): %v but no side effect observed (%s): the probe proves nothing", r, what)
		}
	}

	// (b) and (c): under the ceiling.
	sb.register(t, enforcer.Entry{Ceiling: ceiling})
	denials(t, sb.cg.ID) // drop anything older
	r, a = run()
	if !r.Denied() {
		t.Errorf("BYPASS: %s under %v: %v, want EPERM or EACCES", c.name, ceiling, r)
	} else if r.Errno != unix.EPERM {
		t.Logf("denied with %v (EACCES: the kernel path's own errno)", r)
	}
	if a.effect != nil {
		if ok, what := a.effect(); ok {
			t.Errorf("BYPASS: %s under %v: side effect happened: %s", c.name, ceiling, what)
		}
	}
	if c.hooks != nil {
		c.hook, c.altHook = c.hooks()
	}
	if c.hook != 0 {
		ds := denials(t, sb.cg.ID)
		found := false
		for _, d := range ds {
			if (d.Hook == c.hook || (c.altHook != 0 && d.Hook == c.altHook)) && !d.Audited {
				found = true
				if d.Errno != unix.EPERM {
					t.Errorf("record %s: errno %v, want EPERM", d.Hook, d.Errno)
				}
			}
		}
		if !found {
			var hooks []string
			for _, d := range ds {
				hooks = append(hooks, d.Hook.String())
			}
			t.Errorf("no %s denial record for the ceiling cgroup %d (records: %v)", c.hook, sb.cg.ID, hooks)
		}
	}
}

func runCases(t *testing.T, cases []tcase, ceiling policy.KernelCeiling, at where) {
	kernel(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { triState(t, c, ceiling, at) })
	}
}

func pick(cases []tcase, names ...string) []tcase {
	var out []tcase
	for _, n := range names {
		found := false
		for _, c := range cases {
			if c.name == n {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			panic("no case " + n)
		}
	}
	return out
}
