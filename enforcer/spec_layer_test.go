package enforcer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestSpecLayerKept: a write=false entry whose container spec covers it
// (Entry.Spec) registers on a host without BPF LSM (partial:
// write-inherited-fds), Lookup returns the spec layer, and re-registering
// the looked-up entry is accepted as it was (the daemon does so when it
// narrows a registration); after Unregister the same ceiling without a
// spec layer is refused (write has no mechanism). With BPF LSM both
// register, the spec not relied on.
func TestSpecLayerKept(t *testing.T) {
	vmtest.RequireRoot(t)
	enf, mount, own, _ := privateEnforcer(t, "speclayer")
	base := own.Group
	lsm := enf.LayerError(coverage.LayerLSM) == nil
	t.Logf("BPF LSM layer: %v", enf.LayerError(coverage.LayerLSM))
	cg, err := cgroup.Create(mount, base+"/c")
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove(5 * time.Second)
	wf := policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
	spec := &coverage.SpecLayer{Write: true}
	if err := enf.Register(cg, entry.Entry{Ceiling: wf, AllowPartial: true, Spec: spec}); err != nil {
		t.Fatalf("write=false with the spec layer: %v", err)
	}
	en, err := enf.Lookup(cg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if en.Spec != spec {
		t.Fatalf("Lookup: spec layer %v, want %v", en.Spec, spec)
	}
	if !lsm {
		cov := enf.CoverageOf(en)
		if cov.Mechanisms["write"][0] != coverage.MechContainerSpec || cov.Partial[0].Code != coverage.GapWriteInheritedFDs {
			t.Fatalf("coverage of the looked-up entry: %+v", cov)
		}
	}
	if err := enf.Register(cg, en); err != nil {
		t.Fatalf("re-registering the looked-up entry: %v", err)
	}
	if err := enf.Unregister(cg.ID); err != nil {
		t.Fatal(err)
	}
	err = enf.Register(cg, entry.Entry{Ceiling: wf, AllowPartial: true})
	if lsm {
		if err != nil {
			t.Fatalf("BPF LSM: write=false without a spec layer: %v", err)
		}
		return
	}
	if !errors.Is(err, coverage.ErrCannotEnforce) {
		t.Fatalf("no BPF LSM: write=false without a spec layer: err %v, want ErrCannotEnforce", err)
	}
	if _, err := enf.Lookup(cg.ID); !errors.Is(err, enforcer.ErrNotRegistered) {
		t.Fatalf("a refused entry is registered: %v", err)
	}
}
