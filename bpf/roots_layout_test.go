package bpf_test

import (
	"testing"

	"github.com/enforcerd/enforcerd/bpf"
)

// TestPinnedLayouts: the shared maps keep the key and value sizes earlier
// builds pinned (an upgrade adopts them; bpf/maps.h), resolve_cache
// included: writable roots took padding of struct effective, not new
// bytes. write_roots is cgroup id → count + 16 × (ino, dev).
func TestPinnedLayouts(t *testing.T) {
	spec, err := bpf.LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]uint32{
		bpf.SharedMapResolveCache: {8, 128},
		bpf.SharedMapCeilings:     {8, 8},
		bpf.SharedMapWriteRoots:   {8, 8 + 16*16},
	} {
		m := spec.Maps[name]
		if m == nil {
			t.Errorf("map %s missing", name)
			continue
		}
		if m.KeySize != want[0] || m.ValueSize != want[1] {
			t.Errorf("map %s: key %d value %d bytes, want %d and %d", name, m.KeySize, m.ValueSize, want[0], want[1])
		}
	}
}
