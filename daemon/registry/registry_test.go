package registry_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

type fixture struct {
	reg   *registry.Registry
	enf   *registrytest.Enforcer
	cgs   *registrytest.Cgroups
	path  string
	fails *bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(),
		path: filepath.Join(t.TempDir(), "state.json"), fails: new(bool)}
	f.reg = f.open()
	return f
}

func (f *fixture) open() *registry.Registry {
	return registry.New(registry.Options{
		Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, SelfGroup: "/system.slice/enforcerd.service",
		Save: func(p string, cs []state.Container) error {
			if *f.fails {
				return errors.New("injected save failure")
			}
			return state.Save(p, cs)
		},
	})
}

// consistent asserts that the map, the state file and List agree.
func (f *fixture) consistent(t *testing.T) {
	t.Helper()
	list := f.reg.List()
	onDisk, err := state.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != len(list) || f.enf.Len() != len(list) {
		t.Fatalf("inconsistent: list %d, state file %d, map %d", len(list), len(onDisk), f.enf.Len())
	}
	for _, c := range list {
		if _, err := f.enf.Lookup(c.CgroupID); err != nil {
			t.Fatalf("container %s: not in map: %v", c.ID, err)
		}
	}
}

func TestRegisterInstallsEffectiveCeiling(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/c/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/c/a", Ceiling: "network=false,write=false", Activate: registry.ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	want := policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}
	if c.Kernel != want {
		t.Fatalf("kernel = %v, want %v", c.Kernel, want)
	}
	en, err := f.enf.Lookup(c.CgroupID)
	if err != nil || en.Ceiling != want || !en.Pending {
		t.Fatalf("map entry = %+v, %v; want %v pending", en, err, want)
	}
	if c.Fingerprint == "" || c.Fingerprint != policy.ResolveSurface(policy.UnspecifiedRole(), c.Session, "").Fingerprint {
		t.Fatalf("fingerprint %q does not match the surface", c.Fingerprint)
	}
	f.consistent(t)
}

func TestChildNeverWiderThanParent(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/p")
	f.cgs.Add("/q")
	p, err := f.reg.Register(registry.Request{ID: "p", Cgroup: "/p", Ceiling: "network=false"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"", "network=true", "network=true,write=true,depth=9", "write=false"} {
		req := registry.Request{ID: "q", Cgroup: "/q", Parent: "p", Ceiling: text, Role: "implement"}
		c, err := f.reg.Register(req)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if !c.Ceiling.Within(p.Ceiling) || c.Kernel.Network {
			t.Fatalf("%q: child %v is wider than parent %v", text, c.Ceiling, p.Ceiling)
		}
		if err := f.reg.Unregister("q"); err != nil {
			t.Fatal(err)
		}
	}
	f.consistent(t)
}

func TestRegisterErrors(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/a")
	f.cgs.Add("/b")
	f.cgs.Add("/system.slice/enforcerd.service")
	f.cgs.SetPid(42, "/b")
	if _, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  registry.Request
		want error
	}{
		{"empty id", registry.Request{Cgroup: "/b"}, registry.ErrBadRequest},
		{"bad id", registry.Request{ID: "../x", Cgroup: "/b"}, registry.ErrBadRequest},
		{"no cgroup", registry.Request{ID: "x"}, registry.ErrBadRequest},
		{"relative cgroup", registry.Request{ID: "x", Cgroup: "b"}, registry.ErrBadRequest},
		{"root cgroup", registry.Request{ID: "x", Cgroup: "/"}, registry.ErrBadRequest},
		{"daemon's own cgroup", registry.Request{ID: "x", Cgroup: "/system.slice"}, registry.ErrBadRequest},
		{"missing cgroup", registry.Request{ID: "x", Cgroup: "/nope"}, registry.ErrBadRequest},
		{"pid elsewhere", registry.Request{ID: "x", Cgroup: "/a", PID: 42}, registry.ErrBadRequest},
		{"unknown pid", registry.Request{ID: "x", PID: 43}, registry.ErrBadRequest},
		{"bad ceiling", registry.Request{ID: "x", Cgroup: "/b", Ceiling: "network=maybe"}, registry.ErrBadRequest},
		{"unknown key", registry.Request{ID: "x", Cgroup: "/b", Ceiling: "netwrk=false"}, registry.ErrBadRequest},
		{"bad activate", registry.Request{ID: "x", Cgroup: "/b", Activate: "later"}, registry.ErrBadRequest},
		{"duplicate id", registry.Request{ID: "a", Cgroup: "/b"}, registry.ErrConflict},
		{"duplicate cgroup", registry.Request{ID: "x", Cgroup: "/a"}, registry.ErrConflict},
		{"unknown parent", registry.Request{ID: "x", Cgroup: "/b", Parent: "nope"}, registry.ErrNotFound},
		{"self parent", registry.Request{ID: "x", Cgroup: "/b", Parent: "x"}, registry.ErrBadRequest},
		{"shell not enforceable", registry.Request{ID: "x", Cgroup: "/b", Role: "explore"}, registry.ErrCannotEnforce},
	}
	for _, tc := range cases {
		_, err := f.reg.Register(tc.req)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := len(f.reg.List()); n != 1 {
		t.Fatalf("list has %d containers after refused requests, want 1", n)
	}
	f.consistent(t)
	// Audit-only accepts what cannot be enforced.
	if _, err := f.reg.Register(registry.Request{ID: "x", PID: 42, Role: "explore", AuditOnly: true}); err != nil {
		t.Fatal(err)
	}
	f.consistent(t)
}

// A role is a security setting: a name that is not a role, alias or
// member title, and a blank one, is refused before anything is installed;
// it never runs as explore, nor as the default.
func TestRegisterRefusesUnknownRoleNames(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/b")
	for _, role := range []string{"reviwer", "hacker", "auditor", " ", "\t", "wor\u212Aer", "general\x00"} {
		_, err := f.reg.Register(registry.Request{ID: "x", Cgroup: "/b", Role: role, Ceiling: "network=false", AuditOnly: true})
		if !errors.Is(err, registry.ErrBadRequest) || !errors.Is(err, policy.ErrUnknownRole) {
			t.Errorf("role %q: err = %v, want a bad request naming the role", role, err)
			continue
		}
		if !strings.Contains(err.Error(), "valid names: roles advisor, custom, explore,") {
			t.Errorf("role %q: %v does not list the valid names", role, err)
		}
	}
	if f.enf.Len() != 0 || len(f.reg.List()) != 0 {
		t.Fatal("a refused role left state behind")
	}
	// Declared names in any ASCII case, member titles included.
	for i, role := range []string{"Reviewer", " scout ", "MANAGER", "smoke-runner"} {
		id := fmt.Sprintf("ok%d", i)
		f.cgs.Add("/" + id)
		c, err := f.reg.Register(registry.Request{ID: id, Cgroup: "/" + id, Role: role, AuditOnly: true})
		if err != nil {
			t.Fatalf("role %q: %v", role, err)
		}
		res, _ := policy.LookupRole(role)
		if want := policy.ResolveSurface(res, c.Session, ""); c.Fingerprint != want.Fingerprint || c.Kernel != want.Kernel {
			t.Fatalf("role %q: registered %v %s, want %v %s", role, c.Kernel, c.Fingerprint, want.Kernel, want.Fingerprint)
		}
	}
}

// A state file written when any name was accepted may hold a role that is
// not declared; the container keeps the explore posture it was registered
// with, its surface says so, and it can still be narrowed.
func TestStoredUnknownRoleKeepsExplore(t *testing.T) {
	f := newFixture(t)
	id := f.cgs.Add("/old")
	explore := policy.ResolveSurface(policy.ResolveRole("explore"), policy.DefaultSession(), "")
	old := state.Container{ID: "old", Cgroup: "/old", CgroupID: id, Role: "auditor", Session: policy.DefaultSession(),
		Ceiling: explore.Ceiling, Kernel: explore.Kernel, Fingerprint: explore.Fingerprint, AuditOnly: true, State: state.StateActive}
	if err := state.Save(f.path, []state.Container{old}); err != nil {
		t.Fatal(err)
	}
	f.enf.M[id] = entry.Entry{Ceiling: old.Kernel, AuditOnly: true}
	reg := f.open()
	if _, err := reg.Reconcile(); err != nil {
		t.Fatal(err)
	}
	s, err := reg.Surface("old")
	if err != nil || s.Role != policy.RoleExplore || s.Label != "auditor" || s.Fingerprint != old.Fingerprint || len(s.Warnings) != 1 {
		t.Fatalf("surface = %+v, %v", s, err)
	}
	c, err := reg.Narrow("old", "network=false")
	if err != nil || c.Kernel.Network || c.Kernel.Write || !c.Ceiling.Within(old.Ceiling) {
		t.Fatalf("narrow = %+v, %v", c, err)
	}
}

func TestCannotEnforceWriteWithoutLSM(t *testing.T) {
	f := newFixture(t)
	f.enf.CanWrite = false
	f.cgs.Add("/a")
	_, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "write=false"})
	if !errors.Is(err, registry.ErrCannotEnforce) {
		t.Fatalf("err = %v, want ErrCannotEnforce", err)
	}
	f.consistent(t)
}

func TestNothingHalfAppliedWhenStateWriteFails(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/a")
	f.cgs.Add("/b")
	if _, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	*f.fails = true
	if _, err := f.reg.Register(registry.Request{ID: "b", Cgroup: "/b", Ceiling: "network=false"}); err == nil {
		t.Fatal("register succeeded with a failing state write")
	}
	if err := f.reg.Unregister("a"); err == nil {
		t.Fatal("unregister succeeded with a failing state write")
	}
	if _, err := f.reg.Narrow("a", "write=false"); err == nil {
		t.Fatal("narrow succeeded with a failing state write")
	}
	*f.fails = false
	f.consistent(t)
	c, _ := f.reg.Get("a")
	en, _ := f.enf.Lookup(c.CgroupID)
	if en.Ceiling.Network || !en.Ceiling.Write {
		t.Fatalf("map entry of a changed by failed operations: %+v", en)
	}
}

func TestNarrowNeverWidens(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/a")
	c, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.reg.Narrow("a", "network=true,write=false")
	if err != nil {
		t.Fatal(err)
	}
	if n.Kernel.Network || n.Kernel.Write || !n.Ceiling.Within(c.Ceiling) {
		t.Fatalf("narrowed to %v from %v", n.Ceiling, c.Ceiling)
	}
	if _, err := f.reg.Narrow("nope", "write=false"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := f.reg.Narrow("a", "bogus"); !errors.Is(err, registry.ErrBadRequest) {
		t.Fatalf("bad text: %v", err)
	}
	f.consistent(t)
}

func TestUnregisterUnknown(t *testing.T) {
	f := newFixture(t)
	if err := f.reg.Unregister("nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

// TestPartialCoverage: on a host without BPF LSM (the fake with
// CanWrite=false) network=false is enforced only in part. Without
// AllowPartial the registration is refused with ErrPartialCoverage (which
// is also ErrCannotEnforce) and nothing is installed; with it the container
// is registered, says what is not enforced, Unenforced counts it, and the
// registered event carries the gap codes. A field with no mechanism at all
// (write=false here) is refused even with AllowPartial.
func TestPartialCoverage(t *testing.T) {
	for _, allow := range []bool{false, true} {
		enf, cgs := registrytest.NewEnforcer(false), registrytest.NewCgroups()
		cgs.Add("/ctr/a")
		cgs.Add("/ctr/b")
		var evs []registry.Event
		reg := registry.New(registry.Options{Enforcer: enf, Cgroups: cgs, StatePath: filepath.Join(t.TempDir(), "state.json"),
			AllowPartial: allow, OnEvent: func(e registry.Event) { evs = append(evs, e) }})
		c, err := reg.Register(registry.Request{ID: "a", Cgroup: "/ctr/a", Ceiling: "network=false"})
		if !allow {
			if !errors.Is(err, registry.ErrPartialCoverage) || !errors.Is(err, registry.ErrCannotEnforce) {
				t.Fatalf("allow_partial=false: err %v, want ErrPartialCoverage", err)
			}
			if enf.Len() != 0 || reg.Len() != 0 || len(evs) != 0 {
				t.Fatalf("a refused registration left state: map %d, registry %d, events %v", enf.Len(), reg.Len(), evs)
			}
			continue
		}
		if err != nil {
			t.Fatalf("allow_partial=true: %v", err)
		}
		var codes []string
		for _, g := range c.Unenforced {
			codes = append(codes, g.Code)
		}
		if fmt.Sprint(codes) != fmt.Sprint([]string{coverage.GapNetworkNonInet, coverage.GapTamper}) {
			t.Errorf("unenforced %v", codes)
		}
		if en, _ := enf.Lookup(c.CgroupID); !en.AllowPartial {
			t.Errorf("map entry %+v not marked AllowPartial", en)
		}
		if got := reg.Unenforced(); got[coverage.GapNetworkNonInet] != 1 || got[coverage.GapTamper] != 1 {
			t.Errorf("Unenforced() = %v", got)
		}
		if len(evs) != 1 || evs[0].Kind != registry.EventRegistered || fmt.Sprint(evs[0].Unenforced) != fmt.Sprint(codes) {
			t.Errorf("events %+v, want one %s with %v", evs, registry.EventRegistered, codes)
		}
		if _, err := reg.Register(registry.Request{ID: "b", Cgroup: "/ctr/b", Ceiling: "write=false"}); !errors.Is(err, registry.ErrCannotEnforce) || errors.Is(err, registry.ErrPartialCoverage) {
			t.Errorf("write=false without BPF LSM: err %v, want ErrCannotEnforce (not partial)", err)
		}
	}
}
