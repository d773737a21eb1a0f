package enforcer

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/entry"
)

// MaxRootCeilings is how many nested registrations with writable roots the
// in-kernel walk tells apart (MAX_ROOT_CEILINGS in bpf/maps.h): below more
// of them every write is denied.
const MaxRootCeilings = int(bpf.SharedLimitsMAX_ROOT_CEILINGS)

const flagWriteRoots = uint32(bpf.SharedCeilingFlagCEILING_WRITE_ROOTS)

// writeRootsMap is the pinned map of roots (bpf/roots.h write_roots).
func (e *Enforcer) writeRootsMap() (*ebpf.Map, error) {
	m := e.shared[bpf.SharedMapWriteRoots]
	if m == nil {
		return nil, fmt.Errorf("%w: the writable roots map is missing", coverage.ErrCannotEnforce)
	}
	return m, nil
}

// setWriteRoots writes (or, for none, removes) a cgroup's roots. It runs
// before the ceiling is written: the programs read the roots only of a
// ceiling with CEILING_WRITE_ROOTS.
func (e *Enforcer) setWriteRoots(cgroupID uint64, roots []entry.FileID) error {
	m, err := e.writeRootsMap()
	if err != nil {
		if len(roots) == 0 {
			return nil
		}
		return err
	}
	if len(roots) == 0 {
		if err := m.Delete(cgroupID); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("writable roots: %w", err)
		}
		return nil
	}
	var v bpf.SharedRootSet
	v.Count = uint32(len(roots))
	for i, r := range roots {
		v.Root[i].Dev, v.Root[i].Ino = r.Dev, r.Ino
	}
	if err := m.Update(cgroupID, v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("writable roots: %w", err)
	}
	return nil
}

// dropWriteRoots removes a cgroup's roots (after its ceiling is gone).
func (e *Enforcer) dropWriteRoots(cgroupID uint64) {
	if m := e.shared[bpf.SharedMapWriteRoots]; m != nil {
		_ = m.Delete(cgroupID)
	}
}

// readWriteRoots fills en.WriteRoots of a ceiling with CEILING_WRITE_ROOTS.
// Errors: the roots entry is missing or unreadable.
func (e *Enforcer) readWriteRoots(cgroupID uint64, flags uint32, en *entry.Entry) error {
	if flags&flagWriteRoots == 0 {
		return nil
	}
	m, err := e.writeRootsMap()
	if err != nil {
		return err
	}
	var v bpf.SharedRootSet
	if err := m.Lookup(cgroupID, &v); err != nil {
		return fmt.Errorf("writable roots of cgroup id %d: %w", cgroupID, err)
	}
	n := min(int(v.Count), entry.MaxWriteRoots)
	en.WriteRoots = make([]entry.FileID, n)
	for i := range n {
		en.WriteRoots[i] = entry.FileID{Dev: v.Root[i].Dev, Ino: v.Root[i].Ino}
	}
	return nil
}

// rootsFlag marks (non-nil, empty) an entry whose roots List must read.
func rootsFlag(flags uint32) []entry.FileID {
	if flags&flagWriteRoots == 0 {
		return nil
	}
	return []entry.FileID{}
}

// namesGeneration mirrors struct names_generation (bpf/roots.h): the
// generation every rename on the host moves twice, and whether the roots
// decision cache may be used.
type namesGeneration struct {
	Gen      uint64
	Tracking uint64
}

// setRenameTracking turns the roots decision cache (bpf/roots.h) on or
// off. Open turns it off before it attaches anything and on only once the
// program that moves the generation after every rename (fexit/vfs_rename)
// is attached, so a process that dies in between leaves the cache off,
// never on without that program. Each call also writes a fresh random
// generation: the write replaces the whole value, and a rename counted
// between a read and that write must never bring back a generation that
// entries were recorded under. Errors: no randomness, or the map update
// failed; a missing map (nothing can be cached) is not an error.
func (e *Enforcer) setRenameTracking(on bool) error {
	m := e.shared[bpf.SharedMapNamesGeneration]
	if m == nil {
		return nil
	}
	gen, err := newGeneration()
	if err != nil {
		return fmt.Errorf("rename generation: %w", err)
	}
	v := namesGeneration{Gen: gen}
	if on {
		v.Tracking = 1
	}
	if err := m.Update(uint32(0), v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("rename generation: %w", err)
	}
	return nil
}

// RenamesInProgress is the count of renames on the host between their
// inode_rename and vfs_rename's return, as the roots decision cache keeps
// it (bpf/roots.h renames_active): while it is not 0 the cache is off and
// every write under writable roots climbs. A count that stays above 0
// while nothing renames is a rename whose end the kernel skipped (a
// tracing program never recurses on a CPU): the cache stays off (slower,
// never wrong) until the pinned maps are made anew. Errors: the map
// cannot be read.
func (e *Enforcer) RenamesInProgress() (uint64, error) {
	m := e.shared[bpf.SharedMapRenamesActive]
	if m == nil {
		return 0, errors.New("renames_active map missing")
	}
	var n uint64
	if err := m.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("read renames_active: %w", err)
	}
	return n, nil
}
