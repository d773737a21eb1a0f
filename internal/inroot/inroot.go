// Package inroot looks files up inside a root directory the way the
// kernel would for a process chrooted there: symlinks and ".." are
// resolved without ever leaving the root (openat2 RESOLVE_IN_ROOT), and
// /proc magic links are refused (RESOLVE_NO_MAGICLINKS). The daemon uses
// it for paths a registration names inside a container's root (allowed
// endpoints, device nodes); it imports only golang.org/x/sys.
//
// Layering (docs/design.md): layer 0; it may import nothing else of the
// module, and of other modules no cilium/ebpf, not even through its
// imports.
package inroot

import (
	"os"

	"golang.org/x/sys/unix"
)

// Stat returns the stat of name resolved inside root ("" means "/"),
// symlinks followed. Errors are *os.PathError: the root cannot be opened,
// the name cannot be resolved inside it (ENOENT, ELOOP, EXDEV...), or the
// file cannot be stat'ed. EAGAIN from openat2 (a concurrent rename) is
// retried up to 16 times.
func Stat(root, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if root == "" {
		root = "/"
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, &os.PathError{Op: "open root", Path: root, Err: err}
	}
	defer unix.Close(dir)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	var fd int
	for i := 0; ; i++ {
		fd, err = unix.Openat2(dir, name, &how)
		if (err == unix.EAGAIN && i < 16) || err == unix.EINTR {
			continue
		}
		break
	}
	if err != nil {
		return st, &os.PathError{Op: "openat2 in " + root, Path: name, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return st, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	return st, nil
}
