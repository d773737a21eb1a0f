package entry

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ShmPath is where glibc's sem_open(3) and shm_open(3) keep POSIX
// semaphores and shared memory objects, relative to a process's root.
const ShmPath = "dev/shm"

// ErrNoShmDir is wrapped by every reason a process has no POSIX shared
// memory directory the kernel rule can name (ShmDirOf).
var ErrNoShmDir = errors.New("no POSIX shared memory directory")

// ShmDirOf returns the identity of the POSIX shared memory directory
// (ShmPath) as the processes whose root directory is root see it, for
// Entry.ShmDir. root is "/" for the caller's own, or /proc/<pid>/root for a
// container's init; mountinfo is the mountinfo file of a process in the
// same mount namespace (/proc/self/mountinfo, /proc/<pid>/mountinfo).
// Symlinks are followed inside root. The directory qualifies only as the
// root of a tmpfs superblock: the root of its mount (STATX_ATTR_MOUNT_ROOT),
// which mounts the superblock's root ("/" in mountinfo), so that every file
// on that superblock is beneath it and nothing else is. Errors wrap
// ErrNoShmDir.
func ShmDirOf(root, mountinfo string) (FileID, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return FileID{}, fmt.Errorf("%w: %s: %w", ErrNoShmDir, root, err)
	}
	defer unix.Close(rfd)
	fd, err := unix.Openat2(rfd, ShmPath, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return FileID{}, fmt.Errorf("%w: %s in %s: %w", ErrNoShmDir, ShmPath, root, err)
	}
	defer unix.Close(fd)
	var sf unix.Statfs_t
	if err := unix.Fstatfs(fd, &sf); err != nil {
		return FileID{}, fmt.Errorf("%w: %s in %s: %w", ErrNoShmDir, ShmPath, root, err)
	}
	if sf.Type != unix.TMPFS_MAGIC {
		return FileID{}, fmt.Errorf("%w: %s in %s is not a tmpfs (type %#x)", ErrNoShmDir, ShmPath, root, uint32(sf.Type))
	}
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_MNT_ID, &stx); err != nil {
		return FileID{}, fmt.Errorf("%w: %s in %s: %w", ErrNoShmDir, ShmPath, root, err)
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 ||
		stx.Mask&unix.STATX_MNT_ID == 0 {
		return FileID{}, fmt.Errorf("%w: %s in %s is not the root of a mount", ErrNoShmDir, ShmPath, root)
	}
	f, err := os.Open(mountinfo)
	if err != nil {
		return FileID{}, fmt.Errorf("%w: %w", ErrNoShmDir, err)
	}
	defer f.Close()
	mroot, err := mountRoot(f, stx.Mnt_id)
	if err != nil {
		return FileID{}, fmt.Errorf("%w: %s: %w", ErrNoShmDir, mountinfo, err)
	}
	if mroot != "/" {
		return FileID{}, fmt.Errorf("%w: %s in %s mounts %q of its tmpfs, not its root", ErrNoShmDir, ShmPath, root, mroot)
	}
	return FileID{Dev: stx.Dev_major<<20 | stx.Dev_minor, Ino: stx.Ino}, nil
}

// mountRoot returns the root field (the directory of the filesystem the
// mount shows, "/" for its root) of mount id in a mountinfo file
// (proc_pid_mountinfo(5)). Errors: the id is not listed, a malformed line,
// a read error.
func mountRoot(r io.Reader, id uint64) (string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			return "", fmt.Errorf("malformed mountinfo line %q", sc.Text())
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return "", fmt.Errorf("malformed mount id in %q", sc.Text())
		}
		if n == id {
			return fields[3], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("mount id %d not listed", id)
}
