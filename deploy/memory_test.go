package deploy

import (
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// peakRSSUnderFlood is the daemon's peak resident memory under the flood
// test, in bytes: the largest of three runs of cmd/enforcerd/hook
// TestFloodFromSandboxLeavesHooksServed under `/usr/bin/time -f %M`
// (18.3 MiB; deploy/README.md, "Memory").
const peakRSSUnderFlood = 18728 << 10

// mapMemory is an upper bound, in bytes, of the kernel memory the eBPF
// maps of the committed objects take with every map full, and what each
// map contributes: a hash or LRU hash max_entries × (48-byte element
// header + key + value, each rounded to 8 bytes; preallocated at creation,
// or, BPF_F_NO_PREALLOC, allocated as entries are added), an array
// max_entries × value, a per-CPU array that for 64 CPUs, a ring buffer
// its size, a map of maps twice its inner map (the tally's live map and
// its replacement). Task and inode storage (per task or inode, freed with
// it) count 0. A map several objects declare (shared, pinned) counts
// once.
// prealloc is the part taken when the maps are created (every map but the
// BPF_F_NO_PREALLOC ones and the tally's inner maps).
func mapMemory(t *testing.T) (total, prealloc uint64, maps map[string]uint64) {
	t.Helper()
	files, err := filepath.Glob("../bpf/*_bpfel.o")
	if err != nil || len(files) == 0 {
		t.Fatalf("no eBPF objects in ../bpf (%v)", err)
	}
	maps = map[string]uint64{}
	created := map[string]uint64{}
	for _, f := range files {
		spec, err := ebpf.LoadCollectionSpec(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for name, m := range spec.Maps {
			maps[name] = max(maps[name], mapSize(m))
			if m.Flags&noPrealloc == 0 && m.Type != ebpf.ArrayOfMaps && m.Type != ebpf.HashOfMaps {
				created[name] = max(created[name], mapSize(m))
			}
		}
	}
	for name, b := range maps {
		total += b
		prealloc += created[name]
	}
	return total, prealloc, maps
}

// noPrealloc is BPF_F_NO_PREALLOC.
const noPrealloc = 1

// mapSize is mapMemory's bound for one map.
func mapSize(m *ebpf.MapSpec) uint64 {
	r8 := func(x uint32) uint64 { return (uint64(x) + 7) &^ 7 }
	switch m.Type {
	case ebpf.Hash, ebpf.LRUHash:
		return uint64(m.MaxEntries) * (48 + r8(m.KeySize) + r8(m.ValueSize))
	case ebpf.Array:
		return uint64(m.MaxEntries) * r8(m.ValueSize)
	case ebpf.PerCPUArray:
		return uint64(m.MaxEntries) * r8(m.ValueSize) * 64
	case ebpf.RingBuf:
		return uint64(m.MaxEntries)
	case ebpf.ArrayOfMaps, ebpf.HashOfMaps:
		if m.InnerMap != nil {
			return 2 * mapSize(m.InnerMap)
		}
	}
	return 0
}

// TestMemoryLimitCoversMaps: the DaemonSet's memory limit is at least four
// times the daemon's measured peak plus what its eBPF maps take when full
// (an OOM-killed enforcer refuses every container start), and its request
// covers the peak plus what the maps take when created.
func TestMemoryLimitCoversMaps(t *testing.T) {
	total, prealloc, maps := mapMemory(t)
	for name, b := range maps {
		if b >= 1<<20 {
			t.Logf("map %s: %.1f MiB", name, float64(b)/(1<<20))
		}
	}
	need := total + peakRSSUnderFlood
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	t.Logf("maps full %.1f MiB (at creation %.1f MiB) + peak RSS %.1f MiB = %.1f MiB", mib(total), mib(prealloc), mib(peakRSSUnderFlood), mib(need))
	var ds appsv1.DaemonSet
	decodeStrict(t, "daemonset.yaml", &ds)
	res := ds.Spec.Template.Spec.Containers[0].Resources
	limit, ok := res.Limits["memory"]
	if !ok {
		t.Fatal("no memory limit")
	}
	if limit.Value() < int64(4*need) {
		t.Errorf("memory limit %s: want at least %s (4 × (maps + peak RSS))", limit.String(), resource.NewQuantity(int64(4*need), resource.BinarySI))
	}
	if req := res.Requests["memory"]; req.Value() < int64(prealloc+peakRSSUnderFlood) {
		t.Errorf("memory request %s: below the maps at creation + peak RSS (%.1f MiB)", req.String(), mib(prealloc+peakRSSUnderFlood))
	}
	if _, ok := res.Limits["cpu"]; ok {
		t.Error("a CPU limit: throttling lengthens every hook and NRI call")
	}
}
