package registry

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
)

// maxRootClimb bounds the walk up from a root candidate (MAX_ROOT_DEPTH in
// bpf/maps.h).
const maxRootClimb = 64

// rootBound is the writable roots one outer registration allows: an
// ancestor cgroup's or the parent container's with write=false. total:
// it allows no write at all (write=false without roots).
type rootBound struct {
	roots []state.WriteRoot
	total bool
}

// outerRootBounds lists the write bounds of the registrations a new
// container is nested in: its parent (by id) and every registered cgroup
// strictly above group, when they deny writes.
func (r *Registry) outerRootBounds(parent, group string) ([]rootBound, error) {
	var out []rootBound
	seen := map[string]bool{}
	add := func(c state.Container) {
		if seen[c.ID] || c.Kernel.Write {
			return
		}
		seen[c.ID] = true
		out = append(out, rootBound{roots: c.WriteRoots, total: len(c.WriteRoots) == 0})
	}
	if p, ok := r.byID[parent]; ok && parent != "" {
		add(p)
	}
	err := r.eachOuter(group, func(g string, c *state.Container, en *entry.Entry) {
		if c != nil {
			add(*c)
			return
		}
		if en.Ceiling.Write {
			return
		}
		b := rootBound{total: len(en.WriteRoots) == 0}
		for _, id := range en.WriteRoots {
			b.roots = append(b.roots, state.WriteRoot{Path: fmt.Sprintf("(cgroup %s: dev %d:%d ino %d)", g, id.Dev>>20, id.Dev&0xfffff, id.Ino), Dev: id.Dev, Ino: id.Ino})
		}
		out = append(out, b)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// meetRoots is the meet of a new container's own roots with its outer
// bounds (each bound must hold every root: the kernel checks each
// registered cgroup ancestor on its own, but a parent by id need not be a
// cgroup ancestor, so the entry itself must be the meet):
//   - an outer bound with no roots (write=false everywhere) leaves none;
//   - requested roots are kept when they lie beneath a root of every
//     bound (climbing "..", within one mount: never wider than the kernel's
//     climb), dropped otherwise;
//   - without requested roots, a container whose own request allowed writes
//     (ownWrite) takes the roots of its one bound with roots; with several
//     it takes none (fail closed); a container that asked for write=false
//     itself takes none.
//
// dirs are the requested roots, open (O_PATH), in the order of own.
func meetRoots(own []state.WriteRoot, dirs []*os.File, ownWrite bool, bounds []rootBound) ([]state.WriteRoot, error) {
	if len(bounds) == 0 {
		return own, nil
	}
	for _, b := range bounds {
		if b.total {
			return nil, nil
		}
	}
	if len(own) == 0 {
		if ownWrite && len(bounds) == 1 {
			return bounds[0].roots, nil
		}
		return nil, nil
	}
	var out []state.WriteRoot
	for i, w := range own {
		keep := true
		for _, b := range bounds {
			ok, err := beneathAny(dirs[i], b.roots)
			if err != nil {
				return nil, fmt.Errorf("write root %s: %w", w.Path, err)
			}
			if !ok {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, w)
		}
	}
	return out, nil
}

// beneathAny reports whether the directory dir, or a directory above it
// within the same mount, is one of roots (by device and inode).
func beneathAny(dir *os.File, roots []state.WriteRoot) (bool, error) {
	fd, err := unix.Openat(int(dir.Fd()), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer func() { unix.Close(fd) }()
	var mnt uint64
	for i := 0; i < maxRootClimb; i++ {
		var st unix.Statx_t
		if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_MNT_ID, &st); err != nil {
			return false, err
		}
		if i == 0 {
			mnt = st.Mnt_id
		} else if st.Mnt_id != mnt {
			return false, nil // crossed into another mount
		}
		dev := st.Dev_major<<20 | st.Dev_minor
		for _, r := range roots {
			if r.Dev == dev && r.Ino == st.Ino {
				return true, nil
			}
		}
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		var a, b unix.Stat_t
		_ = unix.Fstat(fd, &a)
		_ = unix.Fstat(up, &b)
		unix.Close(fd)
		fd = up
		if a.Dev == b.Dev && a.Ino == b.Ino {
			return false, nil // "/" (of the process's root or the filesystem)
		}
	}
	return false, nil
}
