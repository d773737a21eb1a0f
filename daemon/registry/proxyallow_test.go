package registry_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
)

func strp(s string) *string { return &s }

// TestProxyAllowChainCollectsEveryEnclosingList: a client in a nested
// cgroup gets the lists of its container, of the containers enclosing it
// by cgroup and of their parents by id; the nearest container names it.
func TestProxyAllowChainCollectsEveryEnclosingList(t *testing.T) {
	f := newNestFixture(t)
	f.register(t, registry.Request{ID: "outer", Cgroup: "/o", ProxyAllow: strp("API.example.com., *.example.org")})
	f.register(t, registry.Request{ID: "mid", Cgroup: "/o/m"}) // no list: adds none
	f.register(t, registry.Request{ID: "inner", Cgroup: "/o/m/i", ProxyAllow: strp("api.example.com")})
	f.register(t, registry.Request{ID: "byid", Cgroup: "/x", Parent: "outer", ProxyAllow: strp("none")})
	f.cgs.Add("/o/m/i/worker")

	id, lists, err := f.reg.ProxyAllowChain("/o/m/i/worker")
	if err != nil || id != "inner" || !reflect.DeepEqual(lists, [][]string{{"api.example.com"}, {"api.example.com", "*.example.org"}}) {
		t.Fatalf("chain = %q %v %v", id, lists, err)
	}
	id, lists, err = f.reg.ProxyAllowChain("/x")
	if err != nil || id != "byid" || !reflect.DeepEqual(lists, [][]string{{}, {"api.example.com", "*.example.org"}}) {
		t.Fatalf("by parent id: %q %v %v", id, lists, err)
	}
	f.cgs.Add("/free")
	if id, lists, err = f.reg.ProxyAllowChain("/free"); err != nil || id != "" || len(lists) != 0 {
		t.Fatalf("unregistered: %q %v %v", id, lists, err)
	}
	// A cgroup that cannot be opened places nobody: the proxy refuses.
	if _, _, err = f.reg.ProxyAllowChain("/gone/x"); err == nil {
		t.Fatal("a missing cgroup was placed")
	}
}

func TestProxyAllowIsValidated(t *testing.T) {
	f := newNestFixture(t)
	f.cgs.Add("/a")
	for _, bad := range []string{"", "a.*.com", "exa mple.com", "*", "x,,y"} {
		_, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", ProxyAllow: strp(bad)})
		if !errors.Is(err, registry.ErrBadRequest) {
			t.Errorf("proxy_allow %q: %v, want ErrBadRequest", bad, err)
		}
	}
	c := f.register(t, registry.Request{ID: "a", Cgroup: "/a", ProxyAllow: strp("Bücher.example")})
	if c.ProxyAllow == nil || !reflect.DeepEqual(*c.ProxyAllow, []string{"xn--bcher-kva.example"}) {
		t.Fatalf("stored %v", c.ProxyAllow)
	}
}
