package probe

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Payload is what every write or send probe writes: a test looking for side
// effects looks for these bytes.
const Payload = "PWNED"

// InheritedFD is the first descriptor passed in Cmd.Files.
const InheritedFD = 3

// ops maps a probe name to the operation. An op returns the operation's own
// error (a syscall.Errno) or a setupError when it could not attempt it.
var ops = map[string]func(a []string) error{
	// W1: path operations beyond open.
	"create": func(a []string) error {
		fd, err := unix.Open(arg(a, 0), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
		return closeOK(fd, err)
	},
	"mkdir":   func(a []string) error { return unix.Mkdir(arg(a, 0), 0o755) },
	"rmdir":   func(a []string) error { return unix.Rmdir(arg(a, 0)) },
	"unlink":  func(a []string) error { return unix.Unlink(arg(a, 0)) },
	"symlink": func(a []string) error { return unix.Symlink(arg(a, 0), arg(a, 1)) },
	"mkfifo":  func(a []string) error { return unix.Mkfifo(arg(a, 0), 0o644) },
	"mknod-chr": func(a []string) error { // a copy of /dev/null
		return unix.Mknod(arg(a, 0), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	},
	"mknod-reg": func(a []string) error { return unix.Mknod(arg(a, 0), unix.S_IFREG|0o644, 0) },
	"link":      func(a []string) error { return unix.Link(arg(a, 0), arg(a, 1)) },
	"rename":    func(a []string) error { return unix.Rename(arg(a, 0), arg(a, 1)) },
	"exchange": func(a []string) error {
		return unix.Renameat2(unix.AT_FDCWD, arg(a, 0), unix.AT_FDCWD, arg(a, 1), unix.RENAME_EXCHANGE)
	},
	// W2: truncation.
	"truncate": func(a []string) error { return unix.Truncate(arg(a, 0), 0) },
	"open-rdonly-trunc": func(a []string) error {
		fd, err := unix.Open(arg(a, 0), unix.O_RDONLY|unix.O_TRUNC, 0)
		return closeOK(fd, err)
	},
	"open-write": func(a []string) error {
		fd, err := unix.Open(arg(a, 0), unix.O_WRONLY, 0)
		return closeOK(fd, err)
	},
	"ftruncate-fd": func(a []string) error { return unix.Ftruncate(InheritedFD, 0) },
	// W3: metadata.
	"chmod":  func(a []string) error { return unix.Chmod(arg(a, 0), 0o777) },
	"chown":  func(a []string) error { return unix.Lchown(arg(a, 0), 4242, 4242) },
	"utimes": func(a []string) error { return unix.Utimes(arg(a, 0), []unix.Timeval{{Sec: 1000}, {Sec: 1000}}) },
	"setxattr": func(a []string) error {
		return unix.Setxattr(arg(a, 0), arg(a, 1), []byte(Payload), 0)
	},
	"removexattr": func(a []string) error { return unix.Removexattr(arg(a, 0), arg(a, 1)) },
	// W4: descriptors opened before the ceiling applied.
	"write-fd": func(a []string) error {
		_, err := unix.Write(InheritedFD, []byte(Payload))
		return err
	},
	"openat-fd": func(a []string) error {
		fd, err := unix.Openat(InheritedFD, arg(a, 0), unix.O_CREAT|unix.O_WRONLY, 0o644)
		return closeOK(fd, err)
	},
	"mmap-shared-fd": mmapSharedWrite,
	// W5: io_uring.
	"uring-openat-write": uringOpenatWrite,
	"uring-write-fd":     uringWriteFD,

	// N1/N3: sockets.
	"socket": func(a []string) error {
		fam, typ, proto, err := socketArgs(a)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(fam, typ, proto)
		return closeOK(fd, err)
	},
	"udp-sendto": func(a []string) error { // a new socket, never connected
		sa, err := sockaddr(arg(a, 0))
		if err != nil {
			return err
		}
		fd, err := unix.Socket(family(sa), unix.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte(Payload), 0, sa)
	},
	"sendto-fd": func(a []string) error {
		sa, err := sockaddr(arg(a, 0))
		if err != nil {
			return err
		}
		return unix.Sendto(InheritedFD, []byte(Payload), 0, sa)
	},
	"sendmmsg-fd": sendmmsgFD,
	"tcp-connect": func(a []string) error {
		sa, err := sockaddr(arg(a, 0))
		if err != nil {
			return err
		}
		fd, err := unix.Socket(family(sa), unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, sa)
	},
	"connect-fd": func(a []string) error {
		sa, err := sockaddr(arg(a, 0))
		if err != nil {
			return err
		}
		return unix.Connect(InheritedFD, sa)
	},
	// N2: io_uring.
	"uring-socket":     uringSocket,
	"uring-connect-fd": uringConnectFD,
	// N4/N5: unix brokers.
	"unix-connect": func(a []string) error {
		sa, err := sockaddr(arg(a, 0))
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return setupf("socket(AF_UNIX): %v", err)
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, sa); err != nil {
			return err
		}
		_, err = unix.Write(fd, []byte(Payload))
		return err
	},
	"unix-sendto": func(a []string) error {
		sa, err := sockaddr(arg(a, 0))
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			return setupf("socket(AF_UNIX, SOCK_DGRAM): %v", err)
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte(Payload), 0, sa)
	},

	// Controls that must stay allowed under every ceiling.
	"socketpair": func(a []string) error {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		return roundTrip(fds[0], fds[1])
	},
	"unix-inside": unixInside,
	"pipe": func(a []string) error {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return err
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		return roundTrip(p[1], p[0])
	},
	"devnull": func(a []string) error {
		fd, err := unix.Open("/dev/null", unix.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(Payload))
		return err
	},
	"memfd": func(a []string) error {
		fd, err := unix.MemfdCreate("enforcerd-probe", unix.MFD_CLOEXEC)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		buf := make([]byte, 4096)
		copy(buf, Payload)
		if _, err := unix.Write(fd, buf); err != nil {
			return err
		}
		m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		m[0] = 'X'
		return unix.Munmap(m)
	},
	"memfd-ftruncate": func(a []string) error {
		fd, err := unix.MemfdCreate("enforcerd-probe", unix.MFD_CLOEXEC)
		if err != nil {
			return setupf("memfd_create: %v", err)
		}
		defer unix.Close(fd)
		return unix.Ftruncate(fd, 4096)
	},
	"read": func(a []string) error {
		fd, err := unix.Open(arg(a, 0), unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		buf := make([]byte, 64)
		n, err := unix.Read(fd, buf)
		if err == nil && n == 0 {
			return setupf("read %s: empty file", arg(a, 0))
		}
		return err
	},
	"tty": ttyWrite,
	// Exec: fork and execve a[0] with argv a; the result is the execve's
	// (the program's own exit status is not), after the program ended.
	"exec": func(a []string) error {
		null, err := os.OpenFile("/dev/null", os.O_RDWR, 0)
		if err != nil {
			return setupf("exec: %v", err)
		}
		defer null.Close()
		// The probe's stdout carries its result: the program gets
		// /dev/null instead, and the probe's stderr.
		pid, err := syscall.ForkExec(arg(a, 0), a, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{null.Fd(), null.Fd(), 2}})
		if err != nil {
			return err
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return setupf("exec: wait for %s: %v", arg(a, 0), err)
		}
		return nil
	},
}

func arg(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return ""
}

func closeOK(fd int, err error) error {
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func roundTrip(w, r int) error {
	if _, err := unix.Write(w, []byte(Payload)); err != nil {
		return err
	}
	buf := make([]byte, len(Payload))
	if _, err := unix.Read(r, buf); err != nil {
		return err
	}
	if string(buf) != Payload {
		return setupf("round trip read %q", buf)
	}
	return nil
}

// socketArgs parses "family type protocol" as numbers.
func socketArgs(a []string) (fam, typ, proto int, err error) {
	if len(a) != 3 {
		return 0, 0, 0, setupf("socket wants family type protocol, got %v", a)
	}
	var v [3]int
	for i := range v {
		if v[i], err = strconv.Atoi(a[i]); err != nil {
			return 0, 0, 0, setupf("socket argument %q: %v", a[i], err)
		}
	}
	return v[0], v[1], v[2], nil
}

// sockaddr parses "127.0.0.1:80", "[::1]:80", "/path" or "@abstract".
func sockaddr(s string) (unix.Sockaddr, error) {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "@") {
		return &unix.SockaddrUnix{Name: s}, nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, setupf("address %q: %v", s, err)
	}
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, nil
}

func family(sa unix.Sockaddr) int {
	switch sa.(type) {
	case *unix.SockaddrInet4:
		return unix.AF_INET
	case *unix.SockaddrInet6:
		return unix.AF_INET6
	}
	return unix.AF_UNIX
}

// rawSockaddr is the kernel form of an inet address, for sendmmsg and
// io_uring, which take a struct sockaddr pointer.
func rawSockaddr(s string) ([]byte, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, setupf("address %q: %v", s, err)
	}
	port := []byte{byte(ap.Port() >> 8), byte(ap.Port())}
	if ap.Addr().Is4() {
		var r unix.RawSockaddrInet4
		r.Family = unix.AF_INET
		copy((*[2]byte)(unsafe.Pointer(&r.Port))[:], port)
		r.Addr = ap.Addr().As4()
		return (*[unix.SizeofSockaddrInet4]byte)(unsafe.Pointer(&r))[:], nil
	}
	var r unix.RawSockaddrInet6
	r.Family = unix.AF_INET6
	copy((*[2]byte)(unsafe.Pointer(&r.Port))[:], port)
	r.Addr = ap.Addr().As16()
	return (*[unix.SizeofSockaddrInet6]byte)(unsafe.Pointer(&r))[:], nil
}

// sendmmsgFD sends two datagrams with one sendmmsg(2) on the inherited
// socket, which never called connect.
func sendmmsgFD(a []string) error {
	name, err := rawSockaddr(arg(a, 0))
	if err != nil {
		return err
	}
	buf := []byte(Payload)
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msgs := make([]unix.Mmsghdr, 2)
	for i := range msgs {
		msgs[i].Hdr.Name = &name[0]
		msgs[i].Hdr.Namelen = uint32(len(name))
		msgs[i].Hdr.Iov = &iov
		msgs[i].Hdr.SetIovlen(1)
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, InheritedFD, uintptr(unsafe.Pointer(&msgs[0])), 2, 0, 0, 0)
	if e != 0 {
		return e
	}
	if n == 0 {
		return setupf("sendmmsg sent nothing")
	}
	return nil
}

// mmapSharedWrite maps the inherited read-write descriptor shared and
// writable, and writes through the mapping.
func mmapSharedWrite(a []string) error {
	m, err := unix.Mmap(InheritedFD, 0, 5, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m, Payload)
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		return err
	}
	return unix.Munmap(m)
}

// unixInside creates a listening unix socket inside the sandbox (abstract,
// so that it needs no inode) and connects to it from inside.
func unixInside(a []string) error {
	name := fmt.Sprintf("@enforcerd-probe-inside-%d", os.Getpid())
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: name}); err != nil {
		return err
	}
	if err := unix.Listen(l, 1); err != nil {
		return err
	}
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(c)
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: name}); err != nil {
		return err
	}
	s, _, err := unix.Accept(l)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	return roundTrip(c, s)
}

// ttyWrite writes to a pseudo-terminal it allocates (a tty always exists
// where devpts is mounted).
func ttyWrite(a []string) error {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return setupf("open /dev/ptmx: %v", err)
	}
	defer unix.Close(m)
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return setupf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		return setupf("pty number: %v", err)
	}
	s, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	_, err = unix.Write(s, []byte(Payload+"\n"))
	return err
}

// WaitReadable is a helper for listeners: it reports whether fd has data or
// a pending connection within d.
func WaitReadable(fd int, d time.Duration) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, int(d/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0 && pfd[0].Revents&unix.POLLIN != 0
	}
}

// Contains reports whether b holds the probe payload.
func Contains(b []byte) bool { return bytes.Contains(b, []byte(Payload)) }
