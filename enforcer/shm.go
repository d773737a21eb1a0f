package enforcer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/entry"
)

// setShmDir writes (or, for the zero FileID, removes) a cgroup's POSIX
// shared memory directory (bpf/shm.h ipc_dirs). It runs before the ceiling
// is written. Errors: ErrCannotEnforce when a directory is given and the
// map is missing; the map's update.
func (e *Enforcer) setShmDir(cgroupID uint64, dir entry.FileID) error {
	m := e.shared[bpf.SharedMapIpcDirs]
	if m == nil {
		if dir == (entry.FileID{}) {
			return nil
		}
		return fmt.Errorf("%w: the IPC directories map is missing", coverage.ErrCannotEnforce)
	}
	if dir == (entry.FileID{}) {
		if err := m.Delete(cgroupID); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("shm directory: %w", err)
		}
		return nil
	}
	v := bpf.SharedIpcDir{Dev: dir.Dev, Ino: dir.Ino}
	if err := m.Update(cgroupID, v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("shm directory: %w", err)
	}
	return nil
}

// dropShmDir removes a cgroup's shm directory (after its ceiling is gone).
func (e *Enforcer) dropShmDir(cgroupID uint64) {
	if m := e.shared[bpf.SharedMapIpcDirs]; m != nil {
		_ = m.Delete(cgroupID)
	}
}

// lookupShmDir fills en.ShmDir (zero when none is registered).
func (e *Enforcer) lookupShmDir(cgroupID uint64, en *entry.Entry) {
	m := e.shared[bpf.SharedMapIpcDirs]
	if m == nil {
		return
	}
	var v bpf.SharedIpcDir
	if err := m.Lookup(cgroupID, &v); err == nil {
		en.ShmDir = entry.FileID{Dev: v.Dev, Ino: v.Ino}
	}
}
