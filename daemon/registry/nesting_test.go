package registry_test

// Nesting: a container is never wider than its parent (by id) nor than any
// registered cgroup above its own, at registration, after an ancestor is
// narrowed, and after an ancestor is registered later. In-memory fakes: no
// root, no BPF (the kernel side is daemon
// TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies in the VM).

import (
	"slices"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
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

// TestNestedInACeilingNotRegisteredThroughTheDaemon: a map entry the
// daemon did not make (enforcerd run) above the cgroup bounds the kernel
// fields; a daemon registration above bounds every field (tools, depth).
func TestNestedInACeilingNotRegisteredThroughTheDaemon(t *testing.T) {
	f := newNestFixture(t)
	run := f.cgs.Add("/run-1")
	f.cgs.Add("/run-1/inner")
	if err := f.enf.Register(cgroup.Cgroup{Group: "/run-1", ID: run, Level: 1},
		entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellReadOnly}}); err != nil {
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
		if err := f.enf.Register(cgroup.Cgroup{Group: x.group, ID: id, Level: cgroup.Level(x.group)}, entry.Entry{Ceiling: c.Kernel}); err != nil {
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
