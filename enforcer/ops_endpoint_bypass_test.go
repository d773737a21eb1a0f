package enforcer_test

// Probe operations of the allowed-endpoint attack round
// (endpoint_bypass_test.go): addresses of another family than the
// socket's, and options on sockets inherited from outside.

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// rawSockaddrIn is a struct sockaddr_in of family fam for IPv4 addr.
func rawSockaddrIn(fam uint16, addr string) ([]byte, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b[0:], fam)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a4 := ap.Addr().Unmap().As4()
	copy(b[4:8], a4[:])
	return b, nil
}

func rawSendto(fd int, sa []byte) error {
	p := []byte(probe.Payload)
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0,
		uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa)))
	if e != 0 {
		return e
	}
	return nil
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// a13-udp6-sendto-v4 IP:PORT: an AF_INET6 UDP socket sends to a
		// struct sockaddr_in (udpv6_sendmsg hands it to udp_sendmsg).
		"a13-udp6-sendto-v4": probe.Func(func(a []string) error {
			fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return probe.Setupf("socket: %v", err)
			}
			defer unix.Close(fd)
			sa, err := rawSockaddrIn(unix.AF_INET, a[0])
			if err != nil {
				return probe.Setupf("%v", err)
			}
			return rawSendto(fd, sa)
		}),
		// a13-udp6-connect-v4 IP:PORT: an AF_INET6 UDP socket connects to
		// a struct sockaddr_in (ip6_datagram_connect's IPv4 branch), then
		// sends without address.
		"a13-udp6-connect-v4": probe.Func(func(a []string) error {
			fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return probe.Setupf("socket: %v", err)
			}
			defer unix.Close(fd)
			sa, err := rawSockaddrIn(unix.AF_INET, a[0])
			if err != nil {
				return probe.Setupf("%v", err)
			}
			if _, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), uintptr(len(sa))); e != 0 {
				return e
			}
			_, err = unix.Write(fd, []byte(probe.Payload))
			return err
		}),
		// a13-udp-sendto-unspec IP:PORT: sendto with sin_family AF_UNSPEC
		// (udp_sendmsg takes the address from it all the same).
		"a13-udp-sendto-unspec": probe.Func(func(a []string) error {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return probe.Setupf("socket: %v", err)
			}
			defer unix.Close(fd)
			sa, err := rawSockaddrIn(unix.AF_UNSPEC, a[0])
			if err != nil {
				return probe.Setupf("%v", err)
			}
			return rawSendto(fd, sa)
		}),
		// a13-udp-connected-sendto LISTED OTHER: connect a UDP socket to
		// LISTED, then sendto OTHER with an explicit address.
		"a13-udp-connected-sendto": probe.Func(func(a []string) error {
			fd, sa, err := newSocket(a[0], unix.SOCK_DGRAM)
			if err != nil {
				return probe.Setupf("socket: %v", err)
			}
			defer unix.Close(fd)
			if err := unix.Connect(fd, sa); err != nil {
				return probe.Setupf("connect the listed endpoint: %v", err)
			}
			other, err := probe.Sockaddr(a[1])
			if err != nil {
				return probe.Setupf("%v", err)
			}
			return unix.Sendto(fd, []byte(probe.Payload), 0, other)
		}),
		// a13-rcvbuf-fd: SO_RCVBUF 4096 on fd 3 (a socket inherited from
		// outside; every connection a listener accepts inherits it).
		"a13-rcvbuf-fd": probe.Func(func(a []string) error {
			return unix.SetsockoptInt(probe.InheritedFD, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
		}),
	})
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// a13-fallocate-fd: fallocate(fd 3, 0, 0, 64 KiB).
		"a13-fallocate-fd": probe.Func(func(a []string) error {
			return unix.Fallocate(probe.InheritedFD, 0, 0, 64<<10)
		}),
		// a13-punch-fd: fallocate(PUNCH_HOLE|KEEP_SIZE) of fd 3's first
		// bytes.
		"a13-punch-fd": probe.Func(func(a []string) error {
			return unix.Fallocate(probe.InheritedFD, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4)
		}),
		// a13-copy-range-fd SRC: copy_file_range from SRC into fd 3.
		"a13-copy-range-fd": probe.Func(func(a []string) error {
			src, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return probe.Setupf("open %s: %v", a[0], err)
			}
			defer unix.Close(src)
			off := int64(0)
			_, err = unix.CopyFileRange(src, nil, probe.InheritedFD, &off, 5, 0)
			return err
		}),
		// a13-splice-fd: Payload through a pipe, spliced into fd 3.
		"a13-splice-fd": probe.Func(func(a []string) error {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				return probe.Setupf("pipe: %v", err)
			}
			defer unix.Close(p[0])
			defer unix.Close(p[1])
			if _, err := unix.Write(p[1], []byte(probe.Payload)); err != nil {
				return probe.Setupf("write pipe: %v", err)
			}
			off := int64(0)
			_, err := unix.Splice(p[0], nil, probe.InheritedFD, &off, len(probe.Payload), 0)
			return err
		}),
		// a13-fchmod-fd: fchmod(fd 3, 0777).
		"a13-fchmod-fd": probe.Func(func(a []string) error { return unix.Fchmod(probe.InheritedFD, 0o777) }),
		// a13-fsetxattr-fd NAME: fsetxattr(fd 3, NAME, "1").
		"a13-fsetxattr-fd": probe.Func(func(a []string) error {
			return unix.Fsetxattr(probe.InheritedFD, a[0], []byte("1"), 0)
		}),
		// a13-futimens-fd: futimens(fd 3) to the epoch + 1000 s.
		"a13-futimens-fd": probe.Func(func(a []string) error {
			ts := []unix.Timespec{{Sec: 1000}, {Sec: 1000}}
			return unix.UtimesNanoAt(probe.InheritedFD, "", ts, unix.AT_EMPTY_PATH)
		}),
		// a13-rename PATH NEW: rename(2).
		"a13-rename": probe.Func(func(a []string) error { return unix.Rename(a[0], a[1]) }),
	})
}
