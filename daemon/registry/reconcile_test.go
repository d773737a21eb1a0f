package registry_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
)

func TestReconcileKeepsLiveDropsGoneNeverTouchesLiveEntries(t *testing.T) {
	f := newFixture(t)
	for _, g := range []string{"/live", "/gone", "/lost"} {
		f.cgs.Add(g)
	}
	for _, id := range []string{"live", "gone", "lost"} {
		if _, err := f.reg.Register(registry.Request{ID: id, Cgroup: "/" + id, Ceiling: "network=false", Activate: registry.ActivateExec}); err != nil {
			t.Fatal(err)
		}
	}
	live, _ := f.reg.Get("live")
	// The kernel activated the live one (its first exec ran).
	f.enf.M[live.CgroupID] = entry.Entry{Ceiling: live.Kernel}
	gone, _ := f.reg.Get("gone")
	f.cgs.Remove("/gone")
	lost, _ := f.reg.Get("lost")
	delete(f.enf.M, lost.CgroupID) // pins removed behind our back
	// A map entry of a dead cgroup nobody owns, and one of a live cgroup
	// (enforcerd run) the daemon does not know.
	f.enf.M[999999] = entry.Entry{}
	runID := f.cgs.Add("/run")
	f.enf.M[runID] = entry.Entry{}

	r2 := f.open() // a restarted daemon
	rep, err := r2.Reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Kept, rep.Dropped, rep.Reinstalled, rep.Orphans) != "[live] [gone] [lost] 1" {
		t.Fatalf("report = %+v", rep)
	}
	if en := f.enf.M[live.CgroupID]; en.Pending {
		t.Fatal("reconcile re-registered a live entry (it is pending again: a window)")
	}
	if _, ok := f.enf.M[gone.CgroupID]; ok {
		t.Fatal("gone container still in the map")
	}
	if en, ok := f.enf.M[lost.CgroupID]; !ok || en.Pending {
		t.Fatalf("lost entry not re-installed in force: %+v %v", en, ok)
	}
	if _, ok := f.enf.M[runID]; !ok {
		t.Fatal("reconcile removed a live cgroup's entry it does not own")
	}
	if _, ok := f.enf.M[999999]; ok {
		t.Fatal("orphan entry of a gone cgroup kept")
	}
	if got := r2.List(); len(got) != 2 || got[0].ID != "live" || got[1].ID != "lost" {
		t.Fatalf("list after reconcile = %v", got)
	}
	cs, _ := state.Load(f.path)
	if len(cs) != 2 {
		t.Fatalf("state file has %d containers, want 2", len(cs))
	}
}

func TestReconcileRefusesCorruptState(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(f.path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Reconcile(); !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

func TestSweepDropsVanishedCgroups(t *testing.T) {
	f := newFixture(t)
	f.cgs.Add("/a")
	if _, err := f.reg.Register(registry.Request{ID: "a", Cgroup: "/a", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	f.cgs.Remove("/a")
	rep, err := f.reg.Sweep()
	if err != nil || len(rep.Dropped) != 1 {
		t.Fatalf("sweep = %+v, %v", rep, err)
	}
	f.consistent(t)
}
