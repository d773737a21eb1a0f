package enforcer_test

import (
	"errors"
	"net"
	"os"
	"testing"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// TestEndpointsAuditOnlyAncestor: an audit-only ancestor's list audits
// what it does not list (the operation goes through, with an audited
// record); what both list passes without a record.
func TestEndpointsAuditOnlyAncestor(t *testing.T) {
	kt.Enforcer(t)
	a := listen(t, "tcp4", "127.0.0.1:0")
	b := listen(t, "tcp4", "127.0.0.1:0")
	parent := kt.Sandbox(t, "endpoints-audit")
	parent.Register(t, entry.Entry{Ceiling: networkDeny, AuditOnly: true, AllowConnect: parseEndpoints(t, "tcp:"+a.addr)})
	child := kt.SandboxAt(t, parent.Cg.Group+"/child")
	child.Register(t, entry.Entry{Ceiling: networkDeny, AllowConnect: parseEndpoints(t, "tcp:"+a.addr, "tcp:"+b.addr)})
	allowed(t, child, "tcp-send", a.addr, a.effect)
	r := child.Probe(t, "tcp-send", b.addr)
	if r.Errno != 0 || r.Exit > 0 {
		t.Fatalf("B (enforced list has it, audit-only parent not): %v, want success", r)
	}
	if ok, what := b.effect(); !ok {
		t.Fatalf("B: %s", what)
	}
	kt.Expect(t, parent.Cg.ID, kerneltest.Want{Hooks: []denial.Hook{denial.HookSocketConnect}, Audited: true})
}

// TestEndpointsShutdownInheritedListener: shutdown of a listening socket
// passed in (its owner is outside) stays denied with endpoints of its kind
// listed; the control's effect is the listener no longer accepting.
func TestEndpointsShutdownInheritedListener(t *testing.T) {
	var l *net.TCPListener
	kt.Run(t, []kerneltest.Case{{
		Name: "N9/shutdown-inherited-listener", Ceiling: networkDeny,
		Want: kerneltest.Hooks(denial.HookSocketShutdown),
		Prep: func(t *testing.T) {
			var err error
			l, err = net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
			must(t, err)
			t.Cleanup(func() { l.Close() })
		},
		Endpoints: func(t *testing.T) []endpoint.Endpoint { return parseEndpoints(t, "tcp:"+l.Addr().String()) },
		Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f, err := l.File()
			must(t, err)
			defer f.Close()
			r := sb.ProbeFiles(t, []*os.File{f}, "shutdown-fd")
			return r, func() (bool, string) {
				c, err := net.DialTimeout("tcp4", l.Addr().String(), listenWait)
				if err != nil {
					return true, "the listener stopped: " + err.Error()
				}
				c.Close()
				return false, "the listener still accepts"
			}
		},
	}})
}

// TestEndpointsLookupRoundTrip: Lookup and List give back the list as
// registered (unix endpoints by identity), and Unregister drops it.
func TestEndpointsLookupRoundTrip(t *testing.T) {
	enf := kt.Enforcer(t)
	path := brokerAddr(t, false)
	l, err := net.Listen("unix", path)
	must(t, err)
	defer l.Close()
	eps := parseEndpoints(t, "tcp:127.0.0.1:8080", "udp:[2001:db8::1]:53", "unix:"+path)
	sb := registered(t, "tcp:127.0.0.1:8080", "udp:[2001:db8::1]:53", "unix:"+path)
	got, err := enf.Lookup(sb.Cg.ID)
	must(t, err)
	if len(got.AllowConnect) != len(eps) {
		t.Fatalf("Lookup: %v, want %v", got.AllowConnect, eps)
	}
	for i := range eps {
		if !endpoint.Same(got.AllowConnect[i], eps[i]) {
			t.Errorf("Lookup[%d] = %v, want %v", i, got.AllowConnect[i], eps[i])
		}
	}
	must(t, enf.Unregister(sb.Cg.ID))
	must(t, enf.Register(sb.Cg, entry.Entry{Ceiling: networkDeny}))
	if got, _ := enf.Lookup(sb.Cg.ID); len(got.AllowConnect) != 0 {
		t.Errorf("after unregister and a plain register: %v, want no endpoints", got.AllowConnect)
	}
	// Refusals: with network allowed; unresolved unix endpoint.
	if err := enf.Register(sb.Cg, entry.Entry{Ceiling: writeDeny, AllowConnect: eps}); !errors.Is(err, entry.ErrBadEndpoints) {
		t.Errorf("register with network allowed: %v, want ErrBadEndpoints", err)
	}
	if err := enf.Register(sb.Cg, entry.Entry{Ceiling: networkDeny, AllowConnect: []endpoint.Endpoint{{Kind: endpoint.Unix, Path: path}}}); !errors.Is(err, entry.ErrBadEndpoints) {
		t.Errorf("register with an unresolved unix endpoint: %v, want ErrBadEndpoints", err)
	}
	if got, _ := enf.Lookup(sb.Cg.ID); len(got.AllowConnect) != 0 || got.Ceiling != networkDeny {
		t.Errorf("a refused registration changed the entry: %+v", got)
	}
}
