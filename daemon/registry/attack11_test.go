package registry_test

// attack11: the daemon's nesting rules at its entry points (API register,
// narrow, surface; the hook's enforcerd.io/parent). Each test FAILS while
// the widening or misleading behaviour it demonstrates exists. In-memory
// fakes: no root, no BPF. Native reproduction with the real daemon and
// cgroup-BPF is in the attack11 report.

import (
	"slices"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/policy"
)

// TestAttack11ChildWiderThanParentAfterParentNarrowed: "enforcerd.io/parent
// ... the child is clamped by the parent's effective ceiling" (hook help,
// deploy/README); registry.Resolve: "So a child is never wider than its
// parent"; TestChildNeverWiderThanParent checks it at registration only.
// Narrowing the parent afterwards (POST /v1/containers/p/narrow, which a
// confined parent agent may call on itself) leaves every existing child,
// and every later grandchild registered under such a child, with the
// parent's old, wider ceiling: in the kernel map, in the API and on the
// surface. Parent and child cgroups are siblings (the usual case for a
// sub-agent container), so the kernel's ancestor meet does not help.
func TestAttack11ChildWiderThanParentAfterParentNarrowed(t *testing.T) {
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
	// A grandchild registered now, under the stale child, is wider than
	// its grandparent too.
	r, err := f.reg.Register(registry.Request{ID: "r", Cgroup: "/r", Parent: "q", Role: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Ceiling.Within(p.Ceiling) {
		t.Errorf("WIDENED: grandchild r (parent q, grandparent p=%s) registered after the narrowing gets %s", p.Ceiling, r.Ceiling)
	}
	if s, _ := f.reg.Surface("q"); slices.Contains(s.BuiltinTools, "Write") {
		t.Logf("q's surface still offers Write: %v", s.BuiltinTools)
	}
}

// TestAttack11NestedCgroupIgnoresRegisteredAncestor: design.md "The meet
// over cgroup ancestors": a registered cgroup's ceiling holds its whole
// subtree and "the kernel walk makes the meet hold even for cgroups nobody
// registered through the daemon". The daemon accepts a container in a
// cgroup below another registered container without "parent" and answers
// (response, list, GET /surface) with a kernel ceiling and tool lists
// computed from its own registration alone: write=true, Write and Edit
// offered, while the kernel denies every write in that subtree (shown in
// the VM by daemon TestAttack11NestedRegistrationSurfaceListsDeniedTools).
// Either a refusal, an implicit parent, or the meet in the answer would
// keep the README's promise that the surface never offers a tool the
// kernel ceiling makes fail.
func TestAttack11NestedCgroupIgnoresRegisteredAncestor(t *testing.T) {
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
}
