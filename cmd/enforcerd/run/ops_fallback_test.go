package run

// Probe operations of the process-layer tests (fallback_test.go).

import (
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// fb-truncate PATH: truncate(2) PATH to 0 bytes.
		"fb-truncate": func(r *probe.Result, a []string) { r.Check(unix.Truncate(a[0], 0), "truncate") },
		// fb-utimes PATH: set PATH's access and modification time to 1s.
		"fb-utimes": func(r *probe.Result, a []string) {
			ts := []unix.Timespec{{Sec: 1}, {Sec: 1}}
			r.Check(unix.UtimesNano(a[0], ts), "utimensat")
		},
		// fb-write-path PATH: open the existing PATH for writing (no
		// O_CREAT, no O_TRUNC) and write Payload.
		"fb-write-path": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if !r.Check(err, "open") {
				return
			}
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte(probe.Payload))
			r.Check(err, "write")
		},
		// fb-write-stdin: write Payload to descriptor 0 (opened by the
		// test before the sandbox, read-write).
		"fb-write-stdin": func(r *probe.Result, a []string) {
			_, err := unix.Write(0, []byte(probe.Payload))
			r.Check(err, "write")
		},
		// fb-socket FAMILY TYPE: socket(FAMILY, TYPE, 0) (decimal).
		"fb-socket": func(r *probe.Result, a []string) {
			fam, err1 := strconv.Atoi(a[0])
			typ, err2 := strconv.Atoi(a[1])
			if !r.Require(err1, "family") || !r.Require(err2, "type") {
				return
			}
			fd, err := unix.Socket(fam, typ|unix.SOCK_CLOEXEC, 0)
			if r.Check(err, "socket") {
				unix.Close(fd)
			}
		},
		// fb-io-uring: io_uring_setup(1, {}).
		"fb-io-uring": func(r *probe.Result, a []string) {
			var params [120]byte // struct io_uring_params
			fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
			if e != 0 {
				r.Check(e, "io_uring_setup")
				return
			}
			unix.Close(int(fd))
		},
		// fb-unix-connect PATH: a new unix stream socket connects to PATH
		// and writes Payload.
		"fb-unix-connect": func(r *probe.Result, a []string) {
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if !r.Require(err, "socket") {
				return
			}
			defer unix.Close(fd)
			if !r.Check(unix.Connect(fd, &unix.SockaddrUnix{Name: a[0]}), "connect") {
				return
			}
			_, err = unix.Write(fd, []byte(probe.Payload))
			r.Check(err, "write")
		},
		// fb-memfd: memfd_create("fb", MFD_CLOEXEC).
		"fb-memfd": func(r *probe.Result, a []string) {
			fd, err := unix.MemfdCreate("fb", unix.MFD_CLOEXEC)
			if r.Check(err, "memfd_create") {
				unix.Close(fd)
			}
		},
		// fb-write-map-exec PATH: create PATH (write allowed), then map
		// it PROT_READ|PROT_EXEC; Effect: the mapping exists.
		"fb-write-map-exec": func(r *probe.Result, a []string) {
			if !r.Require(os.WriteFile(a[0], make([]byte, 4096), 0o755), "write") {
				return
			}
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if !r.Require(err, "open") {
				return
			}
			defer unix.Close(fd)
			m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
			if r.Check(err, "mmap PROT_EXEC") {
				r.Effect = true
				unix.Munmap(m)
			}
		},
	})
}
