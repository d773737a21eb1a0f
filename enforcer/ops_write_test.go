package enforcer_test

// Probe operations of the write cases (write_test.go): each attempts one
// modification, the way the threat model's W1–W5 list them. create, chmod,
// chown, setxattr, unlink, rmdir and rename are test/probe's own.

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// W1: path operations beyond open.
		"mkdir":   probe.Func(func(a []string) error { return unix.Mkdir(a[0], 0o755) }),
		"symlink": probe.Func(func(a []string) error { return unix.Symlink(a[0], a[1]) }),
		"mkfifo":  probe.Func(func(a []string) error { return unix.Mkfifo(a[0], 0o644) }),
		"mknod-chr": probe.Func(func(a []string) error { // a copy of /dev/null
			return unix.Mknod(a[0], unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
		}),
		"mknod-reg": probe.Func(func(a []string) error { return unix.Mknod(a[0], unix.S_IFREG|0o644, 0) }),
		"link":      probe.Func(func(a []string) error { return unix.Link(a[0], a[1]) }),
		"exchange": probe.Func(func(a []string) error {
			return unix.Renameat2(unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], unix.RENAME_EXCHANGE)
		}),
		// W2: truncation.
		"truncate": probe.Func(func(a []string) error { return unix.Truncate(a[0], 0) }),
		"open-rdonly-trunc": probe.Func(func(a []string) error {
			return closeOK(unix.Open(a[0], unix.O_RDONLY|unix.O_TRUNC, 0))
		}),
		"open-write": probe.Func(func(a []string) error {
			return closeOK(unix.Open(a[0], unix.O_WRONLY, 0))
		}),
		"ftruncate-fd": probe.Func(func(a []string) error { return unix.Ftruncate(probe.InheritedFD, 0) }),
		// W3: metadata (chmod, chown, setxattr: test/probe).
		"utimes":      probe.Func(func(a []string) error { return unix.Utimes(a[0], []unix.Timeval{{Sec: 1000}, {Sec: 1000}}) }),
		"removexattr": probe.Func(func(a []string) error { return unix.Removexattr(a[0], a[1]) }),
		// W4: descriptors opened before the ceiling applied.
		"write-fd": probe.Func(func(a []string) error {
			_, err := unix.Write(probe.InheritedFD, []byte(probe.Payload))
			return err
		}),
		"openat-fd": probe.Func(func(a []string) error {
			return closeOK(unix.Openat(probe.InheritedFD, a[0], unix.O_CREAT|unix.O_WRONLY, 0o644))
		}),
		"mmap-shared-fd": probe.Func(mmapSharedWrite),
		// W5: io_uring.
		"uring-openat-write": probe.Func(uringOpenatWrite),
		"uring-write-fd":     probe.Func(uringWriteFD),
		// Controls that must stay allowed under write=false.
		"devnull": probe.Func(func(a []string) error {
			fd, err := unix.Open("/dev/null", unix.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte(probe.Payload))
			return err
		}),
		"memfd": probe.Func(func(a []string) error {
			fd, err := unix.MemfdCreate("enforcerd-probe", unix.MFD_CLOEXEC)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			buf := make([]byte, 4096)
			copy(buf, probe.Payload)
			if _, err := unix.Write(fd, buf); err != nil {
				return err
			}
			m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				return err
			}
			m[0] = 'X'
			return unix.Munmap(m)
		}),
		"memfd-ftruncate": probe.Func(func(a []string) error {
			fd, err := unix.MemfdCreate("enforcerd-probe", unix.MFD_CLOEXEC)
			if err != nil {
				return probe.Setupf("memfd_create: %v", err)
			}
			defer unix.Close(fd)
			return unix.Ftruncate(fd, 4096)
		}),
		"read": probe.Func(func(a []string) error {
			fd, err := unix.Open(a[0], unix.O_RDONLY, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			buf := make([]byte, 64)
			n, err := unix.Read(fd, buf)
			if err == nil && n == 0 {
				return probe.Setupf("read %s: empty file", a[0])
			}
			return err
		}),
		// tty writes to a pseudo-terminal it allocates (a tty always exists
		// where devpts is mounted).
		"tty": probe.Func(func(a []string) error {
			m, s, err := probe.OpenPty(false)
			if err != nil {
				return err
			}
			defer unix.Close(m)
			defer unix.Close(s)
			_, err = unix.Write(s, []byte(probe.Payload+"\n"))
			return err
		}),
	})
}

func closeOK(fd int, err error) error {
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// mmapSharedWrite maps the inherited read-write descriptor shared and
// writable, and writes through the mapping.
func mmapSharedWrite(a []string) error {
	m, err := unix.Mmap(probe.InheritedFD, 0, 5, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m, probe.Payload)
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		return err
	}
	return unix.Munmap(m)
}

// uringOpenatWrite: IORING_OP_OPENAT(O_WRONLY|O_CREAT) then IORING_OP_WRITE
// on the descriptor it returned: no open(2) or write(2) syscall happens.
func uringOpenatWrite(a []string) error {
	r, err := probe.NewRing()
	if err != nil {
		return err
	}
	defer r.Close()
	path := append([]byte(a[0]), 0)
	fd, err := r.Do(probe.SQE{Op: probe.UringOpenat, FD: unix.AT_FDCWD, Addr: probe.Ptr(path), Len: 0o644, OpFlags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC})
	runtime.KeepAlive(path)
	if err != nil {
		return err
	}
	defer unix.Close(int(fd))
	return uringWrite(r, fd)
}

func uringWrite(r *probe.Ring, fd int32) error {
	buf := []byte(probe.Payload)
	// Do submits a request canceled before it ran again.
	n, err := r.Do(probe.SQE{Op: probe.UringWrite, FD: fd, Addr: probe.Ptr(buf), Len: uint32(len(buf))})
	runtime.KeepAlive(buf)
	if err == nil && n != int32(len(buf)) {
		return probe.Setupf("io_uring write: short write %d", n)
	}
	return err
}

// uringWriteFD: IORING_OP_WRITE on the inherited writable descriptor.
func uringWriteFD(a []string) error {
	r, err := probe.NewRing()
	if err != nil {
		return err
	}
	defer r.Close()
	return uringWrite(r, probe.InheritedFD)
}
