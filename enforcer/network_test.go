package enforcer_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// Every listener lives in the test process, outside any sandbox. Loopback
// and unix deliveries are synchronous: when the probe has exited, whatever
// it sent is queued, so a short wait is enough to see it.
const listenWait = 100 * time.Millisecond

func sockArgs(family, typ, proto int) []string {
	return []string{strconv.Itoa(family), strconv.Itoa(typ), strconv.Itoa(proto)}
}

// packetListener observes datagrams (UDP, unix dgram).
func packetListener(t *testing.T, c net.PacketConn) func() (bool, string) {
	t.Cleanup(func() { c.Close() })
	return func() (bool, string) {
		buf := make([]byte, 64)
		c.SetReadDeadline(time.Now().Add(listenWait))
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return false, fmt.Sprintf("listener %s received nothing", c.LocalAddr())
		}
		return probe.Contains(buf[:n]), fmt.Sprintf("listener %s received %q", c.LocalAddr(), buf[:n])
	}
}

type deadliner interface {
	net.Listener
	SetDeadline(time.Time) error
}

// streamListener observes connections (TCP, unix stream).
func streamListener(t *testing.T, l deadliner) func() (bool, string) {
	t.Cleanup(func() { l.Close() })
	return func() (bool, string) {
		l.SetDeadline(time.Now().Add(listenWait))
		c, err := l.Accept()
		if err != nil {
			return false, fmt.Sprintf("listener %s accepted nothing", l.Addr())
		}
		c.Close()
		return true, fmt.Sprintf("listener %s accepted a connection", l.Addr())
	}
}

// connReader observes bytes arriving on an accepted connection.
func connReader(t *testing.T, c net.Conn) func() (bool, string) {
	t.Cleanup(func() { c.Close() })
	return func() (bool, string) {
		buf := make([]byte, 64)
		c.SetReadDeadline(time.Now().Add(listenWait))
		n, err := c.Read(buf)
		if err != nil {
			return false, "peer received nothing"
		}
		return probe.Contains(buf[:n]), fmt.Sprintf("peer received %q", buf[:n])
	}
}

func udpTarget(t *testing.T, v6 bool) (string, func() (bool, string)) {
	network, ip := "udp4", net.IPv4(127, 0, 0, 1)
	if v6 {
		network, ip = "udp6", net.IPv6loopback
	}
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
	must(t, err)
	return c.LocalAddr().String(), packetListener(t, c)
}

func tcpTarget(t *testing.T, v6 bool) (*net.TCPListener, string, func() (bool, string)) {
	network, ip := "tcp4", net.IPv4(127, 0, 0, 1)
	if v6 {
		network, ip = "tcp6", net.IPv6loopback
	}
	l, err := net.ListenTCP(network, &net.TCPAddr{IP: ip})
	must(t, err)
	return l, l.Addr().String(), streamListener(t, l)
}

// rawSocket is an unconnected socket created before the ceiling applied.
func rawSocket(t *testing.T, family, typ int) *os.File {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	return os.NewFile(uintptr(fd), "inherited-socket")
}

var brokerSeq atomic.Int64

// brokerAddr names a unix socket outside the sandbox: a path in a fresh
// directory, or an abstract name.
func brokerAddr(t *testing.T, abstract bool) string {
	n := brokerSeq.Add(1)
	if abstract {
		return fmt.Sprintf("@enforcerd-test-broker-%d-%d", os.Getpid(), n)
	}
	dir, err := os.MkdirTemp("", "efd-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "broker.sock")
}

func udpCase(name, op string, v6, inherited bool, hook denial.Hook) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: kerneltest.Hooks(hook), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		addr, got := udpTarget(t, v6)
		cmd := probe.Cmd{Op: op, Args: []string{addr}}
		if inherited {
			fam := unix.AF_INET
			if v6 {
				fam = unix.AF_INET6
			}
			cmd.Files = []*os.File{rawSocket(t, fam, unix.SOCK_DGRAM)}
		}
		return sb.Run(t, cmd), got
	}}
}

func tcpCase(name, op string, v6, inherited bool, hook denial.Hook) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: kerneltest.Hooks(hook), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		_, addr, got := tcpTarget(t, v6)
		cmd := probe.Cmd{Op: op, Args: []string{addr}}
		if inherited {
			fam := unix.AF_INET
			if v6 {
				fam = unix.AF_INET6
			}
			cmd.Files = []*os.File{rawSocket(t, fam, unix.SOCK_STREAM)}
		}
		return sb.Run(t, cmd), got
	}}
}

// connectedCase: a stream socket the test connected to its own listener
// before the ceiling; the probe writes on it.
func connectedCase(name, network string, hook denial.Hook) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: kerneltest.Hooks(hook), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		var l net.Listener
		var err error
		if network == "unix" {
			l, err = net.Listen("unix", brokerAddr(t, false))
		} else {
			l, err = net.Listen("tcp4", "127.0.0.1:0")
		}
		must(t, err)
		t.Cleanup(func() { l.Close() })
		c, err := net.Dial(l.Addr().Network(), l.Addr().String())
		must(t, err)
		defer c.Close()
		srv, err := l.Accept()
		must(t, err)
		f, err := c.(interface{ File() (*os.File, error) }).File()
		must(t, err)
		got := connReader(t, srv)
		return sb.ProbeFiles(t, []*os.File{f}, "write-fd"), got
	}}
}

func socketCase(name string, family, typ, proto int, absent unix.Errno) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: kerneltest.Hooks(denial.HookSocketCreate), Absent: absent,
		Attempt: kerneltest.Op("socket", sockArgs(family, typ, proto)...)}
}

func unixStreamCase(name string, abstract bool) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: kerneltest.Hooks(denial.HookUnixStreamConnect), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		addr := brokerAddr(t, abstract)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		must(t, err)
		got := streamListener(t, l)
		return sb.Probe(t, "unix-connect", addr), got
	}}
}

func unixDgramCase(name string, abstract bool) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: kerneltest.Hooks(denial.HookUnixMaySend), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		addr := brokerAddr(t, abstract)
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
		must(t, err)
		got := packetListener(t, c)
		return sb.Probe(t, "unix-sendto", addr), got
	}}
}

// networkCases: threat model N1–N5 under network=false.
var networkCases = []kerneltest.Case{
	// N1: unconnected datagrams (cgroup/connect4 never fires), on a socket
	// from before the ceiling and on a new one; TCP connect.
	udpCase("N1/udp4-sendto-inherited", "sendto-fd", false, true, denial.HookSocketSendmsg),
	udpCase("N1/udp6-sendto-inherited", "sendto-fd", true, true, denial.HookSocketSendmsg),
	udpCase("N1/udp4-sendmmsg-inherited", "sendmmsg-fd", false, true, denial.HookSocketSendmsg),
	udpCase("N1/udp6-sendmmsg-inherited", "sendmmsg-fd", true, true, denial.HookSocketSendmsg),
	udpCase("N1/udp4-sendto-new", "udp-sendto", false, false, denial.HookSocketCreate),
	udpCase("N1/udp6-sendto-new", "udp-sendto", true, false, denial.HookSocketCreate),
	tcpCase("N1/tcp4-connect-new", "tcp-connect", false, false, denial.HookSocketCreate),
	tcpCase("N1/tcp6-connect-new", "tcp-connect", true, false, denial.HookSocketCreate),
	tcpCase("N1/tcp4-connect-inherited", "connect-fd", false, true, denial.HookSocketConnect),
	// write(2) on a socket passes rw_verify_area first: file_permission
	// denies before sock_sendmsg is reached (N6).
	connectedCase("N1/tcp4-write-inherited-connected", "tcp", denial.HookFilePermission),
	// N2: io_uring.
	{Name: "N2/io_uring-socket", Want: kerneltest.Hooks(denial.HookSocketCreate), Attempt: kerneltest.Op("uring-socket", sockArgs(unix.AF_INET, unix.SOCK_STREAM, 0)...)},
	tcpCase("N2/io_uring-connect-inherited", "uring-connect-fd", false, true, denial.HookSocketConnect),
	// N3: other families. AF_PACKET, AF_VSOCK and AF_ALG are modules in
	// Debian's kernels, absent from the initramfs guest.
	socketCase("N3/af_packet", unix.AF_PACKET, unix.SOCK_RAW, 0x0300, unix.EAFNOSUPPORT),
	socketCase("N3/raw-icmp", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, 0),
	socketCase("N3/raw6-icmpv6", unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6, 0),
	socketCase("N3/ping-icmp", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP, 0),
	socketCase("N3/ping6-icmpv6", unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6, 0),
	socketCase("N3/af_netlink", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, 0),
	socketCase("N3/af_vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0, unix.EAFNOSUPPORT),
	socketCase("N3/af_alg", unix.AF_ALG, unix.SOCK_SEQPACKET, 0, unix.EAFNOSUPPORT),
	// N4: unix-socket brokers created outside the sandbox.
	unixStreamCase("N4/unix-connect-path", false),
	unixStreamCase("N4/unix-connect-abstract", true),
	connectedCase("N4/unix-write-inherited-connected", "unix", denial.HookFilePermission), // write(2): rw_verify_area first
	// N5: a datagram to the host resolver's socket.
	unixDgramCase("N5/unix-dgram-resolver-path", false),
	unixDgramCase("N5/unix-dgram-abstract", true),
}

// allowPing lets root open ICMP ping sockets (the default group range is
// empty, which would make the control fail with EACCES).
func allowPing(t *testing.T) {
	const p = "/proc/sys/net/ipv4/ping_group_range"
	old, err := os.ReadFile(p)
	must(t, err)
	must(t, os.WriteFile(p, []byte("0 0"), 0))
	t.Cleanup(func() { os.WriteFile(p, old, 0) })
}

func TestNetworkCeilingDenies(t *testing.T) {
	kt.Enforcer(t)
	allowPing(t)
	runCases(t, networkCases, networkDeny, kerneltest.InSandbox)
}

// TestNetworkCeilingDeniesFromSubCgroup: E1, the child creates a sub-cgroup
// below the registered one, moves itself into it, and retries.
func TestNetworkCeilingDeniesFromSubCgroup(t *testing.T) {
	kt.Enforcer(t)
	allowPing(t)
	runCases(t, pick(networkCases, "N1/udp4-sendto-inherited", "N1/udp6-sendmmsg-inherited",
		"N1/tcp4-connect-new", "N1/tcp4-write-inherited-connected", "N2/io_uring-socket",
		"N2/io_uring-connect-inherited", "N3/raw-icmp", "N3/af_netlink",
		"N4/unix-connect-path", "N4/unix-connect-abstract", "N4/unix-write-inherited-connected",
		"N5/unix-dgram-resolver-path"), networkDeny, kerneltest.InChildSub)
}

// TestBothCeilingsDenyNetwork: the meet of both fields denies network too
// (one registration carrying two deny bits).
func TestBothCeilingsDenyNetwork(t *testing.T) {
	runCases(t, pick(networkCases, "N1/udp4-sendto-inherited", "N4/unix-connect-abstract"), bothDeny, kerneltest.InSandbox)
}
