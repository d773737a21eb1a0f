package enforcer_test

// Probe operations of the network cases (network_test.go), N1–N5, and the
// controls that must stay allowed under every ceiling. tcp-connect is
// test/probe's own.

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// N1/N3: sockets ("family type protocol", as numbers).
		"socket": probe.Func(func(a []string) error {
			fam, typ, proto, err := socketArgs(a)
			if err != nil {
				return err
			}
			return closeOK(unix.Socket(fam, typ, proto))
		}),
		"udp-sendto": probe.Func(func(a []string) error { // a new socket, never connected
			sa, err := probe.Sockaddr(a[0])
			if err != nil {
				return err
			}
			fd, err := unix.Socket(probe.Family(sa), unix.SOCK_DGRAM, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Sendto(fd, []byte(probe.Payload), 0, sa)
		}),
		"sendto-fd": probe.Func(func(a []string) error {
			sa, err := probe.Sockaddr(a[0])
			if err != nil {
				return err
			}
			return unix.Sendto(probe.InheritedFD, []byte(probe.Payload), 0, sa)
		}),
		"sendmmsg-fd": probe.Func(sendmmsgFD),
		"connect-fd": probe.Func(func(a []string) error {
			sa, err := probe.Sockaddr(a[0])
			if err != nil {
				return err
			}
			return unix.Connect(probe.InheritedFD, sa)
		}),
		// N2: io_uring.
		"uring-socket":     probe.Func(uringSocket),
		"uring-connect-fd": probe.Func(uringConnectFD),
		// N4/N5: unix brokers.
		"unix-connect": probe.Func(func(a []string) error {
			sa, err := probe.Sockaddr(a[0])
			if err != nil {
				return err
			}
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				return probe.Setupf("socket(AF_UNIX): %v", err)
			}
			defer unix.Close(fd)
			if err := unix.Connect(fd, sa); err != nil {
				return err
			}
			_, err = unix.Write(fd, []byte(probe.Payload))
			return err
		}),
		"unix-sendto": probe.Func(func(a []string) error {
			sa, err := probe.Sockaddr(a[0])
			if err != nil {
				return err
			}
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
			if err != nil {
				return probe.Setupf("socket(AF_UNIX, SOCK_DGRAM): %v", err)
			}
			defer unix.Close(fd)
			return unix.Sendto(fd, []byte(probe.Payload), 0, sa)
		}),
		// Controls that must stay allowed under every ceiling.
		"socketpair": probe.Func(func(a []string) error {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			return roundTrip(fds[0], fds[1])
		}),
		"unix-inside": probe.Func(unixInside),
		"pipe": probe.Func(func(a []string) error {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				return err
			}
			defer unix.Close(p[0])
			defer unix.Close(p[1])
			return roundTrip(p[1], p[0])
		}),
	})
}

func roundTrip(w, r int) error {
	if _, err := unix.Write(w, []byte(probe.Payload)); err != nil {
		return err
	}
	buf := make([]byte, len(probe.Payload))
	if _, err := unix.Read(r, buf); err != nil {
		return err
	}
	if string(buf) != probe.Payload {
		return probe.Setupf("round trip read %q", buf)
	}
	return nil
}

// socketArgs parses "family type protocol" as numbers.
func socketArgs(a []string) (fam, typ, proto int, err error) {
	if len(a) != 3 {
		return 0, 0, 0, probe.Setupf("socket wants family type protocol, got %v", a)
	}
	var v [3]int
	for i := range v {
		if v[i], err = strconv.Atoi(a[i]); err != nil {
			return 0, 0, 0, probe.Setupf("socket argument %q: %v", a[i], err)
		}
	}
	return v[0], v[1], v[2], nil
}

// rawSockaddr is the kernel form of an inet address, for sendmmsg and
// io_uring, which take a struct sockaddr pointer.
func rawSockaddr(s string) ([]byte, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, probe.Setupf("address %q: %v", s, err)
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
	name, err := rawSockaddr(a[0])
	if err != nil {
		return err
	}
	buf := []byte(probe.Payload)
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msgs := make([]unix.Mmsghdr, 2)
	for i := range msgs {
		msgs[i].Hdr.Name = &name[0]
		msgs[i].Hdr.Namelen = uint32(len(name))
		msgs[i].Hdr.Iov = &iov
		msgs[i].Hdr.SetIovlen(1)
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, probe.InheritedFD, uintptr(unsafe.Pointer(&msgs[0])), 2, 0, 0, 0)
	if e != 0 {
		return e
	}
	if n == 0 {
		return probe.Setupf("sendmmsg sent nothing")
	}
	return nil
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

// uringSocket: IORING_OP_SOCKET with "family type protocol".
func uringSocket(a []string) error {
	fam, typ, proto, err := socketArgs(a)
	if err != nil {
		return err
	}
	r, err := probe.NewRing()
	if err != nil {
		return err
	}
	defer r.Close()
	fd, err := r.Do(probe.SQE{Op: probe.UringSocket, FD: int32(fam), Off: uint64(typ), Len: uint32(proto)})
	if err != nil {
		return err
	}
	return unix.Close(int(fd))
}

// uringConnectFD: IORING_OP_CONNECT of the inherited socket to an inet
// address.
func uringConnectFD(a []string) error {
	sa, err := rawSockaddr(a[0])
	if err != nil {
		return err
	}
	r, err := probe.NewRing()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = r.Do(probe.SQE{Op: probe.UringConnect, FD: probe.InheritedFD, Addr: probe.Ptr(sa), Off: uint64(len(sa))})
	runtime.KeepAlive(sa)
	return err
}
