// Package execveat runs the program open at a descriptor: execveat(2)
// with an empty path and AT_EMPTY_PATH (as fexecve(3)), which
// golang.org/x/sys/unix does not wrap. What runs is the open file,
// whatever its path leads to now.
package execveat

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Exec replaces the calling process with the program open at fd, with
// argv and env. It returns only on failure, with the errno
// (syscall.Errno). A script run this way is named /dev/fd/N to its
// interpreter, so fd must then stay open across the exec (not
// close-on-exec).
func Exec(fd int, argv, env []string) error {
	av, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	ev, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&ev[0])), unix.AT_EMPTY_PATH, 0)
	return e
}
