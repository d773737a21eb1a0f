package enforcer_test

// Probe operations of the allowed-endpoint cases (endpoint_test.go, N8).
// ADDR is IP:PORT or [IPv6]:PORT; the socket's family follows the address
// ([::ffff:a.b.c.d] is an AF_INET6 socket).

import (
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// tcp-send ADDR: connect, write Payload, read the peer's echo.
		"tcp-send": probe.Func(func(a []string) error {
			fd, sa, err := newSocket(a[0], unix.SOCK_STREAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := unix.Connect(fd, sa); err != nil {
				return err
			}
			if _, err := unix.Write(fd, []byte(probe.Payload)); err != nil {
				return err
			}
			return readEcho(fd)
		}),
		// tcp-fastopen ADDR: sendto(MSG_FASTOPEN), no connect.
		"tcp-fastopen": probe.Func(func(a []string) error {
			fd, sa, err := newSocket(a[0], unix.SOCK_STREAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Sendto(fd, []byte(probe.Payload), unix.MSG_FASTOPEN, sa)
		}),
		// uring-tcp ADDR: IORING_OP_CONNECT, then IORING_OP_SEND.
		"uring-tcp": probe.Func(uringTCP),
		// udp-connect-send ADDR: connect a UDP socket, send without
		// address, receive the peer's echo (recvmsg on a connected socket).
		"udp-connect-send": probe.Func(func(a []string) error {
			fd, sa, err := newSocket(a[0], unix.SOCK_DGRAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := unix.Connect(fd, sa); err != nil {
				return err
			}
			if _, err := unix.Write(fd, []byte(probe.Payload)); err != nil {
				return err
			}
			return readEcho(fd)
		}),
		// udp-recv-unconnected ADDR: sendto ADDR (listed), then recvfrom
		// on the unconnected socket: denied (only a connected socket
		// receives).
		"udp-recv-unconnected": probe.Func(func(a []string) error {
			fd, sa, err := newSocket(a[0], unix.SOCK_DGRAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if err := unix.Sendto(fd, []byte(probe.Payload), 0, sa); err != nil {
				return probe.Setupf("sendto the listed endpoint: %v", err)
			}
			tv := unix.Timeval{Sec: 2}
			if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
				return probe.Setupf("SO_RCVTIMEO: %v", err)
			}
			buf := make([]byte, 64)
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return err
			}
			if !probe.Contains(buf[:n]) {
				return probe.Setupf("answer %q", buf[:n])
			}
			return nil
		}),
		// tcp-bind ADDR, tcp-listen ADDR (ADDR only picks the family).
		"tcp-bind": probe.Func(func(a []string) error {
			fd, sa, err := newSocket(a[0], unix.SOCK_STREAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Bind(fd, sa)
		}),
		"tcp-listen": probe.Func(func(a []string) error {
			fd, _, err := newSocket(a[0], unix.SOCK_STREAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Listen(fd, 1)
		}),
		// shutdown-fd: shutdown(SHUT_RDWR) of the inherited socket.
		"shutdown-fd": probe.Func(func(a []string) error {
			return unix.Shutdown(probe.InheritedFD, unix.SHUT_RDWR)
		}),
		// accept-fd: accept on the inherited listening socket.
		"accept-fd": probe.Func(func(a []string) error {
			nfd, _, err := unix.Accept(probe.InheritedFD)
			if err == nil {
				unix.Close(nfd)
			}
			return err
		}),
		// setsockopt-ip-options ADDR: an IP source route (LSRR) on a new
		// socket of the address's family, before connecting.
		"setsockopt-ip-options": probe.Func(func(a []string) error {
			fd, _, err := newSocket(a[0], unix.SOCK_STREAM)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			// NOP, LSRR len 7 ptr 4, 127.0.0.3
			opt := []byte{1, 0x83, 7, 4, 127, 0, 0, 3}
			return unix.SetsockoptString(fd, unix.IPPROTO_IP, unix.IP_OPTIONS, string(opt))
		}),
	})
}

// newSocket creates a socket of typ in the family of addr.
func newSocket(addr string, typ int) (int, unix.Sockaddr, error) {
	sa, err := probe.Sockaddr(addr)
	if err != nil {
		return -1, nil, err
	}
	fd, err := unix.Socket(probe.Family(sa), typ|unix.SOCK_CLOEXEC, 0)
	return fd, sa, err
}

// readEcho reads the peer's answer (endpointEcho echoes Payload); the
// result is the read's errno.
func readEcho(fd int) error {
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return err
	}
	if !probe.Contains(buf[:n]) {
		return probe.Setupf("echo %q", buf[:n])
	}
	return nil
}

func uringTCP(a []string) error {
	sa, err := rawSockaddr(a[0])
	if err != nil {
		return err
	}
	fam := unix.AF_INET
	if len(sa) == unix.SizeofSockaddrInet6 {
		fam = unix.AF_INET6
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	r, err := probe.NewRing()
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Do(probe.SQE{Op: probe.UringConnect, FD: int32(fd), Addr: probe.Ptr(sa), Off: uint64(len(sa))}); err != nil {
		return err
	}
	runtime.KeepAlive(sa)
	buf := []byte(probe.Payload)
	_, err = r.Do(probe.SQE{Op: probe.UringSend, FD: int32(fd), Addr: probe.Ptr(buf), Len: uint32(len(buf))})
	runtime.KeepAlive(buf)
	return err
}
