package nri

import (
	"errors"
	"strings"
	"testing"
)

// TestAttackHolesUnderOperatorMax: the operator's max_ceiling (node or
// namespace) with network=false or write=false bounds what the pod's
// author may open: a pod's allow-connect (endpoints reachable under
// network=false) or write-roots (paths writable under write=false) would
// give its containers network or writes the operator's maximum denies.
// Both are refused at CreateContainer and nothing is registered; the
// same keys under a maximum that allows the field still work.
func TestAttackHolesUnderOperatorMax(t *testing.T) {
	holes := map[string]map[string]string{
		"allow-connect": {"enforcerd.io/ceiling": "network=false,write=false", "enforcerd.io/allow-connect": "tcp:203.0.113.7:443"},
		"write-roots":   {"enforcerd.io/ceiling": "network=false,write=false", "enforcerd.io/write-roots": "/etc"},
	}
	maxima := map[string]func(*Config){
		"namespace": func(c *Config) {
			c.Namespaces = map[string]NamespacePolicy{"agents": {MaxCeiling: "network=false,write=false"}}
		},
		"node": func(c *Config) { c.MaxCeiling = "network=false,write=false" },
	}
	for level, cfg := range maxima {
		rs := newRuntime(t, "containerd")
		rr := newRealRegistry(t)
		runPlugin(t, rs, rr, cfg)
		n := 0
		for key, ann := range holes {
			n++
			c := ctr("h"+level[:2]+strings.Repeat("x", n), "agent", uint32(9000+n))
			rr.container("/kubepods/p/"+c.Id, 9000+n)
			_, err := rs.create(pod("agents", ann), c)
			if err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s max, pod %s: CreateContainer %v; want refused naming %s", level, key, err, key)
			}
			if err := rs.start(pod("agents", ann), c); err == nil {
				t.Errorf("%s max, pod %s: StartContainer accepted", level, key)
			}
		}
		if l := rr.List(); len(l) != 0 {
			t.Errorf("%s max: registered %+v", level, l)
		}
	}
	// A unix endpoint (the egress proxy's socket) stays allowed under a
	// network=false maximum; a maximum that allows the field leaves the
	// pod's holes alone.
	unix, err := ParsePod(map[string]string{"enforcerd.io/ceiling": "network=false", "enforcerd.io/allow-connect": "unix:/run/proxy.sock"}, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := (Config{MaxCeiling: "network=false"}).decide("agents", unix); !ok || err != nil {
		t.Errorf("unix endpoint under node max network=false: ok=%t %v", ok, err)
	}
	c := Config{Namespaces: map[string]NamespacePolicy{"agents": {MaxCeiling: "shell=read_only"}}}
	p, err := ParsePod(holes["write-roots"], "agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.decide("agents", p); !ok || err != nil {
		t.Errorf("write-roots under a max that allows writes: ok=%t %v", ok, err)
	}
	if _, _, err := (Config{MaxCeiling: "write=false"}).decide("agents", p); !errors.Is(err, ErrRefused) {
		t.Errorf("write-roots under node max write=false: %v, want ErrRefused", err)
	}
}
