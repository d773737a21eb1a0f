package registry_test

// Narrowing and late ancestors: a narrowing reaches every registered
// descendant (by parent id and by cgroup) all or nothing, and a container
// registered after its descendants clamps them. In-memory fakes, as
// nesting_test.go.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// flaky is an Enforcer whose Register fails for the cgroup ids in fail.
type flaky struct {
	*registrytest.Enforcer
	fail map[uint64]bool
}

func (e *flaky) Register(cg cgroup.Cgroup, en entry.Entry) error {
	if e.fail[cg.ID] {
		return fmt.Errorf("register cgroup %s: injected failure", cg.Group)
	}
	return e.Enforcer.Register(cg, en)
}

// nestFixture is a registry over flaky with its events, save failures and
// program checks under the test's control.
type nestFixture struct {
	reg        *registry.Registry
	enf        *flaky
	cgs        *registrytest.Cgroups
	path       string
	events     []registry.Event
	failSave   bool
	unsafePids map[int]bool
}

func newNestFixture(t *testing.T) *nestFixture {
	f := &nestFixture{enf: &flaky{Enforcer: registrytest.NewEnforcer(true), fail: map[uint64]bool{}}, cgs: registrytest.NewCgroups(),
		path: filepath.Join(t.TempDir(), "state.json"), unsafePids: map[int]bool{}}
	f.enf.CanShell = true
	f.reg = f.open()
	return f
}

func (f *nestFixture) open() *registry.Registry {
	return registry.New(registry.Options{
		Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path,
		Save: func(p string, cs []state.Container) error {
			if f.failSave {
				return errors.New("injected save failure")
			}
			return state.Save(p, cs)
		},
		StartTime:       func(int) (uint64, error) { return 1, nil },
		OnEvent:         func(e registry.Event) { f.events = append(f.events, e) },
		CheckEntrypoint: func(p progcheck.Program) (progcheck.Vetted, error) { return progcheck.Vetted{Resolved: p.Path}, nil },
		CheckProcesses: func(pids []int) error {
			for _, pid := range pids {
				if f.unsafePids[pid] {
					return &progcheck.UnsafeError{Findings: []progcheck.Finding{{Name: fmt.Sprintf("pid %d", pid), Kind: progcheck.Shell, Reason: "fake"}}}
				}
			}
			return nil
		},
	})
}

func (f *nestFixture) register(t *testing.T, req registry.Request) state.Container {
	t.Helper()
	f.cgs.Add(req.Cgroup)
	c, err := f.reg.Register(req)
	if err != nil {
		t.Fatalf("register %s: %v", req.ID, err)
	}
	return c
}

// narrowed returns the containers of the EventNarrowed events since the
// last call, sorted, and forgets the events.
func (f *nestFixture) narrowed() []string {
	var out []string
	for _, e := range f.events {
		if e.Kind == registry.EventNarrowed {
			out = append(out, e.Container)
		}
	}
	f.events = nil
	sort.Strings(out)
	return out
}

// snapshot is every container and map entry, to compare before and after
// a refused change.
func (f *nestFixture) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, c := range f.reg.List() {
		en, err := f.enf.Lookup(c.CgroupID)
		fmt.Fprintf(&b, "%s %s %s %s %+v %v\n", c.ID, c.Session, c.Ceiling, c.Fingerprint, en, err)
	}
	onDisk, err := state.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(onDisk, func(i, j int) bool { return onDisk[i].ID < onDisk[j].ID })
	for _, c := range onDisk {
		fmt.Fprintf(&b, "file %s %s %s\n", c.ID, c.Session, c.Ceiling)
	}
	return b.String()
}

// A tree mixing both kinds of descent: p at /p; c1 child of p by id in
// /s/c1; g1 nested in c1's cgroup without a parent; c2 child of c1 by id
// in /s/c2; x unrelated.
func (f *nestFixture) tree(t *testing.T) {
	t.Helper()
	f.register(t, registry.Request{ID: "p", Cgroup: "/p", Role: "implement"})
	f.register(t, registry.Request{ID: "c1", Cgroup: "/s/c1", Parent: "p", Role: "implement"})
	f.register(t, registry.Request{ID: "g1", Cgroup: "/s/c1/g1", Role: "implement", Activate: registry.ActivateExec,
		Entrypoint: &progcheck.Program{Path: "/bin/agent", Root: "/"}})
	f.register(t, registry.Request{ID: "c2", Cgroup: "/s/c2", Parent: "c1", Role: "test"})
	f.register(t, registry.Request{ID: "x", Cgroup: "/x", Role: "implement"})
	f.events = nil
}

// TestNarrowReachesEveryDescendant: by parent id and by cgroup,
// transitively, one EventNarrowed per changed container, activation states
// kept, unrelated containers untouched.
func TestNarrowReachesEveryDescendant(t *testing.T) {
	f := newNestFixture(t)
	f.tree(t)
	x0, _ := f.reg.Get("x")
	p, err := f.reg.Narrow("p", "network=false")
	if err != nil {
		t.Fatal(err)
	}
	if p.Kernel.Network {
		t.Fatalf("p: %s", p.Kernel)
	}
	if got := f.narrowed(); !slices.Equal(got, []string{"c1", "c2", "g1", "p"}) {
		t.Errorf("narrowed events for %v, want c1 c2 g1 p", got)
	}
	for _, id := range []string{"c1", "g1", "c2"} {
		c, _ := f.reg.Get(id)
		if c.Kernel.Network {
			t.Errorf("%s still network=true after p was narrowed: %s", id, c.Kernel)
		}
	}
	if g1, _ := f.reg.Get("g1"); g1.State != state.StatePending {
		t.Errorf("g1: state %s, want pending kept", g1.State)
	} else if en, _ := f.enf.Lookup(g1.CgroupID); !en.Pending {
		t.Errorf("g1: map entry no longer pending: %+v", en)
	}
	if x, _ := f.reg.Get("x"); x.Ceiling != x0.Ceiling {
		t.Errorf("unrelated x changed: %s → %s", x0.Ceiling, x.Ceiling)
	}
	// Narrowing the middle reaches below it only; narrowing again to the
	// same ceiling changes (and reports) only the one asked for.
	if _, err := f.reg.Narrow("c1", "write=false"); err != nil {
		t.Fatal(err)
	}
	if got := f.narrowed(); !slices.Equal(got, []string{"c1", "c2", "g1"}) {
		t.Errorf("narrowed events for %v, want c1 c2 g1", got)
	}
	if pp, _ := f.reg.Get("p"); !pp.Kernel.Write {
		t.Errorf("narrowing c1 narrowed its parent p: %s", pp.Kernel)
	}
	if _, err := f.reg.Narrow("c1", "write=false"); err != nil {
		t.Fatal(err)
	}
	if got := f.narrowed(); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("narrowed events for %v, want c1 only", got)
	}
	// Unregistering an ancestor widens nothing.
	c2, _ := f.reg.Get("c2")
	if err := f.reg.Unregister("c1"); err != nil {
		t.Fatal(err)
	}
	if after, _ := f.reg.Get("c2"); after.Ceiling != c2.Ceiling {
		t.Errorf("unregistering c1 changed c2: %s → %s", c2.Ceiling, after.Ceiling)
	}
	checkNested(t, f.reg, f.enf)
}

// TestNarrowAllOrNothing: a failure at any step (a descendant's map
// entry, the state file, a descendant that cannot be enforced or runs a
// shell under a new shell=none) leaves every ceiling, map entry and the
// state file as they were, and reports nothing.
func TestNarrowAllOrNothing(t *testing.T) {
	f := newNestFixture(t)
	f.tree(t)
	f.register(t, registry.Request{ID: "g2", Cgroup: "/p/g2", Activate: registry.ActivateExec}) // no entrypoint
	f.events = nil
	before := f.snapshot(t)
	refused := func(what string, err error, want error) {
		t.Helper()
		if err == nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", what, err, want)
		}
		if after := f.snapshot(t); after != before {
			t.Errorf("%s: refused, but changed:\n%s\nwas:\n%s", what, after, before)
		}
		if got := f.narrowed(); len(got) != 0 {
			t.Errorf("%s: refused, but narrowed events for %v", what, got)
		}
	}
	c2, _ := f.reg.Get("c2")
	f.enf.fail[c2.CgroupID] = true
	_, err := f.reg.Narrow("p", "network=false")
	refused("map entry of grandchild c2 fails", err, nil)
	delete(f.enf.fail, c2.CgroupID)

	f.failSave = true
	_, err = f.reg.Narrow("p", "network=false")
	refused("state file", err, nil)
	f.failSave = false

	f.cgs.SetPid(30, "/s/c2")
	f.unsafePids[30] = true
	_, err = f.reg.Narrow("p", "shell=none")
	refused("c2 runs a shell, p narrowed to shell=none", err, registry.ErrUnsafeProgram)
	f.unsafePids[30] = false

	_, err = f.reg.Narrow("p", "shell=none")
	refused("pending g2 has no entrypoint to vet, p narrowed to shell=none", err, registry.ErrEntrypointRequired)
	if err := f.reg.Unregister("g2"); err != nil {
		t.Fatal(err)
	}
	before = f.snapshot(t)

	f.enf.CanWrite = false
	_, err = f.reg.Narrow("p", "write=false")
	refused("write=false cannot be enforced", err, registry.ErrCannotEnforce)
	f.enf.CanWrite = true

	if _, err := f.reg.Narrow("p", "shell=none"); err != nil {
		t.Fatal(err)
	}
	checkNested(t, f.reg, f.enf)
}

// TestAncestorRegisteredAfterDescendants: a container registered in a
// cgroup above containers already registered (or whose id they name as
// parent, after an unregistration) clamps them in the same transaction;
// a failure refuses the registration and changes nothing.
func TestAncestorRegisteredAfterDescendants(t *testing.T) {
	f := newNestFixture(t)
	f.register(t, registry.Request{ID: "in1", Cgroup: "/o/a/in1", Role: "implement"})
	f.register(t, registry.Request{ID: "in2", Cgroup: "/o/in2", Role: "implement", Activate: registry.ActivateExec})
	f.register(t, registry.Request{ID: "kid", Cgroup: "/k", Parent: "in1", Role: "implement"})
	f.register(t, registry.Request{ID: "out", Cgroup: "/q", Role: "implement"})
	f.events = nil
	before := f.snapshot(t)

	f.failSave = true
	if _, err := f.reg.Register(registry.Request{ID: "o", Cgroup: "/o", Ceiling: "write=false"}); err == nil {
		t.Fatal("registered with a failing state file")
	}
	f.failSave = false
	in2, _ := f.reg.Get("in2")
	f.enf.fail[in2.CgroupID] = true
	if _, err := f.reg.Register(registry.Request{ID: "o", Cgroup: "/o", Ceiling: "write=false"}); err == nil {
		t.Fatal("registered with a failing map entry below")
	}
	delete(f.enf.fail, in2.CgroupID)
	if after := f.snapshot(t); after != before || len(f.events) != 0 {
		t.Fatalf("refused registrations changed something (events %v):\n%s\nwas:\n%s", f.events, after, before)
	}
	if _, err := f.reg.Get("o"); err == nil {
		t.Fatal("o registered")
	}

	o, err := f.reg.Register(registry.Request{ID: "o", Cgroup: "/o", Ceiling: "write=false"})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range f.events {
		kinds = append(kinds, e.Kind+":"+e.Container)
	}
	if want := []string{"registered:o", "narrowed:in1", "narrowed:in2", "narrowed:kid"}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	for _, id := range []string{"in1", "in2", "kid"} {
		c, _ := f.reg.Get(id)
		if c.Kernel.Write || !c.Ceiling.Within(o.Ceiling) {
			t.Errorf("%s not clamped to o (%s): %s", id, o.Ceiling, c.Ceiling)
		}
	}
	if c, _ := f.reg.Get("in2"); c.State != state.StatePending {
		t.Errorf("in2: state %s, want pending kept", c.State)
	}
	if c, _ := f.reg.Get("out"); !c.Kernel.Write {
		t.Errorf("unrelated out clamped: %s", c.Kernel)
	}
	checkNested(t, f.reg, f.enf)
}
