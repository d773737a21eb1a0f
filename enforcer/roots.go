package enforcer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
)

// MaxWriteRoots is the number of writable roots one registration may keep
// (MAX_WRITE_ROOTS in bpf/maps.h).
const MaxWriteRoots = int(bpf.SharedLimitsMAX_WRITE_ROOTS)

// MaxRootCeilings is how many nested registrations with writable roots the
// in-kernel walk tells apart (MAX_ROOT_CEILINGS in bpf/maps.h): below more
// of them every write is denied.
const MaxRootCeilings = int(bpf.SharedLimitsMAX_ROOT_CEILINGS)

const flagWriteRoots = uint32(bpf.SharedCeilingFlagCEILING_WRITE_ROOTS)

// ErrBadWriteRoot is wrapped by every refusal of a writable root's path
// (WriteRootOf, WriteRootOfFile, CheckWriteRoots).
var ErrBadWriteRoot = errors.New("bad writable root")

// writeRootFS is the allow list of filesystems a writable root may live on:
// those whose stat(2) device is the superblock's s_dev and whose inode
// numbers are unique on it, so the kernel's (s_dev, i_ino) names the
// directory and nothing else. Refused, among others: overlayfs (its
// copy-up writes the upper layer through inode hooks outside any root, so
// writes would fail), btrfs and bcachefs (subvolumes share s_dev and
// repeat inode numbers), network and FUSE filesystems, and every kernel
// interface (threat model R7).
var writeRootFS = map[int64]string{
	int64(bpf.SharedFsMagicEXT4SUPER_MAGIC):  "ext2/3/4",
	int64(bpf.SharedFsMagicXFS_SUPER_MAGIC):  "xfs",
	int64(bpf.SharedFsMagicTMPFS_MAGIC):      "tmpfs",
	int64(bpf.SharedFsMagicRAMFS_MAGIC):      "ramfs",
	int64(bpf.SharedFsMagicF2FS_SUPER_MAGIC): "f2fs",
}

// WriteRootOf returns the identity of the directory at path for
// Entry.WriteRoots. path must be absolute; symlinks are followed (the root
// is the directory they lead to). Errors (wrapping ErrBadWriteRoot): a
// relative path, a path that does not exist or is not a directory, a
// filesystem not on the allow list (ext2/3/4, xfs, tmpfs, ramfs, f2fs).
func WriteRootOf(path string) (FileID, error) {
	if !filepath.IsAbs(path) {
		return FileID{}, fmt.Errorf("%w %q: not an absolute path", ErrBadWriteRoot, path)
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return FileID{}, fmt.Errorf("%w %s: %w", ErrBadWriteRoot, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	return WriteRootOfFile(f)
}

// WriteRootOfFile is WriteRootOf for an open descriptor (O_PATH is enough),
// e.g. a directory resolved inside a container's root; f.Name() names it in
// errors.
func WriteRootOfFile(f *os.File) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return FileID{}, fmt.Errorf("%w %s: %w", ErrBadWriteRoot, f.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return FileID{}, fmt.Errorf("%w %s: not a directory", ErrBadWriteRoot, f.Name())
	}
	var sf unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sf); err != nil {
		return FileID{}, fmt.Errorf("%w %s: %w", ErrBadWriteRoot, f.Name(), err)
	}
	if _, ok := writeRootFS[int64(uint32(sf.Type))]; !ok {
		return FileID{}, fmt.Errorf("%w %s: filesystem type %#x is not supported for writable roots (ext2/3/4, xfs, tmpfs, ramfs, f2fs)", ErrBadWriteRoot, f.Name(), uint32(sf.Type))
	}
	return FileIDOfStat(&st), nil
}

// CheckWriteRoots validates the writable roots of an entry: at most
// MaxWriteRoots, only with write=false, no zero identity. Errors wrap
// ErrBadWriteRoot.
func CheckWriteRoots(en Entry) error {
	if len(en.WriteRoots) == 0 {
		return nil
	}
	if en.Ceiling.Write {
		return fmt.Errorf("%w: writable roots need write=false (write is allowed everywhere)", ErrBadWriteRoot)
	}
	if len(en.WriteRoots) > MaxWriteRoots {
		return fmt.Errorf("%w: %d writable roots, at most %d", ErrBadWriteRoot, len(en.WriteRoots), MaxWriteRoots)
	}
	for _, r := range en.WriteRoots {
		if r.Ino == 0 {
			return fmt.Errorf("%w: identity %+v has no inode", ErrBadWriteRoot, r)
		}
	}
	return nil
}

// writeRootsMap is the pinned map of roots (bpf/roots.h write_roots).
func (e *Enforcer) writeRootsMap() (*ebpf.Map, error) {
	m := e.shared[bpf.SharedMapWriteRoots]
	if m == nil {
		return nil, fmt.Errorf("%w: the writable roots map is missing", ErrCannotEnforce)
	}
	return m, nil
}

// setWriteRoots writes (or, for none, removes) a cgroup's roots. It runs
// before the ceiling is written: the programs read the roots only of a
// ceiling with CEILING_WRITE_ROOTS.
func (e *Enforcer) setWriteRoots(cgroupID uint64, roots []FileID) error {
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
func (e *Enforcer) readWriteRoots(cgroupID uint64, flags uint32, en *Entry) error {
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
	n := min(int(v.Count), MaxWriteRoots)
	en.WriteRoots = make([]FileID, n)
	for i := range n {
		en.WriteRoots[i] = FileID{Dev: v.Root[i].Dev, Ino: v.Root[i].Ino}
	}
	return nil
}

// rootsFlag marks (non-nil, empty) an entry whose roots List must read.
func rootsFlag(flags uint32) []FileID {
	if flags&flagWriteRoots == 0 {
		return nil
	}
	return []FileID{}
}
