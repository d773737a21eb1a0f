package escapetest

// Network ceiling, second round: an inet socket the sandbox inherited from
// outside (connected before the ceiling applied) is used through every path
// that is not sendmsg/recvmsg/connect; and network-class character devices
// (tun, vhost, ppp) that reach the host's network without any socket.

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// sockPair: peer stays with the test (outside every sandbox); probe's end
// is passed to the probe as fd 3 (the test keeps its own copy, so the
// connection outlives the probe and a shutdown is the probe's doing).
type sockPair struct{ peer, probe int }

func inetPair(t *testing.T) sockPair {
	t.Helper()
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(l, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(l)
	if err != nil {
		t.Fatal(err)
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(c, sa); err != nil {
		t.Fatal(err)
	}
	s, _, err := unix.Accept4(l, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(c); unix.Close(s) })
	return sockPair{peer: s, probe: c}
}

// sockEffect is how a socket op's side effect is seen.
type sockEffect int

const (
	effReceived sockEffect = iota // the probe obtained the peer's data
	effPeerGot                    // the peer received the probe's data
	effPeerEOF                    // the peer saw the probe's shutdown
	effOption                     // SO_PRIORITY of the socket is 6
	effNone                       // only the result counts (mmap)
)

// sockOp: a fresh pair from mk; for receiving ops the peer sends first.
func sockOp(mk func(*testing.T) sockPair, op string, eff sockEffect) kerneltest.Attempt {
	return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		p := mk(t)
		var args []string
		switch op {
		case "fd-sendfile":
			f := kt.TmpPath("sendfile-src")
			if err := os.WriteFile(f, []byte(sentData), 0o644); err != nil {
				t.Fatal(err)
			}
			args = []string{f}
		}
		if eff == effReceived || op == "fd-mmap" {
			if _, err := unix.Write(p.peer, []byte(peerData)); err != nil {
				t.Fatal(err)
			}
		}
		r := sb.ProbeFiles(t, []*os.File{dupFile(t, p.probe)}, op, args...)
		switch eff {
		case effReceived:
			return r, func() (bool, string) { return r.Effect, fmt.Sprintf("the probe received the peer's data (%q)", r.Out) }
		case effPeerGot:
			return r, func() (bool, string) {
				b, _ := pollRead(p.peer, 500*time.Millisecond)
				return contains(b, sentData), fmt.Sprintf("the peer received %q", b)
			}
		case effPeerEOF:
			return r, func() (bool, string) {
				b, ok := pollRead(p.peer, 500*time.Millisecond)
				return ok && len(b) == 0, "the peer saw end of stream"
			}
		case effOption:
			return r, func() (bool, string) {
				v, err := unix.GetsockoptInt(p.probe, unix.SOL_SOCKET, unix.SO_PRIORITY)
				return err == nil && v == 6, fmt.Sprintf("SO_PRIORITY is %d (%v)", v, err)
			}
		}
		return r, nil
	}
}

// inheritedSocketOps: every use of a socket besides sendmsg/recvmsg.
var inheritedSocketOps = []struct {
	name, op string
	eff      sockEffect
	hooks    []denial.Hook
}{
	{"read", "fd-read", effReceived, hooks(denial.HookFilePermission)},
	{"readv", "fd-readv", effReceived, hooks(denial.HookFilePermission)},
	{"splice socket to pipe", "fd-splice", effReceived, hooks(denial.HookFilePermission)},
	{"io_uring IORING_OP_READ", "fd-uring-read", effReceived, hooks(denial.HookFilePermission)},
	// IORING_OP_RECV goes through sock_recvmsg, not rw_verify_area.
	{"io_uring IORING_OP_RECV", "fd-uring-recv", effReceived, hooks(denial.HookFilePermission, denial.HookSocketRecvmsg)},
	{"ioctl SIOCINQ", "fd-fionread", effReceived, hooks(denial.HookFileIoctl)},
	{"write", "fd-write", effPeerGot, hooks(denial.HookFilePermission)},
	{"sendfile file to socket", "fd-sendfile", effPeerGot, hooks(denial.HookFilePermission)},
	{"splice pipe to socket", "fd-splice-out", effPeerGot, hooks(denial.HookFilePermission)},
	{"io_uring IORING_OP_WRITE", "fd-uring-write", effPeerGot, hooks(denial.HookFilePermission)},
	// IORING_OP_SEND goes through sock_sendmsg, not rw_verify_area.
	{"io_uring IORING_OP_SEND", "fd-uring-send", effPeerGot, hooks(denial.HookFilePermission, denial.HookSocketSendmsg)},
	{"setsockopt SO_PRIORITY", "fd-setsockopt", effOption, hooks(denial.HookSocketSetsockopt)},
	{"shutdown SHUT_WR", "fd-shutdown", effPeerEOF, hooks(denial.HookSocketShutdown)},
}

// tcpOnlyOps exist for TCP sockets only.
var tcpOnlyOps = []struct {
	name, op string
	eff      sockEffect
	hooks    []denial.Hook
}{
	{"getsockopt TCP_ZEROCOPY_RECEIVE (copy fallback)", "fd-zerocopy", effReceived, hooks(denial.HookSocketGetsockopt)},
	{"mmap of the socket", "fd-mmap", effNone, hooks(denial.HookMmapFile)},
}

func TestInheritedInetSocket(t *testing.T) {
	kt.Enforcer(t)
	var cases []kerneltest.Case
	for _, o := range append(inheritedSocketOps, tcpOnlyOps...) {
		cases = append(cases, kerneltest.Case{Name: "N1 inherited tcp4 " + o.name, Ceiling: netOff, Attempt: sockOp(inetPair, o.op, o.eff), Want: kerneltest.Want{Hooks: o.hooks}})
	}
	kt.Run(t, cases)
}

// The same uses of an AF_UNIX socketpair the sandbox made itself stay
// allowed under network=false.
func TestSandboxSocketpairAllowed(t *testing.T) {
	kt.Enforcer(t)
	for _, o := range inheritedSocketOps {
		t.Run(o.name, func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: netOff})
			dir := "send"
			if o.eff == effReceived {
				dir = "recv"
			}
			r := sb.Probe(t, "selfpair", o.op, dir)
			if r.Setup != "" {
				t.Fatalf("probe could not attempt the operation: %v", r)
			}
			if r.Errno != 0 || !r.Effect {
				t.Errorf("AF_UNIX socketpair %s under %v: %v (effect %v), want success with its effect", o.name, netOff, r, r.Effect)
			}
			if ds := kt.Records(t, sb.Cg.ID); len(ds) > 0 {
				t.Errorf("AF_UNIX socketpair %s: unexpected records %v", o.name, ds)
			}
		})
	}
}

const (
	tunSetPersist = 0x400454cb
)

// persistentTun creates a persistent tun device owned by nobody in
// particular (attaching needs no capability), addresses it 10.77.N.1/24
// and brings it up. Returns its name and N.
func persistentTun(t *testing.T) (string, int) {
	t.Helper()
	mustExist(t, "/dev/net/tun", "the tun module")
	n := int(kt.Seq()%200) + 20
	name := fmt.Sprintf("esct%d", n)
	tunctl := func(persist int) error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var ifr [40]byte
		copy(ifr[:16], name)
		*(*uint16)(unsafe.Pointer(&ifr[16])) = iffTun | iffNoPI
		if e := ioctlPtr(fd, tunSetIff, unsafe.Pointer(&ifr[0])); e != 0 {
			return fmt.Errorf("TUNSETIFF %s: %v", name, e)
		}
		if err := unix.IoctlSetInt(fd, tunSetPersist, persist); err != nil {
			return fmt.Errorf("TUNSETPERSIST: %v", err)
		}
		return nil
	}
	if err := tunctl(1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tunctl(0) })
	for _, c := range [][]string{
		{"ip", "addr", "add", fmt.Sprintf("10.77.%d.1/24", n), "dev", name},
		{"ip", "link", "set", name, "up"},
	} {
		if out, err := exec.Command("/bin/busybox", c...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", c, err, out)
		}
	}
	return name, n
}

func udpListener(t *testing.T, ip string) (int, int) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	var a [4]byte
	copy(a[:], parseIP4(ip))
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: a}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port
}

func TestNetworkDevices(t *testing.T) {
	kt.Enforcer(t)
	open := func(path, why string) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mustExist(t, path, why)
			return sb.Probe(t, "open-rw", path), nil
		}
	}
	kt.Run(t, []kerneltest.Case{
		// A tun device the host set up: the sandbox attaches to it and
		// writes a datagram that the host's stack delivers to a
		// listener of the test.
		{Name: "N3 /dev/net/tun inject a datagram into the host", Ceiling: netOff, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			name, n := persistentTun(t)
			host := fmt.Sprintf("10.77.%d.1", n)
			l, port := udpListener(t, host)
			r := sb.Probe(t, "tun-inject", name, fmt.Sprintf("10.77.%d.2", n), host, fmt.Sprint(port))
			return r, func() (bool, string) {
				b, _ := pollRead(l, 500*time.Millisecond)
				return contains(b, sentData), fmt.Sprintf("the host's listener %s:%d received %q", host, port, b)
			}
		}, Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
		// Read-only: the sandbox receives what the host routes into it.
		{Name: "N3 /dev/net/tun read-only receives host traffic", Ceiling: netOff, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			name, n := persistentTun(t)
			s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(s)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				dst := &unix.SockaddrInet4{Port: 9999, Addr: [4]byte{10, 77, byte(n), 2}}
				for {
					_ = unix.Sendto(s, []byte(peerData), 0, dst)
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
			}()
			r := sb.Probe(t, "tun-sniff", name)
			close(stop)
			wg.Wait()
			return r, func() (bool, string) { return r.Effect, "the probe read the host's datagram from the tun device" }
		}, Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
		{Name: "N3 open /dev/vhost-net", Ceiling: netOff, Attempt: open("/dev/vhost-net", "the vhost_net module"), Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
		{Name: "N3 open /dev/vhost-vsock", Ceiling: netOff, Attempt: open("/dev/vhost-vsock", "the vhost_vsock module"), Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
		{Name: "N3 open /dev/ppp", Ceiling: netOff, Attempt: open("/dev/ppp", "the ppp_generic module"), Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
	})
}

// N4 for AF_UNIX stream sockets connected outside and passed in: the
// connected peer decides at socket_sendmsg. Every way of writing into the
// socket must reach that decision (on 6.1, sendfile and splice use
// unix_stream_sendpage, which has no sendmsg hook).
func TestAttackInheritedOutsideUnixStream(t *testing.T) {
	kt.Enforcer(t)
	unixPair := func(t *testing.T) sockPair {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return sockPair{peer: fds[0], probe: fds[1]}
	}
	sendHooks := hooks(denial.HookSocketSendmsg, denial.HookFilePermission)
	var cases []kerneltest.Case
	for _, o := range []struct{ name, op string }{
		{"write", "fd-write"},
		{"sendfile file to socket", "fd-sendfile"},
		{"splice pipe to socket", "fd-splice-out"},
		{"io_uring IORING_OP_WRITE", "fd-uring-write"},
		{"io_uring IORING_OP_SEND", "fd-uring-send"},
	} {
		cases = append(cases, kerneltest.Case{Name: "N4 inherited outside unix stream " + o.name, Ceiling: netOff,
			Attempt: sockOp(unixPair, o.op, effPeerGot), Want: kerneltest.Want{Hooks: sendHooks}})
	}
	kt.Run(t, cases)
}

// pairMadeIn returns both ends of an AF_UNIX stream socketpair made by a
// probe in sb's cgroup: a socket records the cgroup of the task that
// created it, and the unix peer rule (N4) decides on that cgroup.
func pairMadeIn(t *testing.T, sb *kerneltest.Sandbox) sockPair {
	t.Helper()
	tr, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tr[0])
	r := sb.ProbeFiles(t, []*os.File{os.NewFile(uintptr(tr[1]), "pair-out")}, "pair-out")
	if r.Setup != "" || r.Errno != 0 || !r.Effect {
		t.Fatalf("pair-out in %s: %v", sb.Cg, r)
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(8))
	_, oobn, _, _, err := unix.Recvmsg(tr[0], buf, oob, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("pair-out: control messages %v (%v)", msgs, err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		t.Fatalf("pair-out: rights %v (%v)", fds, err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return sockPair{peer: fds[0], probe: fds[1]}
}

// N4 by the peer's cgroup level: a peer created in a sibling cgroup at the
// sandbox's own level (another container's, an unregistered one) is
// outside, as one created above the sandbox is. The programs decide a peer
// at the network-denying cgroup's level by comparing ids, and a deeper one
// through that cgroup's ancestor array (TestUnixPeerInsideAnyLevel).
func TestAttackUnixPeerSiblingCgroup(t *testing.T) {
	kt.Enforcer(t)
	sibling := func(t *testing.T) sockPair { return pairMadeIn(t, kt.Sandbox(t, "sibling")) }
	var cases []kerneltest.Case
	for _, o := range []struct{ name, op string }{
		{"write", "fd-write"},
		{"io_uring IORING_OP_SEND", "fd-uring-send"},
		{"splice pipe to socket", "fd-splice-out"},
	} {
		cases = append(cases, kerneltest.Case{Name: "N4 unix peer made in a sibling cgroup " + o.name, Ceiling: netOff,
			Attempt: sockOp(sibling, o.op, effPeerGot),
			Want:    kerneltest.Want{Hooks: hooks(denial.HookSocketSendmsg, denial.HookFilePermission)}})
	}
	kt.Run(t, cases)
}

// The other side of TestAttackUnixPeerSiblingCgroup: under network=false
// a peer made in the sandbox's cgroup or below it stays reachable, from a
// process in the sandbox's cgroup or in a sub-cgroup of it, and no record
// is left.
func TestUnixPeerInsideAnyLevel(t *testing.T) {
	kt.Enforcer(t)
	for _, c := range []struct {
		name             string
		peerSub, userSub bool
	}{
		{"peer in the sandbox, user in the sandbox", false, false},
		{"peer in a sub-cgroup, user in the sandbox", true, false},
		{"peer in the sandbox, user in a sub-cgroup", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sub := sb.Sub(t)
			maker, user := sb, sb
			if c.peerSub {
				maker = sub
			}
			if c.userSub {
				user = sub
			}
			// Made before the registration: pair-out hands the pair to
			// the test over a socket of the test's, a peer outside.
			p := pairMadeIn(t, maker)
			sb.Register(t, entry.Entry{Ceiling: netOff})
			r := user.ProbeFiles(t, []*os.File{dupFile(t, p.probe)}, "fd-write")
			if r.Setup != "" {
				t.Fatalf("probe could not attempt the write: %v", r)
			}
			b, _ := pollRead(p.peer, 500*time.Millisecond)
			if r.Errno != 0 || !contains(b, sentData) {
				t.Errorf("write to a peer made inside (%s) under %v: %v, peer got %q; want success", c.name, netOff, r, b)
			}
			if ds := kt.Records(t, sb.Cg.ID); len(ds) > 0 {
				t.Errorf("%s: unexpected records %v", c.name, ds)
			}
		})
	}
}

// N4 with an audit-only network ceiling registered below an enforcing one:
// the enforcing parent decides (a denial outranks an audit), so the unix
// peer rule draws the sandbox at the parent: a peer made in the child or
// in the parent stays reachable from the child, one made beside the
// parent is refused. The peer rule once compared the child's level with
// the parent's id and refused every peer.
func TestUnixPeerAuditOnlyChildOfEnforcing(t *testing.T) {
	kt.Enforcer(t)
	for _, c := range []struct {
		name    string
		maker   func(parent, child, beside *kerneltest.Sandbox) *kerneltest.Sandbox
		allowed bool
	}{
		{"peer in the audit-only child", func(_, child, _ *kerneltest.Sandbox) *kerneltest.Sandbox { return child }, true},
		{"peer in the enforcing parent", func(parent, _, _ *kerneltest.Sandbox) *kerneltest.Sandbox { return parent }, true},
		{"peer beside the parent", func(_, _, beside *kerneltest.Sandbox) *kerneltest.Sandbox { return beside }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := kt.Sandbox(t, "case")
			beside := kt.Sandbox(t, "sibling")
			child := kt.SandboxAt(t, parent.Cg.Group+"/audit")
			p := pairMadeIn(t, c.maker(parent, child, beside)) // before the registrations: see pairMadeIn
			parent.Register(t, entry.Entry{Ceiling: netOff})
			child.Register(t, entry.Entry{Ceiling: netOff, AuditOnly: true})
			r := child.ProbeFiles(t, []*os.File{dupFile(t, p.probe)}, "fd-write")
			if r.Setup != "" {
				t.Fatalf("probe could not attempt the write: %v", r)
			}
			b, _ := pollRead(p.peer, 500*time.Millisecond)
			switch {
			case c.allowed && (r.Errno != 0 || !contains(b, sentData)):
				t.Errorf("%s: %v, peer got %q; want the write to arrive", c.name, r, b)
			case !c.allowed && !r.Denied():
				t.Errorf("BYPASS %s: %v, want EPERM", c.name, r)
			case !c.allowed && contains(b, sentData):
				t.Errorf("BYPASS %s: the peer received %q", c.name, b)
			}
		})
	}
}
