package registry_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/policy"
)

// TestCheckIsADryRun: Check answers what Register would refuse before it
// looks at a cgroup, and changes nothing.
func TestCheckIsADryRun(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/c/a")
	if _, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	k, err := f.reg.Check(registry.Request{ID: "b", Ceiling: "write=false", Role: "implement"})
	if err != nil || k.Write || k.Shell != policy.ShellFull {
		t.Fatalf("Check = %v, %v", k, err)
	}
	for name, tc := range map[string]struct {
		req  registry.Request
		want error
	}{
		"registered id":   {registry.Request{ID: "a", Ceiling: "write=false"}, registry.ErrConflict},
		"unknown parent":  {registry.Request{ID: "b", Parent: "zz"}, registry.ErrNotFound},
		"bad ceiling":     {registry.Request{ID: "b", Ceiling: "write=perhaps"}, registry.ErrBadRequest},
		"bad role":        {registry.Request{ID: "b", Role: "root"}, registry.ErrBadRequest},
		"bad id":          {registry.Request{ID: "-b"}, registry.ErrBadRequest},
		"endpoints, net":  {registry.Request{ID: "b", AllowConnect: []string{"tcp:10.0.0.1:443"}}, registry.ErrBadRequest},
		"cannot enforce":  {registry.Request{ID: "b", Ceiling: "shell=none"}, registry.ErrCannotEnforce},
		"bad write roots": {registry.Request{ID: "b", Ceiling: "write=false", WriteRoots: []string{"rel"}}, registry.ErrBadRequest},
		"bad proxy allow": {registry.Request{ID: "b", ProxyAllow: new(string)}, registry.ErrBadRequest},
	} {
		if _, err := f.reg.Check(tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if f.reg.Len() != 1 || f.enf.Len() != 1 {
		t.Fatalf("Check changed the registry: %d containers, %d map entries", f.reg.Len(), f.enf.Len())
	}
	f.consistent(t)
}

// TestCheckUsesTheSpecLayer: Check judges the request's spec layer as
// Register does: on a host without BPF LSM write=false is refused without
// a spec that gives it, and passes (partial, with allow_partial) with one;
// the refusal names what the spec lacks.
func TestCheckUsesTheSpecLayer(t *testing.T) {
	enf, cgs := registrytest.NewEnforcer(false), registrytest.NewCgroups()
	reg := registry.New(registry.Options{Enforcer: enf, Cgroups: cgs, StatePath: filepath.Join(t.TempDir(), "state.json"), AllowPartial: true})
	if _, err := reg.Check(registry.Request{ID: "a", Ceiling: "write=false"}); !errors.Is(err, registry.ErrCannotEnforce) {
		t.Fatalf("write=false without a spec: %v, want ErrCannotEnforce", err)
	}
	_, err := reg.Check(registry.Request{ID: "a", Ceiling: "write=false", Spec: &coverage.SpecLayer{WriteMissing: "root-readonly: root.readonly is not true"}})
	if !errors.Is(err, registry.ErrCannotEnforce) || !strings.Contains(err.Error(), "root-readonly") {
		t.Fatalf("write=false, spec without write: %v, want ErrCannotEnforce naming root-readonly", err)
	}
	if _, err := reg.Check(registry.Request{ID: "a", Ceiling: "write=false", Spec: &coverage.SpecLayer{Write: true}}); err != nil {
		t.Fatalf("write=false, spec with write: %v, want accepted (partial, allow_partial)", err)
	}
}
