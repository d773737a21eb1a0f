package enforcer

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
)

// TestStorageMapsAreExecState: every shared map of a type the kernel
// creates only while the BPF LSM is active (inode and task storage) is in
// execStateMaps, so a boot without the BPF LSM refuses only the LSM layer
// instead of every map; and no object outside the LSM layer declares one,
// so the cgroup and lifecycle layers load there.
func TestStorageMapsAreExecState(t *testing.T) {
	spec, err := bpf.LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	needsLSM := func(ms *ebpf.MapSpec) bool {
		return ms.Type == ebpf.InodeStorage || ms.Type == ebpf.TaskStorage
	}
	n := 0
	for name, ms := range spec.Maps {
		if needsLSM(ms) {
			n++
			if !isExecState(name) {
				t.Errorf("shared map %s is %v, which needs the BPF LSM: add it to execStateMaps", name, ms.Type)
			}
		}
	}
	if n == 0 {
		t.Fatal("no inode or task storage among the shared maps: the check checks nothing")
	}
	for _, obj := range objects {
		if obj.layer == coverage.LayerLSM {
			continue
		}
		os, err := obj.load()
		if err != nil {
			t.Fatal(err)
		}
		for name, ms := range os.Maps {
			if needsLSM(ms) || isExecState(name) {
				t.Errorf("object %s (layer %v) declares %s, which needs the BPF LSM", obj.stem, obj.layer, name)
			}
		}
	}
}

// TestRetiredMapsNotDeclared: no object declares a retired map's name
// again, whose pin openMaps removes (it would hold the older layout).
func TestRetiredMapsNotDeclared(t *testing.T) {
	shared, err := bpf.LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	specs := []*ebpf.CollectionSpec{shared}
	for _, obj := range objects {
		os, err := obj.load()
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, os)
	}
	for _, name := range retiredMaps {
		for _, spec := range specs {
			if _, declared := spec.Maps[name]; declared {
				t.Errorf("map %s is retired (retiredMaps) but declared again", name)
			}
		}
	}
}
