package registry_test

import (
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/entry"
)

func TestIdentify(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/c/a/inner")
	f.cgs.Add("/host")
	runID := f.cgs.Add("/run")
	f.enf.M[runID] = entry.Entry{}
	a, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "network=false"})
	if err != nil {
		t.Fatal(err)
	}
	for group, want := range map[string]registry.Caller{
		"/host":       {},
		"/":           {},
		"/c/a":        {Confined: true, Container: "a", CgroupID: a.CgroupID},
		"/c/a/inner":  {Confined: true, Container: "a", CgroupID: a.CgroupID},
		"/run":        {Confined: true, CgroupID: runID},
		"/vanished":   {Confined: true},
		"relative/xx": {Confined: true},
	} {
		if got := f.reg.Identify(group); got != want {
			t.Errorf("Identify(%q) = %+v, want %+v", group, got, want)
		}
		// Scope agrees with Identify without the registry's lock.
		if confined, id := f.reg.Scope(group); confined != want.Confined || id != want.CgroupID {
			t.Errorf("Scope(%q) = %t, %d; want %t, %d", group, confined, id, want.Confined, want.CgroupID)
		}
	}
}
