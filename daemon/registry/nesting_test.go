package registry_test

// Nesting: a container is never wider than its parent (by id) nor than any
// registered cgroup above its own, at registration, after an ancestor is
// narrowed, and after an ancestor is registered later. In-memory fakes: no
// root, no BPF (the kernel side is daemon
// TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies in the VM).

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
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/progcheck"
	"github.com/enforcerd/enforcerd/policy"
)

// TestNarrowingParentNarrowsExistingChildren: "enforcerd.io/parent ... the
// child is clamped by the parent's effective ceiling" (hook help,
// deploy/README); registry.resolve: "So a child is never wider than its
// parent". Narrowing the parent afterwards (POST
// /v1/containers/p/narrow, which a confined parent agent may call on
// itself) used to leave every existing child, and every later grandchild
// registered under such a child, with the parent's old, wider ceiling: in
// the kernel map, in the API and on the surface. Parent and child cgroups
// are siblings (the usual case for a sub-agent container), so the kernel's
// ancestor meet does not help. The narrowing now reaches every descendant.
func TestNarrowingParentNarrowsExistingChildren(t *testing.T) {
	f := newFixture(t)
	for _, g := range []string{"/p", "/q", "/r"} {
		f.cgs.Add(g)
	}
	if _, err := f.reg.Register(registry.Request{ID: "p", Cgroup: "/p", Role: "implement"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Register(registry.Request{ID: "q", Cgroup: "/q", Parent: "p", Role: "implement"}); err != nil {
		t.Fatal(err)
	}
	p, err := f.reg.Narrow("p", "network=false,write=false")
	if err != nil {
		t.Fatal(err)
	}
	q, _ := f.reg.Get("q")
	if !q.Ceiling.Within(p.Ceiling) {
		qen, _ := f.enf.Lookup(q.CgroupID)
		t.Errorf("WIDENED: after narrowing parent p to %s, its child q keeps %s (kernel map entry %s)", p.Ceiling, q.Ceiling, qen.Ceiling)
	}
	// A grandchild registered now, under the child, is not wider than its
	// grandparent either.
	r, err := f.reg.Register(registry.Request{ID: "r", Cgroup: "/r", Parent: "q", Role: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ceiling.Within(p.Ceiling) {
		t.Errorf("WIDENED: grandchild r (parent q, grandparent p=%s) registered after the narrowing gets %s", p.Ceiling, r.Ceiling)
	}
	if s, _ := f.reg.Surface("q"); slices.Contains(s.BuiltinTools, "Write") {
		t.Errorf("q's surface still offers Write: %v", s.BuiltinTools)
	}
	f.nested(t)
	f.consistent(t)
}

// TestNestedCgroupAnsweredWithAncestorMeet: design.md "The meet over cgroup
// ancestors": a registered cgroup's ceiling holds its whole subtree. The
// daemon used to accept a container in a cgroup below another registered
// container without "parent" and answer (response, list, GET /surface)
// with a kernel ceiling and tool lists computed from its own registration
// alone: write=true, Write and Edit offered, while the kernel denies every
// write in that subtree (in the VM: daemon
// TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies). The answer is
// now the meet, which keeps the README's promise that the surface never
// offers a tool the kernel ceiling makes fail.
func TestNestedCgroupAnsweredWithAncestorMeet(t *testing.T) {
	f := newFixture(t)
	f.enf.CanShell = true
	f.cgs.Add("/o")
	f.cgs.Add("/o/i")
	o, err := f.reg.Register(registry.Request{ID: "o", Cgroup: "/o", Ceiling: "write=false,shell=none"})
	if err != nil {
		t.Fatal(err)
	}
	i, err := f.reg.Register(registry.Request{ID: "i", Cgroup: "/o/i", Role: "implement"})
	if err != nil {
		t.Logf("refused (acceptable): %v", err)
		return
	}
	meet := i.Kernel.Clamp(o.Kernel) // what the kernel enforces for /o/i
	if i.Kernel != meet {
		t.Errorf("MISLEADING: container i in /o/i (inside registered /o, kernel %s) is answered with kernel %s; the kernel enforces %s", o.Kernel, i.Kernel, meet)
	}
	s, err := f.reg.Surface("i")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range append(s.BuiltinTools, s.SubagentBuiltinTools...) {
		if policy.KernelDeniesTool(meet, tool) {
			t.Errorf("MISLEADING: the surface of i offers %s, which the kernel ceiling in force for its cgroup (%s) makes fail", tool, meet)
		}
	}
	if en, _ := f.enf.Lookup(i.CgroupID); en.Ceiling != meet {
		t.Errorf("map entry of i: %s, want %s", en.Ceiling, meet)
	}
	f.nested(t)
	f.consistent(t)
}

// nested asserts the nesting rule over the whole registry: every
// container's effective ceiling is within its parent's and within every
// registered cgroup's above its own; its map entry is its kernel ceiling;
// its stored ceiling is what its session resolves to (as GET /surface).
func (f *fixture) nested(t *testing.T) {
	t.Helper()
	checkNested(t, f.reg, f.enf)
}

func checkNested(t testing.TB, reg *registry.Registry, enf registry.Enforcer) {
	t.Helper()
	list := reg.List()
	byID := map[string]state.Container{}
	for _, c := range list {
		byID[c.ID] = c
	}
	for _, c := range list {
		if p, ok := byID[c.Parent]; ok && !c.Ceiling.Within(p.Ceiling) {
			t.Errorf("container %s (%s) is wider than its parent %s (%s)", c.ID, c.Ceiling, p.ID, p.Ceiling)
		}
		for _, o := range list {
			if strings.HasPrefix(c.Cgroup, o.Cgroup+"/") && !c.Ceiling.Within(o.Ceiling) {
				t.Errorf("container %s in %s (%s) is wider than %s in %s (%s)", c.ID, c.Cgroup, c.Ceiling, o.ID, o.Cgroup, o.Ceiling)
			}
		}
		if en, err := enf.Lookup(c.CgroupID); err != nil || en.Ceiling != c.Kernel {
			t.Errorf("container %s: map entry %+v, %v; want %s", c.ID, en, err, c.Kernel)
		}
		s, err := reg.Surface(c.ID)
		if err != nil || s.Ceiling != c.Ceiling || s.Kernel != c.Kernel || s.Fingerprint != c.Fingerprint {
			t.Errorf("container %s: surface %s/%s/%s, %v; stored %s/%s/%s", c.ID, s.Ceiling, s.Kernel, s.Fingerprint, err, c.Ceiling, c.Kernel, c.Fingerprint)
		}
	}
}

// flaky is an Enforcer whose Register fails for the cgroup ids in fail.
type flaky struct {
	*registrytest.Enforcer
	fail map[uint64]bool
}

func (e *flaky) Register(cg cgroup.Cgroup, en enforcer.Entry) error {
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
		CheckEntrypoint: func(p progcheck.Program) (string, error) { return p.Path, nil },
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

// TestNestedInACeilingNotRegisteredThroughTheDaemon: a map entry the
// daemon did not make (enforcerd run) above the cgroup bounds the kernel
// fields; a daemon registration above bounds every field (tools, depth).
func TestNestedInACeilingNotRegisteredThroughTheDaemon(t *testing.T) {
	f := newNestFixture(t)
	run := f.cgs.Add("/run-1")
	f.cgs.Add("/run-1/inner")
	if err := f.enf.Register(cgroup.Cgroup{Group: "/run-1", ID: run, Level: 1},
		enforcer.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellReadOnly}}); err != nil {
		t.Fatal(err)
	}
	c := f.register(t, registry.Request{ID: "inner", Cgroup: "/run-1/inner", Role: "implement"})
	want := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellReadOnly}
	if c.Kernel != want {
		t.Errorf("inner below an enforcerd run ceiling %s: kernel %s", want, c.Kernel)
	}
	def := policy.DefaultSession()
	if !c.Session.Tools || c.Session.DelegationDepth != def.DelegationDepth {
		t.Errorf("inner: session %s; the kernel ceiling bounds only network, write, shell", c.Session)
	}
	f.register(t, registry.Request{ID: "d", Cgroup: "/d", Ceiling: "tools=false,depth=0"})
	c2 := f.register(t, registry.Request{ID: "d-in", Cgroup: "/d/in", Role: "implement"})
	if c2.Session.Tools || c2.Session.DelegationDepth != 0 || c2.Ceiling.Tools {
		t.Errorf("d-in below a daemon registration with tools=false,depth=0: session %s, ceiling %s", c2.Session, c2.Ceiling)
	}
	checkNested(t, f.reg, f.enf)
}

// TestReconcileClampsContainersWiderThanTheirAncestors: a state file
// written before the rule was kept (a child wider than its parent, a
// container wider than a registered cgroup above it) is clamped at start,
// map entries included.
func TestReconcileClampsContainersWiderThanTheirAncestors(t *testing.T) {
	f := newNestFixture(t)
	open := policy.ResolveSurface(policy.ResolveRole("implement"), policy.DefaultSession(), "")
	closed, _ := policy.ParseCeiling("network=false,write=false", policy.DefaultSession())
	closedSurf := policy.ResolveSurface(policy.ResolveRole("general"), closed, "")
	var cs []state.Container
	for _, x := range []struct{ id, group, parent string }{{"p", "/p", ""}, {"kid", "/kid", "p"}, {"in", "/p/in", ""}, {"free", "/free", ""}} {
		id := f.cgs.Add(x.group)
		c := state.Container{ID: x.id, Cgroup: x.group, CgroupID: id, Role: "implement", Parent: x.parent,
			Session: policy.DefaultSession(), Ceiling: open.Ceiling, Kernel: open.Kernel, Fingerprint: open.Fingerprint, State: state.StateActive}
		if x.id == "p" {
			c.Role, c.Session, c.Ceiling, c.Kernel, c.Fingerprint = "general", closed, closedSurf.Ceiling, closedSurf.Kernel, closedSurf.Fingerprint
		}
		if err := f.enf.Register(cgroup.Cgroup{Group: x.group, ID: id, Level: cgroup.Level(x.group)}, enforcer.Entry{Ceiling: c.Kernel}); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if err := state.Save(f.path, cs); err != nil {
		t.Fatal(err)
	}
	rep, err := f.reg.Reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Narrowed, []string{"in", "kid"}) {
		t.Errorf("narrowed %v, want in kid", rep.Narrowed)
	}
	if got := f.narrowed(); !slices.Equal(got, []string{"in", "kid"}) {
		t.Errorf("narrowed events %v", got)
	}
	if c, _ := f.reg.Get("free"); c.Ceiling != open.Ceiling {
		t.Errorf("free changed: %s", c.Ceiling)
	}
	checkNested(t, f.reg, f.enf)
	onDisk, _ := state.Load(f.path)
	for _, c := range onDisk {
		if (c.ID == "in" || c.ID == "kid") && (c.Kernel.Network || c.Kernel.Write) {
			t.Errorf("state file: %s keeps %s", c.ID, c.Kernel)
		}
	}
}

// FuzzNesting: any sequence of registrations (with or without a parent, in
// nested cgroups, in any order), narrowings and unregistrations keeps the
// nesting rule, the map and the state file in agreement.
func FuzzNesting(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120})
	f.Add([]byte{3, 0, 7, 1, 0, 0, 2, 2, 5, 1, 9, 200, 4, 17, 33})
	f.Add([]byte{255, 254, 1, 129, 64, 32, 16, 8, 4, 2, 1, 0, 128, 77})
	groups := []string{"/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f", "/g"}
	ceilings := []string{"network=false", "write=false", "shell=read_only", "shell=none", "tools=false", "depth=0", "", "network=false,write=false"}
	roles := []string{"", "implement", "reviewer", "explore", "test"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		nf := newNestFixture(t)
		for _, g := range groups {
			nf.cgs.Add(g)
		}
		ids := []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6"}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], int(ops[i+1])
			id := ids[int(op>>2)%len(ids)]
			switch op & 3 {
			case 0, 1:
				req := registry.Request{ID: id, Cgroup: groups[arg%len(groups)], Role: roles[(arg/7)%len(roles)],
					Ceiling: ceilings[(arg/3)%len(ceilings)]}
				if op&1 == 1 {
					req.Parent = ids[(arg/5)%len(ids)]
				}
				if arg&64 != 0 {
					req.Activate = registry.ActivateExec
					req.Entrypoint = &progcheck.Program{Path: "/bin/agent", Root: "/"}
				}
				_, _ = nf.reg.Register(req)
			case 2:
				_, _ = nf.reg.Narrow(id, ceilings[arg%len(ceilings)])
			case 3:
				_ = nf.reg.Unregister(id)
			}
			checkNested(t, nf.reg, nf.enf)
			if t.Failed() {
				t.Fatalf("after op %d (%d,%d)", i/2, op, arg)
			}
		}
		list := nf.reg.List()
		onDisk, err := state.Load(nf.path)
		if err == nil && len(onDisk) != len(list) || nf.enf.Len() != len(list) {
			t.Fatalf("list %d, state file %d (%v), map %d", len(list), len(onDisk), err, nf.enf.Len())
		}
	})
}
