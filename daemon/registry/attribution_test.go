package registry_test

import (
	"fmt"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
)

// TestAttributionOutlivesUnregistration: a summary written after its
// container ended still names it; ByCgroup does not (the container is
// gone); the memory of removals is bounded.
func TestAttributionOutlivesUnregistration(t *testing.T) {
	f := newFixture(t)
	f.reg = registry.New(registry.Options{Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, GoneKept: 8})
	f.cgs.Add("/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false", Role: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := f.reg.Attribution(c.CgroupID); !ok || got.ID != "a" || got.Fingerprint != c.Fingerprint {
		t.Fatalf("registered: Attribution = %q, %v", got.ID, ok)
	}
	if err := f.reg.Unregister("a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.reg.ByCgroup(c.CgroupID); ok {
		t.Fatal("ByCgroup still finds a removed container")
	}
	if got, ok := f.reg.Attribution(c.CgroupID); !ok || got.ID != "a" {
		t.Fatalf("after Unregister: Attribution = %q, %v, want a", got.ID, ok)
	}
	for i := 0; i < 8; i++ {
		g := fmt.Sprintf("/g%d", i)
		f.cgs.Add(g)
		if _, err := f.reg.Register(registry.Request{ID: g[1:], Cgroup: g, Ceiling: "network=false", Role: "implement"}); err != nil {
			t.Fatal(err)
		}
		if err := f.reg.Unregister(g[1:]); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := f.reg.Attribution(c.CgroupID); ok {
		t.Fatal("the oldest of more than GoneKept removals is still remembered")
	}
	f.consistent(t)
}
