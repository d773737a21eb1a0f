package registry

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
)

// stepsFixture is a registry on in-memory fakes for the steps of Register
// (registration.go), called one at a time under the registry's lock.
type stepsFixture struct {
	r    *Registry
	enf  *registrytest.Enforcer
	cgs  *registrytest.Cgroups
	path string
	fail bool // Save fails
}

func newStepsFixture(t *testing.T) *stepsFixture {
	t.Helper()
	f := &stepsFixture{enf: registrytest.NewEnforcer(true), cgs: registrytest.NewCgroups(),
		path: filepath.Join(t.TempDir(), "state.json")}
	f.r = New(Options{Enforcer: f.enf, Cgroups: f.cgs, StatePath: f.path, SelfGroup: "/system.slice/enforcerd.service",
		Save: func(p string, cs []state.Container) error {
			if f.fail {
				return errors.New("injected save failure")
			}
			return state.Save(p, cs)
		}})
	return f
}

// plan locks the registry and plans req.
func (f *stepsFixture) plan(t *testing.T, req Request) (registration, error) {
	t.Helper()
	if err := req.validate(); err != nil {
		t.Fatal(err)
	}
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	return f.r.plan(req)
}

// files is the state file's and the intent's content ("" when absent).
func (f *stepsFixture) files(t *testing.T) [2]string {
	t.Helper()
	var out [2]string
	for i, p := range []string{f.path, state.IntentPath(f.path)} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// TestPlanChangesNothing: plan derives the whole registration (the meet
// with the parent and the registered cgroup above, the narrowing of a
// container registered before it below its cgroup, the kernel entry) and
// writes nothing: no map entry, no state file, no intent, no memory.
func TestPlanChangesNothing(t *testing.T) {
	f := newStepsFixture(t)
	for _, g := range []string{"/p", "/c", "/c/a", "/c/a/inner"} {
		f.cgs.Add(g)
	}
	for _, req := range []Request{
		{ID: "p", Cgroup: "/p", Ceiling: "network=false"},
		{ID: "outer", Cgroup: "/c"},
		{ID: "inner", Cgroup: "/c/a/inner"},
	} {
		if _, err := f.r.Register(req); err != nil {
			t.Fatal(err)
		}
	}
	before, mapBefore := f.files(t), f.enf.Len()
	innerBefore, _ := f.enf.Lookup(f.r.byID["inner"].CgroupID)
	p, err := f.plan(t, Request{ID: "a", Cgroup: "/c/a", Parent: "p", Ceiling: "write=false", Activate: ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	want := policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}
	if p.c.Kernel != want || p.cg.Group != "/c/a" || p.c.CgroupID != p.cg.ID || p.c.State != state.StateActive {
		t.Errorf("planned container: kernel %v cgroup %s (%d/%d) state %s; want %v in /c/a, active until install",
			p.c.Kernel, p.cg.Group, p.c.CgroupID, p.cg.ID, p.c.State, want)
	}
	if len(p.narrowings) != 1 || p.narrowings[0].new.ID != "inner" || p.narrowings[0].new.Kernel != want {
		t.Errorf("narrowings = %+v; want inner clamped to %v", p.narrowings, want)
	}
	if en := p.kernelEntry(); en.Ceiling != want || !en.Pending || en.AllowPartial {
		t.Errorf("kernel entry = %+v; want %v pending, in full", en, want)
	}
	if after := f.files(t); after != before || f.enf.Len() != mapBefore {
		t.Errorf("plan wrote: state/intent %q -> %q, map %d -> %d entries", before, after, mapBefore, f.enf.Len())
	}
	if en, _ := f.enf.Lookup(f.r.byID["inner"].CgroupID); en.Ceiling != innerBefore.Ceiling {
		t.Errorf("plan narrowed inner in the map: %v -> %v", innerBefore.Ceiling, en.Ceiling)
	}
	if _, ok := f.r.byID["a"]; ok || len(f.r.byID) != 3 {
		t.Errorf("plan registered in memory: %v", f.r.byID)
	}
}

// TestPlanRefusals: what plan refuses, with the error kind the API maps.
func TestPlanRefusals(t *testing.T) {
	f := newStepsFixture(t)
	f.cgs.Add("/a")
	f.cgs.Add("/foreign")
	f.cgs.Add("/free")
	if _, err := f.r.Register(Request{ID: "a", Cgroup: "/a"}); err != nil {
		t.Fatal(err)
	}
	foreign, _ := f.cgs.Open("/foreign")
	if err := f.enf.Register(foreign, enforcer.Entry{Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  Request
		want error
	}{
		{"id registered", Request{ID: "a", Cgroup: "/free"}, ErrConflict},
		{"parent unknown", Request{ID: "b", Cgroup: "/free", Parent: "nobody"}, ErrNotFound},
		{"cgroup registered", Request{ID: "b", Cgroup: "/a"}, ErrConflict},
		{"cgroup holds an entry the daemon did not install", Request{ID: "b", Cgroup: "/foreign"}, ErrConflict},
		{"cgroup missing", Request{ID: "b", Cgroup: "/missing"}, ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.plan(t, tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("plan = %v; want %v", err, tc.want)
			}
		})
	}
}

// TestInstallThenCommitFailureLeavesNothing: install writes the entry
// (pending: no other process in the cgroup), and a commit whose save
// fails takes it and the narrowing of the container nested in it back out.
func TestInstallThenCommitFailureLeavesNothing(t *testing.T) {
	f := newStepsFixture(t)
	f.cgs.Add("/c/inner")
	if _, err := f.r.Register(Request{ID: "inner", Cgroup: "/c/inner"}); err != nil {
		t.Fatal(err)
	}
	innerID := f.r.byID["inner"].CgroupID
	innerBefore, _ := f.enf.Lookup(innerID)
	p, err := f.plan(t, Request{ID: "c", Cgroup: "/c", Ceiling: "network=false", Activate: ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	entry := p.kernelEntry()
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	evs, err := f.r.install(&p, &entry)
	if err != nil || len(evs) != 0 || p.c.State != state.StatePending || p.c.PendingDeadline == nil {
		t.Fatalf("install = %v, %v; container %s deadline %v; want pending, no event", evs, err, p.c.State, p.c.PendingDeadline)
	}
	if en, err := f.enf.Lookup(p.cg.ID); err != nil || !en.Pending {
		t.Fatalf("after install: map entry %+v, %v; want pending", en, err)
	}
	f.fail = true
	if _, err := f.r.commit(p, entry); err == nil {
		t.Fatal("commit with a failing save succeeded")
	}
	if _, err := f.enf.Lookup(p.cg.ID); err == nil {
		t.Error("the entry stayed in the map after a failed commit")
	}
	if en, _ := f.enf.Lookup(innerID); en.Ceiling != innerBefore.Ceiling {
		t.Errorf("inner's narrowing stayed in the map: %v, was %v", en.Ceiling, innerBefore.Ceiling)
	}
	if ids := slices.Collect(maps.Keys(f.r.byID)); len(ids) != 1 || ids[0] != "inner" {
		t.Errorf("memory after a failed commit: %v", ids)
	}
}
