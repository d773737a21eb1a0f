package enforcer_test

// Probe operations of the writable-roots cases (roots_test.go).

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// append PATH: open PATH O_WRONLY|O_APPEND (symlinks followed)
		// and write Payload.
		"append": probe.Func(func(a []string) error { return appendTo(a[0]) }),
		// symlink-append TARGET LINK: make LINK point to TARGET (allowed
		// inside a root), then write through it.
		"symlink-append": probe.Func(func(a []string) error {
			if err := unix.Symlink(a[0], a[1]); err != nil {
				return fmt.Errorf("symlink (must be allowed): %w", err)
			}
			return appendTo(a[1])
		}),
		// tmpfile-link DIR NEWPATH: an O_TMPFILE in DIR, written, then
		// given the name NEWPATH through /proc/self/fd (linkat with
		// AT_SYMLINK_FOLLOW; AT_EMPTY_PATH would need a capability).
		"tmpfile-link": probe.Func(func(a []string) error {
			fd, err := unix.Open(a[0], unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return fmt.Errorf("O_TMPFILE (must be allowed): %w", err)
			}
			defer unix.Close(fd)
			if _, err := unix.Write(fd, []byte(probe.Payload)); err != nil {
				return fmt.Errorf("write tmpfile (must be allowed): %w", err)
			}
			return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, a[1], unix.AT_SYMLINK_FOLLOW)
		}),
		// reopen-append: reopen the inherited descriptor (fd 3, read
		// only) for write through /proc/self/fd, and write Payload.
		"reopen-append": probe.Func(func(a []string) error {
			return appendTo("/proc/self/fd/" + strconv.Itoa(probe.InheritedFD))
		}),
	})
}

func appendTo(path string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(probe.Payload))
	return err
}
