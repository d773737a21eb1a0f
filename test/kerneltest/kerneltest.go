// Package kerneltest is the harness of enforcerd's kernel tests (the
// enforcer's and the escape tests): one load of the programs per test binary
// (Harness), a fresh cgroup per run with probes started directly inside it
// (Sandbox, with test/probe for the child side), the tri-state case
// (Case) and the denial record a case expects (Want). Tests whose programs
// a daemon or `enforcerd run` loads (daemon, cmd/enforcerd/run) use
// test/probe alone.
//
// Every case is tri-state (docs/threat-model.md): (a) a control run in an
// unregistered cgroup succeeds and has its side effect; (b) under the
// ceiling the operation fails with EPERM or EACCES; (c) the side effect is
// absent. A probe that could not attempt the operation fails the test; so
// does a control without its effect (the probe would prove nothing).
//
// The tests need BPF LSM programs: they skip with the reason on hosts that
// refuse them and fail inside the scripts/vmtest guest (test/vmtest).
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package kerneltest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// Config says what a test binary's harness makes.
type Config struct {
	// Name names the binary's cgroup, /<Name>-<pid> (every Sandbox is
	// below it), and its private pin dir.
	Name string
	// PrivatePins: pin in /sys/fs/bpf/<Name>-<pid> even inside the VM,
	// where tests otherwise share the boot's pin dir (vmtest.PinDir), and
	// remove it at the end. A private pin dir is what a test that kills or
	// replaces the loader needs.
	PrivatePins bool
	// Pending: every registration (Sandbox.Register) is pending, so a
	// probe's own exec is the entrypoint: the one program shell=none
	// allows besides the list, not write-denied under shell=read_only.
	Pending bool
	// BeforeOpen runs once before the harness opens the programs, after
	// the binary's cgroup and temp dir exist (e.g. a loader in another
	// process that is then killed).
	BeforeOpen func(h *Harness) error
}

// Harness is the one load of the programs per test binary (loading takes
// seconds under TCG) and everything the binary creates: its cgroup, its
// temp dir, its private pins. Create it at package level with New and hand
// TestMain to Main.
type Harness struct {
	cfg       Config
	once      sync.Once
	err       error
	mount     string
	root      cgroup.Cgroup
	pin       string
	pinShared bool
	tmp       string
	self      string
	enf       *enforcer.Enforcer
	rd        *enforcer.Reader
	seq       atomic.Int64
}

// New returns the harness of a test binary; nothing happens before a test
// needs it.
func New(c Config) *Harness { return &Harness{cfg: c} }

// Main is TestMain: a re-executed probe runs its operation and exits in
// probe.Main; otherwise the tests run, then the harness removes what it
// made (private pins, its cgroup, its temp dir).
func (h *Harness) Main(m *testing.M) {
	probe.Main()
	code := m.Run()
	if err := h.close(); err != nil {
		fmt.Fprintln(os.Stderr, "kerneltest:", err)
		code = 1
	}
	os.Exit(code)
}

// close removes what the binary made. Private pins go even when Open
// failed half-way (a loader in BeforeOpen may have pinned programs the
// harness never opened): pinned links would stay attached.
func (h *Harness) close() error {
	var err error
	if h.enf != nil {
		h.enf.Close()
	}
	if h.pin != "" && !h.pinShared {
		if rerr := os.RemoveAll(h.pin); rerr != nil {
			err = fmt.Errorf("remove pins %s: %w", h.pin, rerr)
		}
	}
	if h.root.ID != 0 {
		if rerr := h.root.Remove(5 * time.Second); rerr != nil && err == nil {
			err = rerr
		}
	}
	if h.tmp != "" {
		os.RemoveAll(h.tmp)
	}
	return err
}

// Open loads the programs (or adopts the pins) once and opens the denial
// reader; it returns the same error to every caller. Inside the VM the
// binary shares the boot's pins unless Config.PrivatePins, and the
// cgroup-BPF programs attach at the root as enforcerd's do; with private
// pins they attach at the binary's own cgroup, so that nothing outside it
// is held (on a host, the host's other processes).
func (h *Harness) Open() error {
	h.once.Do(func() { h.err = h.open() })
	return h.err
}

func (h *Harness) open() error {
	var err error
	if h.mount, err = cgroup.Mountpoint(); err != nil {
		return err
	}
	if h.self, err = os.Executable(); err != nil {
		return err
	}
	if h.root, err = cgroup.Create(h.mount, fmt.Sprintf("/%s-%d", h.cfg.Name, os.Getpid())); err != nil {
		return err
	}
	if h.tmp, err = os.MkdirTemp("", h.cfg.Name+"-"); err != nil {
		return err
	}
	if h.cfg.PrivatePins {
		h.pin = fmt.Sprintf("/sys/fs/bpf/%s-%d", h.cfg.Name, os.Getpid())
	} else {
		h.pin, h.pinShared = vmtest.PinDir(h.cfg.Name)
	}
	if h.cfg.BeforeOpen != nil {
		if err := h.cfg.BeforeOpen(h); err != nil {
			return err
		}
	}
	start := time.Now()
	if h.enf, err = enforcer.Open(h.Options()); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kerneltest: %s: programs opened in %v\n", h.cfg.Name, time.Since(start).Round(time.Millisecond))
	if err := h.enf.LayerError(coverage.LayerLSM); err != nil {
		return err
	}
	h.rd, err = h.enf.NewReader()
	return err
}

// Options are the enforcer.Options the harness opens with (for a process
// that must open the same programs the same way, e.g. a loader).
func (h *Harness) Options() enforcer.Options {
	o := enforcer.Options{PinDir: h.pin, CgroupMount: h.mount}
	if !h.pinShared {
		o.CgroupAttach = h.root.Path()
	}
	return o
}

// Enforcer returns the binary's enforcer with the BPF LSM layer in force,
// or skips (host) / fails (VM).
func (h *Harness) Enforcer(t testing.TB) *enforcer.Enforcer {
	t.Helper()
	vmtest.RequireLSM(t, h.Open)
	return h.enf
}

// Mount is the cgroup2 mount point.
func (h *Harness) Mount() string { return h.mount }

// Root is the binary's own cgroup: every Sandbox is below it.
func (h *Harness) Root() cgroup.Cgroup { return h.root }

// PinDir is where the programs are pinned.
func (h *Harness) PinDir() string { return h.pin }

// Self is this test binary (every probe's program).
func (h *Harness) Self() string { return h.self }

// TmpPath is a fresh path in the binary's temp dir (outside any sandbox;
// removed at the end), named after name.
func (h *Harness) TmpPath(name string) string {
	return fmt.Sprintf("%s/%s-%d", h.tmp, name, h.seq.Add(1))
}

// TmpDir is the binary's temp dir (outside any sandbox; removed at the
// end).
func (h *Harness) TmpDir() string { return h.tmp }

// Seq is a number no other call of this binary's harness returns.
func (h *Harness) Seq() int64 { return h.seq.Add(1) }
