package registry_test

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
)

// clock is a fake time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type pendingFixture struct {
	reg    *registry.Registry
	enf    *registrytest.Enforcer
	cgs    *registrytest.Cgroups
	clk    *clock
	events []registry.Event
	starts map[int]uint64
	path   string
}

func newPendingFixture(t *testing.T) *pendingFixture {
	f := &pendingFixture{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(),
		clk: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, starts: map[int]uint64{},
		path: filepath.Join(t.TempDir(), "state.json")}
	f.reg = f.open()
	return f
}

func (f *pendingFixture) open() *registry.Registry {
	return registry.New(registry.Options{
		Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, Now: f.clk.now,
		PendingDeadline: 30 * time.Second,
		StartTime: func(pid int) (uint64, error) {
			st, ok := f.starts[pid]
			if !ok {
				return 0, errors.New("no such process")
			}
			return st, nil
		},
		OnEvent: func(e registry.Event) {
			if e.Kind != registry.EventRegistered { // registry_test covers it
				f.events = append(f.events, e)
			}
		},
	})
}

// proc puts a process with a start time into a group.
func (f *pendingFixture) proc(pid int, start uint64, group string) {
	f.starts[pid] = start
	f.cgs.SetPid(pid, group)
}

func (f *pendingFixture) kinds() []string {
	var out []string
	for _, e := range f.events {
		out = append(out, e.Kind)
	}
	return out
}

func (f *pendingFixture) check(t *testing.T) {
	t.Helper()
	if _, err := f.reg.CheckPending(); err != nil {
		t.Fatal(err)
	}
}

func (f *pendingFixture) entry(t *testing.T, id uint64) entry.Entry {
	t.Helper()
	en, err := f.enf.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return en
}

// execActivates simulates lifecycle.bpf.c: the first exec clears pending.
func (f *pendingFixture) execActivates(id uint64) {
	f.enf.M[id] = entry.Entry{Ceiling: f.enf.M[id].Ceiling, AuditOnly: f.enf.M[id].AuditOnly}
}

func TestPendingOnlyInitStaysPendingUntilExec(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.proc(10, 500, "/ctr/a")
	c, err := f.reg.Register(registry.Request{ID: "a", PID: 10, InitPID: 10, Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	if c.Activation != state.ActivationAtExec || c.State != state.StatePending || c.PendingDeadline == nil ||
		!c.PendingDeadline.Equal(f.clk.now().Add(30*time.Second)) || c.InitPID != 10 || c.InitStart != 500 {
		t.Fatalf("registered %+v; want pending at-exec, deadline +30s", c)
	}
	if !f.entry(t, c.CgroupID).Pending {
		t.Fatal("map entry not pending")
	}
	f.clk.add(29 * time.Second)
	f.check(t)
	if got, _ := f.reg.Get("a"); got.State != state.StatePending || len(f.events) != 0 {
		t.Fatalf("before the deadline: %+v, events %v", got, f.kinds())
	}
	f.execActivates(c.CgroupID)
	if got, _ := f.reg.Get("a"); got.State != state.StateActive {
		t.Fatalf("Get after exec: state %q, want active (read from the map)", got.State)
	}
	f.clk.add(time.Hour)
	f.check(t)
	got, _ := f.reg.Get("a")
	if got.State != state.StateActive || got.PendingDeadline != nil || strings.Join(f.kinds(), ",") != registry.EventActivatedAtExec {
		t.Fatalf("after exec: %+v, events %v", got, f.kinds())
	}
	if fr, _ := f.cgs.Frozen("/ctr/a"); fr {
		t.Fatal("an activated container was frozen")
	}
	// Persisted: a restarted registry sees it active.
	r2 := f.open()
	if _, err := r2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, _ := r2.Get("a"); got.State != state.StateActive {
		t.Fatalf("after restart: %q", got.State)
	}
}

func TestPendingNonInitProcessActivatesAtOnce(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.cgs.Add("/ctr/b")
	f.cgs.Add("/ctr/c")
	f.proc(10, 500, "/ctr/a")
	f.proc(11, 501, "/ctr/a/sub") // a descendant cgroup counts
	f.cgs.Add("/ctr/a/sub")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", InitPID: 10, Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	if c.Activation != state.ActivationImmediate || c.State != state.StateActive || f.entry(t, c.CgroupID).Pending ||
		!strings.Contains(c.ActivationReason, "[11]") {
		t.Fatalf("with another process: %+v; want immediate and in force", c)
	}
	if k := f.kinds(); len(k) != 1 || k[0] != registry.EventActivatedImmediately {
		t.Fatalf("events %v", k)
	}

	// API without init_pid: any process at all.
	f.proc(20, 600, "/ctr/b")
	cb, err := f.reg.Register(registry.Request{ID: "b", Cgroup: "/ctr/b", Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil || cb.Activation != state.ActivationImmediate || f.entry(t, cb.CgroupID).Pending {
		t.Fatalf("no init_pid, one process: %+v, %v", cb, err)
	}

	// A reused pid: same number as the init, another start time.
	f.proc(30, 700, "/ctr/c")
	f.starts[30] = 701 // the init exited; pid 30 now names a newer process
	_, err = f.reg.Register(registry.Request{ID: "c", Cgroup: "/ctr/c", InitPID: 30, Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	// Registration read start 701; simulate the reuse after registration.
	f.starts[30] = 999
	f.check(t)
	if got, _ := f.reg.Get("c"); got.State != state.StateActive || f.entry(t, got.CgroupID).Pending {
		t.Fatalf("init pid reused by another process: %+v; want active", got)
	}
}

func TestPendingActivateNowIsImmediate(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", Ceiling: "network=false"})
	if err != nil || c.Activation != state.ActivationImmediate || c.State != state.StateActive || c.PendingDeadline != nil {
		t.Fatalf("activate now: %+v, %v", c, err)
	}
}

func TestPendingInitPIDValidation(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.cgs.Add("/other")
	f.proc(10, 1, "/other")
	for _, req := range []registry.Request{
		{ID: "a", Cgroup: "/ctr/a", InitPID: 10, Activate: registry.ActivateExec, Ceiling: "network=false"}, // outside
		{ID: "a", Cgroup: "/ctr/a", InitPID: 99, Activate: registry.ActivateExec, Ceiling: "network=false"}, // no such pid
		{ID: "a", Cgroup: "/ctr/a", InitPID: 10, Ceiling: "network=false"},                                  // not with now
		{ID: "a", Cgroup: "/ctr/a", InitPID: -1, Activate: registry.ActivateExec, Ceiling: "network=false"},
	} {
		if _, err := f.reg.Register(req); !errors.Is(err, registry.ErrBadRequest) {
			t.Fatalf("%+v: err %v, want ErrBadRequest", req, err)
		}
	}
	if f.enf.Len() != 0 {
		t.Fatal("a refused registration left a map entry")
	}
}

func TestPendingProcsUnreadableFailsClosed(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.cgs.FailProcs = true
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil || c.Activation != state.ActivationImmediate || f.entry(t, c.CgroupID).Pending {
		t.Fatalf("unlistable cgroup: %+v, %v; want in force at once", c, err)
	}
}

func TestPendingIntruderActivates(t *testing.T) {
	f := newPendingFixture(t)
	c := f.pendingWithInit(t)
	f.check(t)
	if f.entry(t, c.CgroupID).Pending != true {
		t.Fatal("activated with only the init present")
	}
	f.proc(77, 900, "/ctr/a") // written to cgroup.procs by an outside helper
	f.check(t)
	got, _ := f.reg.Get("a")
	if got.State != state.StateActive || f.entry(t, c.CgroupID).Pending || !strings.Contains(got.ActivationReason, "without exec") {
		t.Fatalf("after an intruder: %+v", got)
	}
	if k := f.kinds(); len(k) != 1 || k[0] != registry.EventActivatedImmediately {
		t.Fatalf("events %v", k)
	}
	if fr, _ := f.cgs.Frozen("/ctr/a"); fr {
		t.Fatal("frozen instead of activated")
	}
}

func TestPendingDeadlineFreezes(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.proc(10, 500, "/ctr/a")
	c, _ := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", InitPID: 10, Ceiling: "network=false", Activate: registry.ActivateExec})
	f.clk.add(30 * time.Second)
	f.check(t)
	got, _ := f.reg.Get("a")
	if got.State != "frozen: pending deadline passed" || !strings.Contains(got.ActivationReason, "deadline") {
		t.Fatalf("at the deadline: %+v", got)
	}
	if fr, _ := f.cgs.Frozen("/ctr/a"); !fr {
		t.Fatal("cgroup not frozen")
	}
	// Never activated mid-setup: the entry stays pending, the cgroup frozen.
	if !f.entry(t, c.CgroupID).Pending {
		t.Fatal("deadline activated the ceiling mid-setup")
	}
	if k := f.kinds(); len(k) != 1 || k[0] != registry.EventFrozen {
		t.Fatalf("events %v", k)
	}
	// Thawed behind the daemon's back while still pending: frozen again.
	f.cgs.Thaw("/ctr/a")
	f.check(t)
	if fr, _ := f.cgs.Frozen("/ctr/a"); !fr || f.kinds()[1] != registry.EventRefrozen {
		t.Fatalf("thawed pending cgroup: frozen=%v events %v", fr, f.kinds())
	}
	// The frozen state survives a restart.
	r2 := f.open()
	if _, err := r2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got, _ := r2.Get("a"); got.State != state.StateFrozen {
		t.Fatalf("after restart: %q", got.State)
	}
}

func TestPendingDeadlineKillsWhenFreezeFails(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.proc(10, 500, "/ctr/a")
	f.cgs.FailFreeze = true
	c, _ := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", InitPID: 10, Ceiling: "network=false", Activate: registry.ActivateExec})
	f.clk.add(31 * time.Second)
	f.check(t)
	got, _ := f.reg.Get("a")
	if got.State != state.StateKilled || len(f.cgs.Killed) != 1 || !strings.Contains(got.ActivationReason, "freezing failed") {
		t.Fatalf("freeze failed: %+v, killed %v", got, f.cgs.Killed)
	}
	if pids, _ := f.cgs.Procs("/ctr/a"); len(pids) != 0 {
		t.Fatalf("processes left: %v", pids)
	}
	if f.entry(t, c.CgroupID).Pending {
		t.Fatal("a killed container's entry is still pending (a later entrant would run open)")
	}
	// Freeze and kill both fail: the ceiling is activated (fail closed).
	f2 := newPendingFixture(t)
	f2.cgs.Add("/ctr/b")
	f2.cgs.FailFreeze, f2.cgs.FailKill = true, true
	c2, _ := f2.reg.Register(registry.Request{ID: "b", Cgroup: "/ctr/b", Ceiling: "network=false", Activate: registry.ActivateExec})
	f2.clk.add(time.Minute)
	f2.check(t)
	if got, _ := f2.reg.Get("b"); got.State != state.StateActive || f2.entry(t, c2.CgroupID).Pending {
		t.Fatalf("freeze and kill failed: %+v; want active", got)
	}
}

func TestPendingExecRacingTheFreezeWins(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	c, _ := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", Ceiling: "network=false", Activate: registry.ActivateExec})
	f.cgs.BeforeFreeze = func(string) { f.execActivates(c.CgroupID) }
	f.clk.add(time.Minute)
	f.check(t)
	got, _ := f.reg.Get("a")
	if fr, _ := f.cgs.Frozen("/ctr/a"); fr || got.State != state.StateActive {
		t.Fatalf("exec during the freeze: frozen=%v state %q; want thawed, active", fr, got.State)
	}
}

// TestPendingExecThenForkRacingTheCheckIsNoIntruder: the init execs (the
// kernel activates the entry) and forks a child between the checker's
// lookup of the entry and its listing of the cgroup's processes: the
// child is not an intruder, the registration is activated at exec with no
// reason.
func TestPendingExecThenForkRacingTheCheckIsNoIntruder(t *testing.T) {
	f := newPendingFixture(t)
	c := f.pendingWithInit(t)
	once := false
	f.cgs.BeforeProcs = func(string) {
		if !once {
			once = true
			f.execActivates(c.CgroupID)
			f.proc(11, 600, "/ctr/a") // the exec'd init's child
		}
	}
	f.check(t)
	got, _ := f.reg.Get("a")
	if got.State != state.StateActive || got.ActivationReason != "" {
		t.Fatalf("exec then fork during the check: state %q, reason %q; want active at exec, no reason", got.State, got.ActivationReason)
	}
	if k := f.kinds(); len(k) != 1 || k[0] != registry.EventActivatedAtExec {
		t.Fatalf("events %v", k)
	}
}

func TestPendingReconcileOldStateAndRestartDeadline(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/a")
	f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", Ceiling: "network=false", Activate: registry.ActivateExec})
	// The daemon is down past the deadline: the restarted one freezes.
	f.clk.add(45 * time.Second)
	r2 := f.open()
	if _, err := r2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.CheckPending(); err != nil {
		t.Fatal(err)
	}
	if got, _ := r2.Get("a"); got.State != state.StateFrozen {
		t.Fatalf("deadline passed while down: %q", got.State)
	}
	// A state file without states: pending from the map, fresh deadline.
	cs, _ := state.Load(f.path)
	cs[0].State, cs[0].PendingDeadline = "", nil
	state.Save(f.path, cs)
	f.cgs.Thaw("/ctr/a")
	r3 := f.open()
	if _, err := r3.Reconcile(); err != nil {
		t.Fatal(err)
	}
	got, _ := r3.Get("a")
	if got.State != state.StatePending || got.PendingDeadline == nil || !got.PendingDeadline.Equal(f.clk.now().Add(30*time.Second)) {
		t.Fatalf("old state file: %+v", got)
	}
}

// pendingWithInit registers container "a" (cgroup /ctr/a, network=false)
// pending until the exec of its init, pid 10, the cgroup's only process,
// and fails the test unless it is pending.
func (f *pendingFixture) pendingWithInit(t *testing.T) state.Container {
	t.Helper()
	f.cgs.Add("/ctr/a")
	f.proc(10, 500, "/ctr/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", InitPID: 10, Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil || c.State != state.StatePending {
		t.Fatalf("%+v, %v", c, err)
	}
	return c
}

// TestPendingDeadlineMonotonic: a pending deadline is measured on Go's
// monotonic clock (a step of the wall clock moves neither it nor the
// registration's wait), and one read back from the state file (wall time
// only) is put on it at the first check, never further away than a whole
// pending deadline: a wall clock stepped back while the daemon was down
// does not leave a container pending for hours.
func TestPendingDeadlineMonotonic(t *testing.T) {
	f := newPendingFixture(t)
	f.cgs.Add("/ctr/m")
	f.proc(10, 500, "/ctr/m")
	real := registry.New(registry.Options{Enforcer: f.enf, Cgroups: f.cgs, StatePath: filepath.Join(t.TempDir(), "s.json"),
		Now: time.Now, PendingDeadline: 30 * time.Second, StartTime: func(int) (uint64, error) { return 500, nil }})
	c, err := real.Register(registry.Request{ID: "m", PID: 10, InitPID: 10, Ceiling: "network=false", Activate: registry.ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	if c.PendingDeadline == nil || *c.PendingDeadline == c.PendingDeadline.Round(0) {
		t.Fatalf("pending deadline %v has no monotonic clock reading", c.PendingDeadline)
	}

	// A deadline 10 hours away by the wall clock, as a state file written
	// before the wall clock was stepped back would give it.
	f.cgs.Add("/ctr/a")
	f.proc(11, 600, "/ctr/a")
	if _, err := f.reg.Register(registry.Request{ID: "a", PID: 11, InitPID: 11, Ceiling: "network=false", Activate: registry.ActivateExec}); err != nil {
		t.Fatal(err)
	}
	cs, err := state.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	far := f.clk.now().Add(10 * time.Hour)
	for i := range cs {
		cs[i].PendingDeadline = &far
	}
	if err := state.Save(f.path, cs); err != nil {
		t.Fatal(err)
	}
	f.reg = f.open()
	if _, err := f.reg.Reconcile(); err != nil {
		t.Fatal(err)
	}
	f.check(t)
	f.clk.add(31 * time.Second)
	f.check(t)
	if got, _ := f.reg.Get("a"); got.State != state.StateFrozen {
		t.Fatalf("31 s after the restart: state %q (deadline %v), want frozen: a deadline from the file is at most one pending deadline away", got.State, got.PendingDeadline)
	}
}
