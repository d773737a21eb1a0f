package registry_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
)

// crashFixture simulates a daemon killed at the instant it would save a
// state (crashWhen says which): the state file and the map are kept as
// they were at that instant, whatever the registry does next, and
// restart puts them back and starts a new registry on them. The
// crash-point sweep (crashsweep_test.go) kills real processes with real
// maps; this runs everywhere in milliseconds.
type crashFixture struct {
	enf       *registrytest.Enforcer
	cgs       *registrytest.Cgroups
	path      string
	crashWhen func([]state.Container) bool
	crashed   bool
	disk      []byte
	intent    []byte
	kernel    map[uint64]entry.Entry
	events    []registry.Event
}

func newCrashFixture(t *testing.T) *crashFixture {
	return &crashFixture{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(),
		path: filepath.Join(t.TempDir(), "state.json")}
}

func (f *crashFixture) open() *registry.Registry {
	return registry.New(registry.Options{
		Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path,
		OnEvent: func(ev registry.Event) { f.events = append(f.events, ev) },
		Save: func(p string, cs []state.Container) error {
			if f.crashed {
				return errors.New("the process is dead")
			}
			if f.crashWhen != nil && f.crashWhen(cs) {
				f.crashed = true
				f.disk, _ = os.ReadFile(p)
				f.intent, _ = os.ReadFile(state.IntentPath(p))
				f.kernel = maps.Clone(f.enf.M)
				return errors.New("killed")
			}
			return state.Save(p, cs)
		},
	})
}

// restart puts the state file and the map back as they were at the
// crash and reconciles a new registry.
func (f *crashFixture) restart(t *testing.T) *registry.Registry {
	t.Helper()
	if !f.crashed {
		t.Fatal("the crash point was never reached")
	}
	for p, b := range map[string][]byte{f.path: f.disk, state.IntentPath(f.path): f.intent} {
		if b == nil {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.enf.M = f.kernel
	f.crashed, f.crashWhen, f.events = false, nil, nil
	r := f.open()
	if _, err := r.Reconcile(); err != nil {
		t.Fatal(err)
	}
	return r
}

// A save killed before its rename leaves its temporary file: the next
// start removes it.
func TestRestartRemovesTemporaryFilesOfInterruptedSaves(t *testing.T) {
	f := newCrashFixture(t)
	tmp := filepath.Join(filepath.Dir(f.path), ".state.json.tmp-4242")
	if err := os.WriteFile(tmp, []byte(`{"version":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.open().Reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file of an interrupted save left: %v", err)
	}
}

func has(cs []state.Container, id string, ok func(state.Container) bool) bool {
	for _, c := range cs {
		if c.ID == id && ok(c) {
			return true
		}
	}
	return false
}

// kernelIs checks that what the registry reports (ctl get) is exactly the
// map entry.
func kernelIs(t *testing.T, f *crashFixture, r *registry.Registry, id string, network bool) {
	t.Helper()
	c, err := r.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	en, err := f.enf.Lookup(c.CgroupID)
	if err != nil {
		t.Fatal(err)
	}
	if en.Ceiling != c.Kernel {
		t.Fatalf("container %s: reported kernel %s, map holds %s", id, c.Kernel, en.Ceiling)
	}
	if en.Ceiling.Network != network {
		t.Fatalf("container %s: map network=%v, want %v", id, en.Ceiling.Network, network)
	}
}

// A crash after a narrowing's map write and before its state save: the
// restarted daemon reports the kernel's narrower ceiling, records the
// mismatch, and a later harmless narrowing (tools=false) keeps network
// denied, for the container and for its descendant.
func TestCrashDuringNarrowingNeverWidensLater(t *testing.T) {
	f := newCrashFixture(t)
	f.cgs.Add("/p")
	f.cgs.Add("/p/c")
	r := f.open()
	if _, err := r.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, req := range []registry.Request{{ID: "p", Cgroup: "/p"}, {ID: "c", Cgroup: "/p/c"}} {
		if _, err := r.Register(req); err != nil {
			t.Fatal(err)
		}
	}
	f.crashWhen = func(cs []state.Container) bool {
		return has(cs, "p", func(c state.Container) bool { return !c.Kernel.Network })
	}
	if _, err := r.Narrow("p", "network=false"); err == nil {
		t.Fatal("narrowing survived its crash")
	}
	r = f.restart(t)
	events := f.events
	// The harmless narrowing first: on a daemon that kept the stale
	// state, it rewrote the kernel entry with network=true.
	if _, err := r.Narrow("p", "tools=false"); err != nil {
		t.Fatal(err)
	}
	for id, en := range f.enf.M {
		if en.Ceiling.Network {
			t.Fatalf("cgroup id %d: a later narrowing (tools=false) widened the kernel to %s", id, en.Ceiling)
		}
	}
	kernelIs(t, f, r, "p", false)
	kernelIs(t, f, r, "c", false)
	var why []string
	for _, ev := range events {
		if ev.Kind == registry.EventReconciled {
			why = append(why, ev.Container+": "+ev.Reason)
		}
	}
	if len(why) != 2 || !strings.Contains(why[0], "network") {
		t.Fatalf("reconciled records = %q, want one per container naming network", why)
	}
	cs, _ := state.Load(f.path)
	if !has(cs, "p", func(c state.Container) bool { return !c.Kernel.Network && !c.Ceiling.Network && !c.Session.Network }) {
		t.Fatalf("state file not narrowed to the kernel: %+v", cs)
	}
	for _, id := range []string{"p", "c"} {
		if _, err := r.Narrow(id, "tools=false"); err != nil {
			t.Fatal(err)
		}
		kernelIs(t, f, r, "p", false)
		kernelIs(t, f, r, "c", false)
	}
}

// A state file narrower than the kernel (a narrowing the map never got)
// is written to the kernel: the narrower wins either way.
func TestReconcileWritesANarrowerStateToTheKernel(t *testing.T) {
	f := newCrashFixture(t)
	id := f.cgs.Add("/a")
	r := f.open()
	if _, err := r.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	en := f.enf.M[id]
	en.Ceiling.Network = true
	f.enf.M[id] = en
	f.events = nil
	r = f.open()
	if _, err := r.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if f.enf.M[id].Ceiling.Network {
		t.Fatal("the kernel kept network=true; the state says false")
	}
	if len(f.events) != 1 || f.events[0].Kind != registry.EventReconciled {
		t.Fatalf("events = %+v, want one %s record", f.events, registry.EventReconciled)
	}
}

// A crash after a registration's map install and before its state save:
// the restarted daemon adopts the entry, so the cgroup can be managed
// (POST answers the container's 409, narrow and DELETE work).
func TestCrashDuringRegistrationLeavesAManageableCgroup(t *testing.T) {
	f := newCrashFixture(t)
	id := f.cgs.Add("/x")
	r := f.open()
	f.crashWhen = func(cs []state.Container) bool {
		return has(cs, "x", func(state.Container) bool { return true })
	}
	if _, err := r.Register(registry.Request{ID: "x", Cgroup: "/x", Ceiling: "network=false"}); err == nil {
		t.Fatal("registration survived its crash")
	}
	if _, ok := f.kernel[id]; !ok {
		t.Fatal("crash point: the entry was not installed yet")
	}
	r = f.restart(t)
	kernelIs(t, f, r, "x", false)
	if _, err := r.Register(registry.Request{ID: "x", Cgroup: "/x"}); !errors.Is(err, registry.ErrConflict) || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("POST again = %v, want 409 already registered", err)
	}
	if _, err := r.Narrow("x", "tools=false"); err != nil {
		t.Fatal(err)
	}
	kernelIs(t, f, r, "x", false)
	if err := r.Unregister("x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.enf.M[id]; ok {
		t.Fatal("entry left after DELETE")
	}
}

// A crash after the intent is saved and before the install: the intent
// is dropped, nothing is enforced, and the cgroup can be registered.
func TestCrashBeforeTheInstallDropsTheIntent(t *testing.T) {
	f := newCrashFixture(t)
	id := f.cgs.Add("/x")
	r := f.open()
	f.crashWhen = func([]state.Container) bool { return true }
	if _, err := r.Register(registry.Request{ID: "x", Cgroup: "/x", Ceiling: "network=false"}); err == nil {
		t.Fatal("registration survived its crash")
	}
	if f.intent == nil {
		t.Fatal("no intent saved before the install")
	}
	// The kill came before the install: the kernel never got the entry.
	delete(f.kernel, id)
	r = f.restart(t)
	if _, err := r.Get("x"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("an intent the kernel never got was adopted: %v", err)
	}
	if _, err := os.Stat(state.IntentPath(f.path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("intent left after the start: %v", err)
	}
	if _, err := r.Register(registry.Request{ID: "x", Cgroup: "/x", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	kernelIs(t, f, r, "x", false)
}

// An entry the kernel activated while no daemon ran (the container's
// first exec) is no crash's doing: no reconciled record, and the pending
// check reports the activation.
func TestReconcileLeavesAnActivationToThePendingCheck(t *testing.T) {
	f := newCrashFixture(t)
	id := f.cgs.Add("/a")
	r := f.open()
	if _, err := r.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false", Activate: registry.ActivateExec}); err != nil {
		t.Fatal(err)
	}
	en := f.enf.M[id]
	en.Pending = false
	f.enf.M[id] = en
	f.events = nil
	r = f.open()
	if _, err := r.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if len(f.events) != 0 {
		t.Fatalf("events at start = %+v, want none", f.events)
	}
	evs, err := r.CheckPending()
	if err != nil || len(evs) != 1 || evs[0].Kind != registry.EventActivatedAtExec {
		t.Fatalf("pending check = %+v, %v; want one %s", evs, err, registry.EventActivatedAtExec)
	}
}
