package enforcer_test

import (
	"errors"
	"net"
	"testing"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/endpoint"
	"github.com/enforcerd/enforcerd/internal/kerneltest"
)

// TestEndpointsAuditOnlyAncestor: an audit-only ancestor's list audits
// what it does not list (the operation goes through, with an audited
// record); what both list passes without a record.
func TestEndpointsAuditOnlyAncestor(t *testing.T) {
	kt.Enforcer(t)
	a := listen(t, "tcp4", "127.0.0.1:0")
	b := listen(t, "tcp4", "127.0.0.1:0")
	parent := kt.Sandbox(t, "endpoints-audit")
	parent.Register(t, enforcer.Entry{Ceiling: networkDeny, AuditOnly: true, AllowConnect: parseEndpoints(t, "tcp:"+a.addr)})
	child := kt.SandboxAt(t, parent.Cg.Group+"/child")
	child.Register(t, enforcer.Entry{Ceiling: networkDeny, AllowConnect: parseEndpoints(t, "tcp:"+a.addr, "tcp:"+b.addr)})
	allowed(t, child, "tcp-send", a.addr, a.effect)
	r := child.Probe(t, "tcp-send", b.addr)
	if r.Errno != 0 || r.Exit > 0 {
		t.Fatalf("B (enforced list has it, audit-only parent not): %v, want success", r)
	}
	if ok, what := b.effect(); !ok {
		t.Fatalf("B: %s", what)
	}
	kt.Expect(t, parent.Cg.ID, kerneltest.Want{Hooks: []enforcer.Hook{enforcer.HookSocketConnect}, Audited: true})
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
	must(t, enf.Register(sb.Cg, enforcer.Entry{Ceiling: networkDeny}))
	if got, _ := enf.Lookup(sb.Cg.ID); len(got.AllowConnect) != 0 {
		t.Errorf("after unregister and a plain register: %v, want no endpoints", got.AllowConnect)
	}
	// Refusals: with network allowed; unresolved unix endpoint.
	if err := enf.Register(sb.Cg, enforcer.Entry{Ceiling: writeDeny, AllowConnect: eps}); !errors.Is(err, enforcer.ErrBadEndpoints) {
		t.Errorf("register with network allowed: %v, want ErrBadEndpoints", err)
	}
	if err := enf.Register(sb.Cg, enforcer.Entry{Ceiling: networkDeny, AllowConnect: []endpoint.Endpoint{{Kind: endpoint.Unix, Path: path}}}); !errors.Is(err, enforcer.ErrBadEndpoints) {
		t.Errorf("register with an unresolved unix endpoint: %v, want ErrBadEndpoints", err)
	}
	if got, _ := enf.Lookup(sb.Cg.ID); len(got.AllowConnect) != 0 || got.Ceiling != networkDeny {
		t.Errorf("a refused registration changed the entry: %+v", got)
	}
}
