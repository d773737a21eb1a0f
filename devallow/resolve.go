package devallow

import (
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/inroot"
)

// ErrNotDevice is wrapped when a path entry names no device node.
var ErrNotDevice = errors.New("not a device node")

// Resolve returns ds with every path entry's type and number filled in:
// the node at its path (symlinks followed, so /dev/dri/by-path/... works)
// inside root, a host directory seen as "/" (every path and symlink stays
// inside it: openat2 RESOLVE_IN_ROOT, no magic links; "" or "/" is the
// host's root). A container's root at createRuntime is
// /proc/INIT/root/ROOTFS (oci.Entrypoint). Number entries pass through.
// Errors (wrapping ErrBad, naming the entry): a path that does not exist
// or cannot be reached; a file that is not a character or block device
// (ErrNotDevice too, with its type); a path that resolves to a device
// another entry lists.
func Resolve(ds []Device, root string) ([]Device, error) {
	out := make([]Device, 0, len(ds))
	for _, d := range ds {
		if !d.Resolved() {
			st, err := inroot.Stat(root, d.Path)
			if err != nil {
				return nil, fmt.Errorf("%w: entry %q: %v", ErrBad, d.Path, err)
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFCHR:
			case unix.S_IFBLK:
				d.Block = true
			default:
				return nil, fmt.Errorf("%w: entry %q: %w (%s)", ErrBad, d.Path, ErrNotDevice, fileType(st.Mode))
			}
			d.Major, d.Minor = unix.Major(st.Rdev), unix.Minor(st.Rdev)
			if d.Major == 0 || d.Major > MaxMajor || d.Minor > MaxMinor {
				return nil, fmt.Errorf("%w: entry %q: device %d:%d is outside the kernel's numbers", ErrBad, d.Path, d.Major, d.Minor)
			}
		}
		if i := slices.IndexFunc(out, func(o Device) bool { return Same(o, d) }); i >= 0 {
			return nil, fmt.Errorf("%w: entry %q: %s is listed twice (also as %q)", ErrBad, entryName(d), d.Number(), entryName(out[i]))
		}
		out = append(out, d)
	}
	return out, nil
}

// entryName is how the user wrote d: its path, else its number.
func entryName(d Device) string {
	if d.Path != "" {
		return d.Path
	}
	return d.Number()
}

// fileType names a file type for an error.
func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return fmt.Sprintf("mode %#o", mode&unix.S_IFMT)
}
