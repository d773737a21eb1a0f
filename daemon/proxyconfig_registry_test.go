package daemon

import (
	"path/filepath"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/proxy"
)

// TestProxyRegistryAdapter: the daemon hands the proxy every enclosing
// container's list; "none" matches nothing.
func TestProxyRegistryAdapter(t *testing.T) {
	cgs := registrytest.NewCgroups()
	reg := registry.New(registry.Options{Enforcer: registrytest.NewEnforcer(true), Cgroups: cgs, StatePath: filepath.Join(t.TempDir(), "s.json")})
	cgs.Add("/a/b/c")
	s1, s2 := "*.example.com", "none"
	for _, r := range []registry.Request{{ID: "a", Cgroup: "/a", ProxyAllow: &s1}, {ID: "b", Cgroup: "/a/b", ProxyAllow: &s2}} {
		if _, err := reg.Register(r); err != nil {
			t.Fatal(err)
		}
	}
	id, limits, err := proxyRegistry{reg}.ProxyLimits("/a/b/c")
	if err != nil || id != "b" || len(limits) != 2 {
		t.Fatalf("%q %v %v", id, limits, err)
	}
	tgt := proxy.Target{Host: "api.example.com", Port: 443}
	if tgt.AllowedBy(limits[0]) || !tgt.AllowedBy(limits[1]) {
		t.Fatalf("none matched or the outer list did not: %v", limits)
	}
}
