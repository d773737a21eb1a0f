package enforcer

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/enforcerd/enforcerd/bpf"
)

// haveCgroupStorage reports whether this kernel has cgroup local storage
// (BPF_MAP_TYPE_CGRP_STORAGE, Linux 6.2+), probed once per process.
var haveCgroupStorage = sync.OnceValue(func() bool {
	return features.HaveMapType(ebpf.CgroupStorage) == nil
})

// haveCgrpStorageVar is the .rodata switch of bpf/walk.h's resolve_quiet.
const haveCgrpStorageVar = "have_cgrp_storage"

// fitCgroupStorage fits spec (an object of layer, or the shared maps when
// layer is "") to this kernel's cgroup local storage (bpf/walk.h, the hot
// word resolve_quiet):
//   - with it, the LSM and lifecycle objects get have_cgrp_storage = 1 and
//     use the hot word; the cgroup-BPF object keeps 0 (its program types
//     are not the tracing ones the hot word's helpers were verified for);
//   - without it, resolve_quiet becomes a one-entry hash that nothing
//     reaches (the branches that would are dead code for the verifier), so
//     the objects load on 6.1, and the shared map of that type is pinned.
//
// Errors: the object's switch cannot be set (a build error).
func fitCgroupStorage(spec *ebpf.CollectionSpec, layer Layer) error {
	have := haveCgroupStorage()
	if ms := spec.Maps[bpf.SharedMapResolveQuiet]; ms != nil && !have {
		ms.Type, ms.Flags, ms.MaxEntries = ebpf.Hash, 0, 1
	}
	v := spec.Variables[haveCgrpStorageVar]
	if v == nil {
		return nil
	}
	on := uint32(0)
	if have && (layer == LayerLSM || layer == LayerLifecycle) {
		on = 1
	}
	if err := v.Set(on); err != nil {
		return fmt.Errorf("set %s: %w", haveCgrpStorageVar, err)
	}
	return nil
}
