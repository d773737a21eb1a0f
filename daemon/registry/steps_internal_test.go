package registry

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
)

// stepsFixture is a registry on in-memory fakes for the steps of
// Register (registration.go), CheckPending (pending_check.go) and a sweep
// (sweep.go), called one at a time under the registry's lock.
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
	if err := f.enf.Register(foreign, entry.Entry{Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}}); err != nil {
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
	ent := p.kernelEntry()
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	evs, err := f.r.install(&p, &ent)
	if err != nil || len(evs) != 0 || p.c.State != state.StatePending || p.c.PendingDeadline == nil {
		t.Fatalf("install = %v, %v; container %s deadline %v; want pending, no event", evs, err, p.c.State, p.c.PendingDeadline)
	}
	if en, err := f.enf.Lookup(p.cg.ID); err != nil || !en.Pending {
		t.Fatalf("after install: map entry %+v, %v; want pending", en, err)
	}
	f.fail = true
	if _, err := f.r.commit(p, ent); err == nil {
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

// TestCheckPendingLockedDecides: the decision of CheckPending for one
// container (checkPendingLocked), alone: the registry's memory and state
// file are the caller's to update.
func TestCheckPendingLockedDecides(t *testing.T) {
	type setup func(t *testing.T, f *stepsFixture, c state.Container) state.Container
	cases := []struct {
		name      string
		setup     setup
		later     time.Duration // now, after the registration
		wantOK    bool
		wantKind  string
		wantState string
	}{
		{"still pending", nil, 0, false, "", state.StatePending},
		{"activated by an exec", func(t *testing.T, f *stepsFixture, c state.Container) state.Container {
			en, _ := f.enf.Lookup(c.CgroupID)
			en.Pending = false
			cg, _ := f.cgs.Open(c.Cgroup)
			if err := f.enf.Register(cg, en); err != nil {
				t.Fatal(err)
			}
			return c
		}, 0, true, EventActivatedAtExec, state.StateActive},
		{"deadline passed", nil, time.Hour, true, EventFrozen, state.StateFrozen},
		{"process entered without exec", func(t *testing.T, f *stepsFixture, c state.Container) state.Container {
			f.cgs.SetPid(7, c.Cgroup)
			return c
		}, 0, true, EventActivatedImmediately, state.StateActive},
		{"frozen, then thawed", func(t *testing.T, f *stepsFixture, c state.Container) state.Container {
			c, _, _ = f.r.checkPendingLocked(c, time.Now().Add(time.Hour))
			if err := f.cgs.Thaw(c.Cgroup); err != nil {
				t.Fatal(err)
			}
			return c
		}, time.Hour, true, EventRefrozen, state.StateFrozen},
		{"map entry missing", func(t *testing.T, f *stepsFixture, c state.Container) state.Container {
			if err := f.enf.Unregister(c.CgroupID); err != nil {
				t.Fatal(err)
			}
			return c
		}, time.Hour, false, "", state.StatePending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStepsFixture(t)
			f.cgs.Add("/c")
			c, err := f.r.Register(Request{ID: "c", Cgroup: "/c", Ceiling: "network=false", Activate: ActivateExec})
			if err != nil || c.State != state.StatePending {
				t.Fatalf("register: %v, %v; want pending", c.State, err)
			}
			f.r.mu.Lock()
			defer f.r.mu.Unlock()
			if tc.setup != nil {
				c = tc.setup(t, f, c)
			}
			got, ev, ok := f.r.checkPendingLocked(c, time.Now().Add(tc.later))
			if ok != tc.wantOK || ev.Kind != tc.wantKind || got.State != tc.wantState {
				t.Fatalf("checkPendingLocked = %s, %q, %v; want %s, %q, %v", got.State, ev.Kind, ok, tc.wantState, tc.wantKind, tc.wantOK)
			}
			if en, err := f.enf.Lookup(c.CgroupID); err == nil && en.Pending != (got.State == state.StatePending || got.State == state.StateFrozen) {
				t.Errorf("map entry pending=%v for a container %s", en.Pending, got.State)
			}
		})
	}
}

// TestSweepSteps: sweepOneLocked and dropOrphansLocked alone, one
// container per outcome, and map entries of gone and live cgroups no
// container owns.
func TestSweepSteps(t *testing.T) {
	f := newStepsFixture(t)
	for _, g := range []string{"/kept", "/gone", "/replaced", "/unpinned", "/stray-live", "/stray-gone"} {
		f.cgs.Add(g)
	}
	for _, id := range []string{"kept", "gone", "replaced", "unpinned"} {
		if _, err := f.r.Register(Request{ID: id, Cgroup: "/" + id, Activate: ActivateExec}); err != nil {
			t.Fatal(err)
		}
	}
	open := entry.Entry{Ceiling: policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}}
	for _, g := range []string{"/stray-live", "/stray-gone"} {
		cg, _ := f.cgs.Open(g)
		if err := f.enf.Register(cg, open); err != nil {
			t.Fatal(err)
		}
	}
	strayGone, _ := f.cgs.Open("/stray-gone")
	f.cgs.Remove("/gone")
	f.cgs.Remove("/stray-gone")
	f.cgs.Remove("/replaced")
	f.cgs.Add("/replaced") // a new cgroup at the path: another id
	if err := f.enf.Unregister(f.r.byID["unpinned"].CgroupID); err != nil {
		t.Fatal(err)
	}
	gone, replaced := f.r.byID["gone"].CgroupID, f.r.byID["replaced"].CgroupID
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	inMap := f.r.mapEntries()
	var rep Report
	for _, id := range []string{"gone", "kept", "replaced", "unpinned"} {
		f.r.sweepOneLocked(id, inMap, false, &rep)
	}
	if !slices.Equal(rep.Kept, []string{"kept"}) || !slices.Equal(rep.Dropped, []string{"gone", "replaced"}) ||
		!slices.Equal(rep.Reinstalled, []string{"unpinned"}) || len(rep.Failed) != 0 {
		t.Errorf("report = %+v; want kept [kept], dropped [gone replaced], reinstalled [unpinned]", rep)
	}
	for _, id := range []uint64{gone, replaced} {
		if _, err := f.enf.Lookup(id); err == nil {
			t.Errorf("map entry of dropped cgroup id %d stayed", id)
		}
	}
	if u := f.r.byID["unpinned"]; u.State != state.StateActive {
		t.Errorf("re-installed container is %s; want active (fail closed)", u.State)
	} else if en, err := f.enf.Lookup(u.CgroupID); err != nil || en.Pending {
		t.Errorf("re-installed map entry %+v, %v; want in force", en, err)
	}
	if _, ok := f.r.byID["gone"]; ok {
		t.Error("dropped container still registered")
	}
	if n := f.r.dropOrphansLocked(inMap); n != 1 {
		t.Errorf("orphans removed = %d; want 1 (/stray-gone)", n)
	}
	if _, err := f.enf.Lookup(strayGone.ID); err == nil {
		t.Error("the orphan entry of a gone cgroup stayed")
	}
	strayLive, _ := f.cgs.Open("/stray-live")
	if _, err := f.enf.Lookup(strayLive.ID); err != nil {
		t.Errorf("the entry of a live cgroup no container owns was removed: %v", err)
	}
}
