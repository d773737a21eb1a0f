package escapetest

// Probe operations on a foreign terminal taken as the controlling terminal,
// and on device registers reached through sysfs and procfs
// (devices_test.go: TestForeignTerminalHangup, TestDeviceRegisterFiles).

import (
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// ctty-take PATH [noctty]: a new session, PATH opened read-only
		// (without O_NOCTTY unless asked); the effect: PATH became the
		// session's controlling terminal (TIOCGSID answers only for it).
		// The probe then exits, a session leader: the kernel hangs its
		// controlling terminal up.
		"ctty-take": func(r *probe.Result, a []string) {
			if _, err := unix.Setsid(); !r.Require(err, "setsid") {
				return
			}
			flags := unix.O_RDONLY
			if len(a) > 1 && a[1] == "noctty" {
				flags |= unix.O_NOCTTY
			}
			fd, err := unix.Open(a[0], flags, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			_, err = unix.IoctlGetInt(fd, unix.TIOCGSID)
			r.Effect = err == nil
		},
		// open-ro PATH: open read-only; the effect: the open succeeded.
		"open-ro": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
			if r.Check(err, "open "+a[0]) {
				r.Effect = true
				unix.Close(fd)
			}
		},
		// pread-fd: read 4 bytes of fd 3 at offset 0.
		"pread-fd": func(r *probe.Result, a []string) {
			b := make([]byte, 4)
			n, err := unix.Pread(3, b, 0)
			if r.Check(err, "pread fd 3") {
				r.Effect = n == 4
			}
		},
		// mmap-fd: map one page of fd 3 read-only and shared, read it.
		"mmap-fd": func(r *probe.Result, a []string) {
			b, err := unix.Mmap(3, 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
			if !r.Check(err, "mmap fd 3") {
				return
			}
			_ = b[0]
			r.Effect = true
			_ = unix.Munmap(b)
		},
	})
}
