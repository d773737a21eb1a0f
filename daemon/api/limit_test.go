package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
)

// rawExchange sends one raw request on a new connection and reads the
// answer; the connection stays open for the caller (nil on a 503, which
// closes it).
func rawExchange(t *testing.T, ts *testServer, req string) (int, api.ErrorBody, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", ts.socket)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, req) // a refused connection may be closed already
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		t.Fatalf("%q: %v", req, err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &eb)
	_ = c.SetDeadline(time.Time{})
	if resp.StatusCode == http.StatusServiceUnavailable {
		c.Close()
		return resp.StatusCode, eb, nil
	}
	t.Cleanup(func() { c.Close() })
	return resp.StatusCode, eb, c
}

func get(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }

// limitedServer serves the API with small connection limits and three
// registered containers a, b, c (cgroups /c/a, /c/b, /c/c).
func limitedServer(t *testing.T, lim api.Limits) (*testServer, *registrytest.Cgroups) {
	t.Helper()
	enf, cgs := registrytest.NewEnforcer(true), registrytest.NewCgroups()
	cgs.Add("/host")
	ts := startLimited(t, lim, enf, cgs)
	for _, id := range []string{"a", "b", "c"} {
		cgs.Add("/c/" + id)
		if _, err := ts.client.Register(context.Background(), api.RegisterRequest{ID: id, Cgroup: "/c/" + id, Role: "test", Ceiling: "network=false"}); err != nil {
			t.Fatal(err)
		}
	}
	return ts, cgs
}

// TestConfinedConnectionLimits: confined callers hold at most PerCgroup
// connections per enforced cgroup and Confined together; an unconfined
// caller is still served (a registration) until Total; a closed
// connection gives its slot back.
func TestConfinedConnectionLimits(t *testing.T) {
	ts, cgs := limitedServer(t, api.Limits{PerCgroup: 2, Confined: 3, Total: 6})
	cgs.Add("/c/a/sub")
	hold := func(group, path string) net.Conn {
		t.Helper()
		ts.setCaller(group)
		code, eb, c := rawExchange(t, ts, get(path))
		if code != http.StatusOK {
			t.Fatalf("caller %s, %s: %d %+v, want 200", group, path, code, eb)
		}
		return c
	}
	refused := func(group, path, want string) {
		t.Helper()
		ts.setCaller(group)
		code, eb, _ := rawExchange(t, ts, get(path))
		if code != http.StatusServiceUnavailable || eb.Code != "unavailable" || !strings.Contains(eb.Error, want) {
			t.Fatalf("caller %s: %d %+v, want 503 unavailable naming %q", group, code, eb, want)
		}
	}
	a1 := hold("/c/a", "/v1/containers/a/surface")
	// A sub-cgroup counts in the scope of the enforced cgroup above it.
	hold("/c/a/sub", "/v1/containers/a/surface")
	refused("/c/a", "/v1/containers/a/surface", "callers confined by cgroup id")
	refused("/c/a/sub", "/v1/containers/a/surface", "callers confined by cgroup id")
	hold("/c/b", "/v1/containers/b/surface")
	refused("/c/c", "/v1/containers/c/surface", "confined callers hold 3 connections")
	// The unconfined reserve: operators and hooks are served.
	hold("/host", "/v1/status")
	ts.setCaller("/host")
	cgs.Add("/c/d")
	if _, err := ts.client.Register(context.Background(), api.RegisterRequest{ID: "d", Cgroup: "/c/d", Role: "test"}); err != nil {
		t.Fatalf("registration while confined callers hold their limit: %v", err)
	}
	hold("/host", "/v1/status")
	// 3 confined, the client's kept-alive one, two held.
	refused("/host", "/v1/status", "the API holds 6 connections")
	// Every refusal is counted by the limit it reached.
	for limit, want := range map[string]float64{api.ConnLimitPerCgroup: 2, api.ConnLimitConfined: 1, api.ConnLimitTotal: 1} {
		if got := testutil.ToFloat64(ts.metrics.ConnsRefused.WithLabelValues(limit)); got != want {
			t.Errorf("enforcerd_api_connections_refused_total{limit=%q} = %v, want %v", limit, got, want)
		}
	}
	// A slot comes back when its connection closes.
	a1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.setCaller("/c/a")
		code, _, _ := rawExchange(t, ts, get("/v1/containers/a/surface"))
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection's slot was not given back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readUntilClosed reads c until the server closes it and returns what it
// read; an error when it stays open past d.
func readUntilClosed(c net.Conn, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), err
	}
	return string(b), nil
}

// TestSlowBodyLosesConnection: a request whose declared body never
// arrives holds its connection no longer than ReadTimeout, whether the
// caller is answered (unconfined: the handler reads the body) or refused
// (confined: 403, and the connection is closed after it).
func TestSlowBodyLosesConnection(t *testing.T) {
	ts, _ := limitedServer(t, api.Limits{ReadTimeout: 300 * time.Millisecond})
	for _, tc := range []struct {
		caller, path, want string
	}{
		{"/host", "/v1/containers", "HTTP/1.1 400"},
		{"/c/a", "/v1/containers", "HTTP/1.1 403"},
		{"/c/a", "/v1/containers/a/narrow", "HTTP/1.1 400"},
		{"/c/a", "/v1/containers/b/narrow", "HTTP/1.1 403"},
	} {
		ts.setCaller(tc.caller)
		c, err := net.Dial("unix", ts.socket)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "POST "+tc.path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		out, err := readUntilClosed(c, 5*time.Second)
		c.Close()
		if err != nil {
			t.Errorf("caller %s, POST %s with a body that never comes: connection still open after 5 s (%v); read %q", tc.caller, tc.path, err, out)
			continue
		}
		if !strings.HasPrefix(out, tc.want) {
			t.Errorf("caller %s, POST %s: answer %q, want %s", tc.caller, tc.path, out, tc.want)
		}
	}
}

// TestConfinedForbiddenClosesConnection: after a 403 to a confined caller
// the connection is closed, even one that would keep it alive.
func TestConfinedForbiddenClosesConnection(t *testing.T) {
	ts, _ := limitedServer(t, api.Limits{})
	ts.setCaller("/c/a")
	c, err := net.Dial("unix", ts.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, get("/v1/containers"))
	out, err := readUntilClosed(c, 5*time.Second)
	if err != nil {
		t.Fatalf("connection open after a 403 (%v): %q", err, out)
	}
	if !strings.HasPrefix(out, "HTTP/1.1 403") || strings.Count(out, "HTTP/1.1") != 1 {
		t.Fatalf("answer %q, want one 403", out)
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := api.DefaultLimits().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lim  api.Limits
		want string
	}{
		{api.Limits{ReadTimeout: 0, PerCgroup: 1, Confined: 1, Total: 2}, "api.read_timeout"},
		{api.Limits{ReadTimeout: 1, PerCgroup: 0, Confined: 1, Total: 2}, "api.max_conns_per_cgroup"},
		{api.Limits{ReadTimeout: 1, PerCgroup: 2, Confined: 1, Total: 2}, "api.max_confined_conns"},
		{api.Limits{ReadTimeout: 1, PerCgroup: 1, Confined: 2, Total: 2}, "api.max_conns"},
	} {
		if err := tc.lim.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.lim, err, tc.want)
		}
	}
}

// TestRegisterCeilingFields: "ceiling_fields" merge with "ceiling" by the
// same rule as the annotations; a field given both ways with other values
// is 422 ceiling_conflict, a malformed one 400, and nothing is
// registered by either.
func TestRegisterCeilingFields(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/f")
	for _, tc := range []struct {
		body string
		code int
		err  string
	}{
		{`{"id":"f","cgroup":"/c/f","role":"test","ceiling":"network=false","ceiling_fields":{"network":"true"}}`, 422, "ceiling_conflict"},
		{`{"id":"f","cgroup":"/c/f","role":"test","ceiling_fields":{"write":"maybe"}}`, 400, "bad_request"},
		{`{"id":"f","cgroup":"/c/f","role":"test","ceiling_fields":{"Network":"false"}}`, 400, "bad_request"},
	} {
		code, eb := ts.raw(t, "POST", "/v1/containers", []byte(tc.body))
		if code != tc.code || eb.Code != tc.err {
			t.Errorf("%s: %d %+v, want %d %s", tc.body, code, eb, tc.code, tc.err)
		}
	}
	if enf.Len() != 0 {
		t.Fatal("a refused registration left a map entry")
	}
	no := "false"
	c, err := ts.client.Register(context.Background(), api.RegisterRequest{ID: "f", Cgroup: "/c/f", Role: "test",
		Ceiling: "network=deny", CeilingFields: &api.CeilingFields{Network: &no, Tools: &no}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kernel.Network || c.Ceiling.Tools {
		t.Fatalf("registered %+v: want network=false, tools=false", c)
	}
}
