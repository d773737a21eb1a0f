package entry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MaxWriteRoots is the number of writable roots one registration may keep
// (MAX_WRITE_ROOTS in bpf/maps.h).
const MaxWriteRoots = 16

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
	unix.EXT4_SUPER_MAGIC: "ext2/3/4",
	unix.XFS_SUPER_MAGIC:  "xfs",
	unix.TMPFS_MAGIC:      "tmpfs",
	unix.RAMFS_MAGIC:      "ramfs",
	unix.F2FS_SUPER_MAGIC: "f2fs",
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
