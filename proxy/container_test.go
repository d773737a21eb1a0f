package proxy

import (
	"errors"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/egress"
)

// fakeRegistry places every client in one container with fixed lists.
type fakeRegistry struct {
	container string
	lists     [][]string
	err       error
	groups    []string // groups asked about
}

func (f *fakeRegistry) ProxyLimits(group string) (string, []egress.Patterns, error) {
	f.groups = append(f.groups, group)
	if f.err != nil {
		return "", nil, f.err
	}
	var out []egress.Patterns
	for _, l := range f.lists {
		p, _ := egress.ParsePatterns(l)
		out = append(out, p)
	}
	return f.container, out, nil
}

// TestContainerListNarrowsNeverWidens: a container's list narrows the
// global list; a name only in the container's list stays refused.
func TestContainerListNarrowsNeverWidens(t *testing.T) {
	srv, conns := modelAPI(t, false)
	port := strconv.Itoa(portOf(t, srv.Listener.Addr().String()))
	reg := &fakeRegistry{container: "agent-1", lists: [][]string{{"a.example.com", "extra.example.net"}, {"*.example.com"}}}
	tp := startProxy(t, Config{
		AllowDomains: []string{"*.example.com"}, AllowPorts: []int{portOf(t, srv.Listener.Addr().String())},
		AllowPrivate: []string{"127.0.0.1"},
		Resolve:      []string{"a.example.com=127.0.0.1", "b.example.com=127.0.0.1", "extra.example.net=127.0.0.1"},
	}, Options{Registry: reg})
	get := func(host string) *http.Response {
		resp, _, _ := tp.raw(t, "GET http://"+host+":"+port+"/ HTTP/1.1\r\nHost: "+host+":"+port+"\r\n\r\n")
		return resp
	}
	if resp := get("a.example.com"); resp.StatusCode != 200 {
		t.Fatalf("in both lists: %d %s", resp.StatusCode, resp.Header.Get(ReasonHeader))
	}
	wantRefused(t, get("b.example.com"), 403, ReasonContainerDomainNotAllowed) // global only
	wantRefused(t, get("extra.example.net"), 403, ReasonDomainNotAllowed)      // container only: no widening
	if n := conns.Load(); n != 1 {
		t.Fatalf("server saw %d connections, want 1", n)
	}
	group, _ := cgroup.PidGroup(os.Getpid())
	if len(reg.groups) != 3 || reg.groups[0] != group {
		t.Fatalf("registry asked about %v, want %s (this test's cgroup)", reg.groups, group)
	}
	// Records are written when a request ends: the allowed one's may
	// come after the refusals. Find b's by its domain.
	tp.audit.waitRecord(t, 3)
	var rec map[string]any
	for _, r := range tp.audit.records(t) {
		if r["domain"] == "b.example.com" {
			rec = r
		}
	}
	if rec["container"] != "agent-1" || rec["reason"] != ReasonContainerDomainNotAllowed || rec["client_pid"] != float64(os.Getpid()) {
		t.Fatalf("audit %v", rec)
	}
}

// TestUnplacedClientIsRefusedUnderRegistry: under the daemon, a client
// the registry cannot place is refused (fail closed), even for a
// globally allowed name.
func TestUnplacedClientIsRefusedUnderRegistry(t *testing.T) {
	reg := &fakeRegistry{err: errors.New("cgroup gone")}
	tp := startProxy(t, Config{AllowDomains: []string{"api.example.com"}}, Options{Registry: reg})
	resp, _, _ := tp.raw(t, connectTo("api.example.com:443"))
	wantRefused(t, resp, 403, ReasonClientUnidentified)
	// "none" lists nothing.
	reg = &fakeRegistry{container: "c", lists: [][]string{{}}}
	tp = startProxy(t, Config{AllowDomains: []string{"api.example.com"}}, Options{Registry: reg})
	resp, _, _ = tp.raw(t, connectTo("api.example.com:443"))
	wantRefused(t, resp, 403, ReasonContainerDomainNotAllowed)
}
