package enforcer_test

// N8: allowed endpoints under network=false (threat model N8, design
// "Allowed endpoints"). Every listener is in the test process, outside
// the sandbox; an allowed case must show its bytes arriving there, a
// denied one is tri-state (control with the effect, EPERM/EACCES, no
// effect, a record).

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// echoServer records whether Payload arrived, and answers every packet or
// connection with Payload.
type echoServer struct {
	addr string
	got  chan string
}

func (s *echoServer) effect() (bool, string) {
	select {
	case b := <-s.got:
		return true, fmt.Sprintf("%s received %q", s.addr, b)
	case <-time.After(2 * listenWait):
		return false, s.addr + " received nothing"
	}
}

// listen starts an echo server on network ("tcp4", "tcp6", "udp4",
// "udp6", "unix", "unixgram") at addr.
func listen(t *testing.T, network, addr string) *echoServer {
	t.Helper()
	s := &echoServer{got: make(chan string, 16)}
	switch network {
	case "udp4", "udp6", "unixgram":
		c, err := net.ListenPacket(network, addr)
		must(t, err)
		t.Cleanup(func() { c.Close() })
		s.addr = c.LocalAddr().String()
		go func() {
			buf := make([]byte, 64)
			for {
				n, from, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				if probe.Contains(buf[:n]) {
					s.got <- string(buf[:n])
				}
				if from != nil {
					c.WriteTo([]byte(probe.Payload), from)
				}
			}
		}()
	default:
		l, err := net.Listen(network, addr)
		must(t, err)
		t.Cleanup(func() { l.Close() })
		s.addr = l.Addr().String()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					c.SetDeadline(time.Now().Add(5 * time.Second))
					buf := make([]byte, 64)
					n, _ := c.Read(buf)
					if probe.Contains(buf[:n]) {
						s.got <- string(buf[:n])
						c.Write([]byte(probe.Payload))
					}
				}()
			}
		}()
	}
	return s
}

func port(s *echoServer) string {
	_, p, _ := net.SplitHostPort(s.addr)
	return p
}

func parseEndpoints(t *testing.T, ss ...string) []endpoint.Endpoint {
	t.Helper()
	eps, err := endpoint.ParseList(ss)
	must(t, err)
	eps, err = endpoint.Resolve(eps, "/")
	must(t, err)
	return eps
}

// epFixture is one case's listeners, fresh for each run (Prep).
type epFixture struct {
	listed  []string    // endpoint syntax
	target  string      // the probe's ADDR
	srv     *echoServer // the target's listener
	files   []*os.File  // passed to the probe
	attempt func(t *testing.T)
}

// epCase is a denied N8 case: prep builds the fixture (listed endpoints,
// target and its listener) for each run.
func epCase(name, op string, prep func(t *testing.T, f *epFixture), hooks ...denial.Hook) kerneltest.Case {
	f := &epFixture{}
	return kerneltest.Case{
		Name: name, Ceiling: networkDeny, Want: kerneltest.Hooks(hooks...),
		Prep:      func(t *testing.T) { *f = epFixture{}; prep(t, f) },
		Endpoints: func(t *testing.T) []endpoint.Endpoint { return parseEndpoints(t, f.listed...) },
		Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			if f.attempt != nil {
				f.attempt(t)
			}
			r := sb.Run(t, probe.Cmd{Op: op, Args: []string{f.target}, Files: f.files})
			if f.srv == nil {
				return r, nil
			}
			return r, f.srv.effect
		},
	}
}

// listedTCP is a listener at 127.0.0.1 whose endpoint the fixture lists.
func listedTCP(t *testing.T, f *epFixture) *echoServer {
	s := listen(t, "tcp4", "127.0.0.1:0")
	f.listed = append(f.listed, "tcp:"+s.addr)
	return s
}

var endpointDenied = []kerneltest.Case{
	epCase("N8/tcp-unlisted-address", "tcp-send", func(t *testing.T, f *epFixture) {
		l := listedTCP(t, f)
		f.srv = listen(t, "tcp4", "127.0.0.2:"+port(l))
		f.target = f.srv.addr
	}, denial.HookSocketConnect),
	epCase("N8/tcp-unlisted-port", "tcp-send", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.srv = listen(t, "tcp4", "127.0.0.1:0")
		f.target = f.srv.addr
	}, denial.HookSocketConnect),
	epCase("N8/tcp-fastopen-unlisted", "tcp-fastopen", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.srv = listen(t, "tcp4", "127.0.0.1:0")
		f.target = f.srv.addr
	}, denial.HookSocketSendmsg),
	epCase("N8/io_uring-connect-unlisted", "uring-tcp", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.srv = listen(t, "tcp4", "127.0.0.1:0")
		f.target = f.srv.addr
	}, denial.HookSocketConnect),
	epCase("N8/udp-to-listed-tcp-port", "udp-sendto", func(t *testing.T, f *epFixture) {
		l := listedTCP(t, f)
		f.srv = listen(t, "udp4", "127.0.0.1:"+port(l))
		f.target = f.srv.addr
	}, denial.HookSocketCreate),
	epCase("N8/tcp-to-listed-udp-port", "tcp-send", func(t *testing.T, f *epFixture) {
		u := listen(t, "udp4", "127.0.0.1:0")
		f.listed = []string{"udp:" + u.addr}
		f.srv = listen(t, "tcp4", u.addr)
		f.target = f.srv.addr
	}, denial.HookSocketCreate),
	epCase("N8/udp-unlisted-port", "udp-sendto", func(t *testing.T, f *epFixture) {
		u := listen(t, "udp4", "127.0.0.1:0")
		f.listed = []string{"udp:" + u.addr}
		f.srv = listen(t, "udp4", "127.0.0.1:0")
		f.target = f.srv.addr
	}, denial.HookSocketSendmsg),
	epCase("N8/tcp6-loopback-vs-listed-v4", "tcp-send", func(t *testing.T, f *epFixture) {
		l := listedTCP(t, f)
		f.srv = listen(t, "tcp6", "[::1]:"+port(l))
		f.target = f.srv.addr
	}, denial.HookSocketConnect),
	epCase("N8/udp6-loopback-vs-listed-v4", "udp-sendto", func(t *testing.T, f *epFixture) {
		u := listen(t, "udp4", "127.0.0.1:0")
		f.listed = []string{"udp:" + u.addr}
		f.srv = listen(t, "udp6", "[::1]:"+port(u))
		f.target = f.srv.addr
	}, denial.HookSocketSendmsg),
	epCase("N8/v4-mapped-unlisted-port", "tcp-send", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.srv = listen(t, "tcp4", "127.0.0.1:0")
		f.target = "[::ffff:127.0.0.1]:" + port(f.srv)
	}, denial.HookSocketConnect),
	epCase("N8/udp-recv-unconnected", "udp-recv-unconnected", func(t *testing.T, f *epFixture) {
		u := listen(t, "udp4", "127.0.0.1:0")
		f.listed = []string{"udp:" + u.addr}
		f.target = u.addr
	}, denial.HookSocketRecvmsg),
	epCase("N8/tcp-bind", "tcp-bind", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.target = "127.0.0.1:0"
	}, denial.HookSocketBind),
	epCase("N8/tcp-listen", "tcp-listen", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.target = "127.0.0.1:0"
	}, denial.HookSocketListen),
	epCase("N8/accept-inherited", "accept-fd", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		must(t, err)
		t.Cleanup(func() { l.Close() })
		c, err := net.Dial("tcp4", l.Addr().String()) // queued for accept
		must(t, err)
		t.Cleanup(func() { c.Close() })
		lf, err := l.File()
		must(t, err)
		f.files = []*os.File{lf}
		f.target = "-"
	}, denial.HookSocketAccept),
	epCase("N8/setsockopt-ip-source-route", "setsockopt-ip-options", func(t *testing.T, f *epFixture) {
		l := listedTCP(t, f)
		f.target = l.addr
	}, denial.HookSocketSetsockopt),
	epCase("N8/unix-unlisted", "unix-connect", func(t *testing.T, f *epFixture) {
		listedTCP(t, f)
		f.srv = listen(t, "unix", brokerAddr(t, false))
		f.target = f.srv.addr
	}, denial.HookUnixStreamConnect),
	epCase("N8/unix-recreated-at-listed-path", "unix-connect", func(t *testing.T, f *epFixture) {
		path := brokerAddr(t, false)
		first, err := net.Listen("unix", path)
		must(t, err)
		t.Cleanup(func() { first.Close() })
		f.listed = []string{"unix:" + path}
		f.target = path
		f.attempt = func(t *testing.T) {
			first.Close() // unlinks path
			f.srv = listen(t, "unix", path)
		}
	}, denial.HookUnixStreamConnect),
}

func init() {
	endpointDenied = append(endpointDenied,
		socketEpCase("N8/raw-icmp-with-endpoints", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP),
		socketEpCase("N8/ping-icmp-with-udp-endpoint", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP),
		socketEpCase("N8/af_netlink-with-endpoints", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE),
		socketEpCase("N8/udplite-with-udp-endpoint", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDPLITE),
	)
	sctp := socketEpCase("N8/sctp-with-tcp-endpoint", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
	sctp.Absent = unix.EPROTONOSUPPORT // a module in Debian's kernels
	endpointDenied = append(endpointDenied, sctp)
}

func socketEpCase(name string, fam, typ, proto int) kerneltest.Case {
	return kerneltest.Case{Name: name, Ceiling: networkDeny, Want: kerneltest.Hooks(denial.HookSocketCreate),
		Endpoints: func(t *testing.T) []endpoint.Endpoint {
			return parseEndpoints(t, "tcp:127.0.0.1:80", "udp:127.0.0.1:53", "udp:[::1]:53")
		},
		Attempt: kerneltest.Op("socket", sockArgs(fam, typ, proto)...)}
}

func TestEndpointsDenyTheRest(t *testing.T) {
	kt.Enforcer(t)
	allowPing(t)
	kt.Run(t, endpointDenied)
}

// allowed runs op against target in a fresh sandbox whose network=false
// ceiling lists eps, and requires success and the effect.
func allowed(t *testing.T, sb *kerneltest.Sandbox, op, target string, eff kerneltest.Effect, files ...*os.File) {
	t.Helper()
	r := sb.Run(t, probe.Cmd{Op: op, Args: []string{target}, Files: files})
	if r.Setup != "" || r.Errno != 0 || r.Exit > 0 {
		t.Fatalf("%s %s under the listed endpoint: %v, want success", op, target, r)
	}
	if eff != nil {
		if ok, what := eff(); !ok {
			t.Fatalf("%s %s: succeeded but %s", op, target, what)
		}
	}
	for _, d := range sb.Records(t) {
		t.Errorf("%s %s: unexpected record %v", op, target, d)
	}
}

func registered(t *testing.T, eps ...string) *kerneltest.Sandbox {
	t.Helper()
	sb := kt.Sandbox(t, "endpoints")
	sb.Register(t, entry.Entry{Ceiling: networkDeny, AllowConnect: parseEndpoints(t, eps...)})
	return sb
}

func TestEndpointsAllowListed(t *testing.T) {
	kt.Enforcer(t)
	for _, c := range []struct{ name, op, network, addr, kind, target string }{
		{"tcp4-connect-write", "tcp-send", "tcp4", "127.0.0.1:0", "tcp", ""},
		{"tcp4-fastopen", "tcp-fastopen", "tcp4", "127.0.0.1:0", "tcp", ""},
		{"tcp4-io_uring", "uring-tcp", "tcp4", "127.0.0.1:0", "tcp", ""},
		{"tcp6-connect-write", "tcp-send", "tcp6", "[::1]:0", "tcp", ""},
		{"tcp4-as-v4-mapped", "tcp-send", "tcp4", "127.0.0.1:0", "tcp", "[::ffff:127.0.0.1]:"},
		{"udp4-sendto", "udp-sendto", "udp4", "127.0.0.1:0", "udp", ""},
		{"udp4-connect-send-recv", "udp-connect-send", "udp4", "127.0.0.1:0", "udp", ""},
		{"udp6-sendto", "udp-sendto", "udp6", "[::1]:0", "udp", ""},
		{"unix-stream", "unix-connect", "unix", "", "unix", ""},
		{"unix-dgram", "unix-sendto", "unixgram", "", "unix", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := c.addr
			if addr == "" {
				addr = brokerAddr(t, false)
			}
			s := listen(t, c.network, addr)
			target := s.addr
			if c.target != "" {
				target = c.target + port(s)
			}
			sb := registered(t, c.kind+":"+s.addr)
			allowed(t, sb, c.op, target, s.effect)
		})
	}
	t.Run("write-inherited-connected", func(t *testing.T) {
		s := listen(t, "tcp4", "127.0.0.1:0")
		c, err := net.Dial("tcp4", s.addr)
		must(t, err)
		defer c.Close()
		f, err := c.(*net.TCPConn).File()
		must(t, err)
		sb := registered(t, "tcp:"+s.addr)
		allowed(t, sb, "write-fd", "-", s.effect, f)
	})
	t.Run("mapped-input-is-v4", func(t *testing.T) {
		s := listen(t, "tcp4", "127.0.0.1:0")
		sb := registered(t, "tcp:[::ffff:127.0.0.1]:"+port(s))
		allowed(t, sb, "tcp-send", s.addr, s.effect)
	})
}

// TestEndpointsMeetOverAncestors: a parent lists A and B, a registered
// child cgroup below it B and C: only B is reachable from the child.
func TestEndpointsMeetOverAncestors(t *testing.T) {
	kt.Enforcer(t)
	a := listen(t, "tcp4", "127.0.0.1:0")
	b := listen(t, "tcp4", "127.0.0.1:0")
	c := listen(t, "tcp4", "127.0.0.1:0")
	parent := registered(t, "tcp:"+a.addr, "tcp:"+b.addr)
	child := kt.SandboxAt(t, parent.Cg.Group+"/child")
	child.Register(t, entry.Entry{Ceiling: networkDeny, AllowConnect: parseEndpoints(t, "tcp:"+b.addr, "tcp:"+c.addr)})
	allowed(t, child, "tcp-send", b.addr, b.effect)
	for _, s := range []*echoServer{a, c} {
		r := child.Probe(t, "tcp-send", s.addr)
		if !r.Denied() {
			t.Errorf("BYPASS: %s from the child (parent lists A,B; child B,C): %v, want EPERM or EACCES", s.addr, r)
		}
		if ok, what := s.effect(); ok {
			t.Errorf("BYPASS: %s", what)
		}
		kt.Expect(t, child.Cg.ID, kerneltest.Hooks(denial.HookSocketConnect))
	}
	// The parent's own processes reach A and B, not C.
	allowed(t, parent, "tcp-send", a.addr, a.effect)
	if r := parent.Probe(t, "tcp-send", c.addr); !r.Denied() {
		t.Errorf("BYPASS: C from the parent: %v", r)
	}
}
