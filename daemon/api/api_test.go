package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/test/testroot"
)

type testServer struct {
	metrics *metrics.Metrics
	socket  string
	reg     *registry.Registry
	enf     registry.Enforcer
	cgs     registry.Cgroups
	hub     *audit.Hub
	state   string
	// callerGroup is the cgroup the server attributes every peer to.
	mu          sync.Mutex
	callerGroup string
	client      *api.Client
}

func (ts *testServer) setCaller(g string) {
	ts.mu.Lock()
	ts.callerGroup = g
	ts.mu.Unlock()
}

func start(t *testing.T, enf registry.Enforcer, cgs registry.Cgroups, opts ...func(*registry.Options)) *testServer {
	t.Helper()
	return startLimited(t, api.Limits{}, enf, cgs, opts...)
}

// startLimited is start with the API's connection and read limits.
func startLimited(t *testing.T, lim api.Limits, enf registry.Enforcer, cgs registry.Cgroups, opts ...func(*registry.Options)) *testServer {
	t.Helper()
	testroot.Require(t, "the API serves only uid 0 peers (SO_PEERCRED)")
	dir := t.TempDir()
	ts := &testServer{socket: filepath.Join(dir, "api.sock"), enf: enf, cgs: cgs, hub: audit.NewHub(),
		state: filepath.Join(dir, "state.json"), callerGroup: "/host"}
	o := registry.Options{Enforcer: enf, Cgroups: cgs, StatePath: ts.state}
	for _, f := range opts {
		f(&o)
	}
	ts.reg = registry.New(o)
	m := metrics.New(metrics.Sources{Registered: ts.reg.Len, LostRecords: func() (uint64, error) { return 0, nil },
		Hooks: func() []coverage.HookStatus { return nil }, Unenforced: ts.reg.Unenforced})
	ts.metrics = m
	srv := &api.Server{Reg: ts.reg, Hub: ts.hub, Metrics: m, MaxBody: 4096, Limits: lim, PeerGroup: func(int) (string, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.callerGroup, nil
	}}
	ln, err := api.Listen(ts.socket)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(ts.socket)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	hs := srv.NewHTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	ts.client = api.NewClient(ts.socket, 10*time.Second)
	return ts
}

func (ts *testServer) raw(t *testing.T, method, path string, body []byte) (int, api.ErrorBody) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", ts.socket)
	}}}
	req, _ := http.NewRequest(method, "http://x"+path, bytes.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	return resp.StatusCode, eb
}

func fakeServer(t *testing.T) (*testServer, *registrytest.Enforcer, *registrytest.Cgroups) {
	enf, cgs := registrytest.NewEnforcer(true), registrytest.NewCgroups()
	cgs.Add("/host")
	return start(t, enf, cgs), enf, cgs
}

func TestRegisterListSurfaceUnregister(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/one")
	ctx := context.Background()
	c, err := ts.client.Register(ctx, api.RegisterRequest{ID: "one", Cgroup: "/c/one", Role: "test", Ceiling: "network=false", Activate: api.ActivateExec})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kernel.Network || c.Kernel.Write || c.Fingerprint == "" {
		t.Fatalf("registered %+v", c)
	}
	list, err := ts.client.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "one" {
		t.Fatalf("list = %v, %v", list, err)
	}
	s, err := ts.client.Surface(ctx, "one")
	if err != nil || s.Fingerprint != c.Fingerprint || s.Kernel != c.Kernel {
		t.Fatalf("surface = %+v, %v (registered fingerprint %s)", s, err, c.Fingerprint)
	}
	if err := ts.client.Unregister(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if enf.Len() != 0 {
		t.Fatal("map entry left after unregister")
	}
	var ae *api.Error
	if err := ts.client.Unregister(ctx, "one"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("second unregister: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/x")
	big := []byte(`{"id":"x","cgroup":"/c/x","role":"` + strings.Repeat("a", 5000) + `"}`)
	cases := []struct {
		method, path string
		body         []byte
		status       int
	}{
		{"POST", "/v1/containers", big, 400},
		{"POST", "/v1/containers", nil, 400},
		{"POST", "/v1/containers", []byte(`{`), 400},
		{"POST", "/v1/containers", []byte(`[]`), 400},
		{"POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x"} {}`), 400},
		{"POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","extra":1}`), 400},
		{"POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","ceiling":"network=nah"}`), 400},
		{"POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","pid":"12"}`), 400},
		{"POST", "/v1/containers", []byte(`{"id":"","cgroup":"/c/x"}`), 400},
		{"POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","role":"advisor"}`), 422},
		{"GET", "/v1/containers/nope", nil, 404},
		{"DELETE", "/v1/containers/nope", nil, 404},
		{"GET", "/v1/containers/nope/surface", nil, 404},
		{"POST", "/v1/containers/nope/narrow", []byte(`{"ceiling":"write=false"}`), 404},
		{"GET", "/v1/denials?container=nope", nil, 404},
		{"GET", "/v2/anything", nil, 404},
		{"PUT", "/v1/containers", nil, 405},
		{"DELETE", "/v1/status", nil, 405},
		{"POST", "/v1/containers/x", nil, 405},
		{"PATCH", "/v1/containers/x/narrow", nil, 405},
	}
	for _, tc := range cases {
		status, eb := ts.raw(t, tc.method, tc.path, tc.body)
		if status != tc.status {
			t.Errorf("%s %s %.40q: status %d (%s), want %d", tc.method, tc.path, tc.body, status, eb.Error, tc.status)
		}
		if eb.Error == "" {
			t.Errorf("%s %s: no JSON error message", tc.method, tc.path)
		}
	}
	if enf.Len() != 0 || len(ts.reg.List()) != 0 {
		t.Fatal("a refused request left state behind")
	}
	if _, err := os.Stat(ts.state); err == nil {
		if cs, _ := state.Load(ts.state); len(cs) != 0 {
			t.Fatal("a refused request reached the state file")
		}
	}
}

// A "role" that is given must be a role name: unknown and empty names are
// 400 with the valid names listed, and nothing is registered. Only an
// absent key (or null) selects the default role.
func TestRegisterRefusesUnknownAndEmptyRole(t *testing.T) {
	ts, enf, cgs := fakeServer(t)
	cgs.Add("/c/x")
	for role, says := range map[string]string{
		`""`:        "empty role name",
		`"  "`:      "empty role name",
		`"hacker"`:  `unknown role "hacker"`,
		`"reviwer"`: `unknown role "reviwer"`,
	} {
		status, eb := ts.raw(t, "POST", "/v1/containers", []byte(`{"id":"x","cgroup":"/c/x","ceiling":"network=false","role":`+role+`}`))
		if status != http.StatusBadRequest || eb.Code != "bad_request" {
			t.Errorf("role %s: status %d code %q (%s), want 400", role, status, eb.Code, eb.Error)
		}
		for _, want := range []string{says, "valid names: roles advisor, custom, explore, general, implement, planner, reviewer, test;", "legacy aliases", "member titles"} {
			if !strings.Contains(eb.Error, want) {
				t.Errorf("role %s: error %q does not say %q", role, eb.Error, want)
			}
		}
	}
	if enf.Len() != 0 || len(ts.reg.List()) != 0 {
		t.Fatal("a refused role left state behind")
	}
	ctx := context.Background()
	for i, body := range []string{
		`{"id":"a0","cgroup":"/c/a0","ceiling":"network=false"}`,
		`{"id":"a1","cgroup":"/c/a1","ceiling":"network=false","role":null}`,
		`{"id":"a2","cgroup":"/c/a2","ceiling":"network=false","role":" Manager "}`,
		`{"id":"a3","cgroup":"/c/a3","ceiling":"network=false","role":"WORKER"}`,
	} {
		id := fmt.Sprintf("a%d", i)
		cgs.Add("/c/" + id)
		if status, eb := ts.raw(t, "POST", "/v1/containers", []byte(body)); status != http.StatusCreated {
			t.Fatalf("%s: status %d (%s), want 201", body, status, eb.Error)
		}
		s, err := ts.client.Surface(ctx, id)
		if err != nil || s.Role != "general" || s.Kernel.Network {
			t.Fatalf("%s: surface %+v, %v", body, s, err)
		}
	}
}

func TestConfinedCallerMayOnlyReadAndNarrowItself(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	cgs.Add("/c/me/worker")
	cgs.Add("/c/other")
	cgs.Add("/c/new")
	ctx := context.Background()
	for _, id := range []string{"me", "other"} {
		if _, err := ts.client.Register(ctx, api.RegisterRequest{ID: id, Cgroup: "/c/" + id, Ceiling: "network=false"}); err != nil {
			t.Fatal(err)
		}
	}
	ts.setCaller("/c/me/worker")
	if _, err := ts.client.Surface(ctx, "me"); err != nil {
		t.Fatalf("own surface: %v", err)
	}
	if c, err := ts.client.Narrow(ctx, "me", "write=false"); err != nil || c.Kernel.Write {
		t.Fatalf("narrow self: %+v %v", c, err)
	}
	forbidden := []func() error{
		func() error { _, err := ts.client.Surface(ctx, "other"); return err },
		func() error { _, err := ts.client.Narrow(ctx, "other", "write=false"); return err },
		func() error { return ts.client.Unregister(ctx, "me") },
		func() error { return ts.client.Unregister(ctx, "other") },
		func() error { _, err := ts.client.List(ctx); return err },
		func() error { _, err := ts.client.Get(ctx, "me"); return err },
		func() error {
			_, err := ts.client.Register(ctx, api.RegisterRequest{ID: "new", Cgroup: "/c/new", Ceiling: "network=true"})
			return err
		},
		func() error { return ts.client.Follow(ctx, "", func(audit.Record) error { return nil }) },
	}
	for i, f := range forbidden {
		var ae *api.Error
		if err := f(); !errors.As(err, &ae) || ae.Status != 403 {
			t.Errorf("call %d by a confined caller: %v, want 403", i, err)
		}
	}
	// Narrowing cannot widen: asking for network=true keeps network=false.
	c, err := ts.client.Narrow(ctx, "me", "network=true,write=true")
	if err != nil || c.Kernel.Network || c.Kernel.Write {
		t.Fatalf("narrow with wider text: %+v %v", c, err)
	}
	ts.setCaller("/c/vanished") // unknown cgroup: fail closed
	if _, err := ts.client.Surface(ctx, "me"); err == nil {
		t.Fatal("caller in an unresolvable cgroup was served")
	}
}

func TestFollowStreamsDenials(t *testing.T) {
	ts, _, cgs := fakeServer(t)
	cgs.Add("/c/a")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ts.client.Register(ctx, api.RegisterRequest{ID: "a", Cgroup: "/c/a", Ceiling: "network=false"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan audit.Record, 4)
	go ts.client.Follow(ctx, "a", func(r audit.Record) error { got <- r; return nil })
	deadline := time.Now().Add(5 * time.Second)
	for {
		ts.hub.Publish(audit.Record{Container: "other", Hook: "x"})
		ts.hub.Publish(audit.Record{Container: "a", Hook: "socket_create", Decision: "denied"})
		select {
		case r := <-got:
			if r.Container != "a" || r.Hook != "socket_create" {
				t.Fatalf("followed %+v", r)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no record followed")
		}
	}
}

// TestPartialCoverageAPI: on a host without BPF LSM (fake) a network=false
// registration is 422 with code partial_coverage unless the daemon allows
// partial coverage; then the response and the list say what is not
// enforced, and the enforcerd_unenforced_containers metric counts it.
func TestPartialCoverageAPI(t *testing.T) {
	body := []byte(`{"id":"p","cgroup":"/c/p","ceiling":"network=false"}`)
	enf, cgs := registrytest.NewEnforcer(false), registrytest.NewCgroups()
	cgs.Add("/host")
	cgs.Add("/c/p")
	ts := start(t, enf, cgs)
	status, eb := ts.raw(t, "POST", "/v1/containers", body)
	if status != http.StatusUnprocessableEntity || eb.Code != metrics.ResultPartialCoverage || !strings.Contains(eb.Error, "network-non-inet") {
		t.Fatalf("allow_partial=false: %d %+v, want 422 %s naming the gap", status, eb, metrics.ResultPartialCoverage)
	}
	if enf.Len() != 0 {
		t.Fatal("refused registration left a map entry")
	}
	enf, cgs = registrytest.NewEnforcer(false), registrytest.NewCgroups()
	cgs.Add("/host")
	cgs.Add("/c/p")
	ts = start(t, enf, cgs, func(o *registry.Options) { o.AllowPartial = true })
	c, err := ts.client.Register(context.Background(), api.RegisterRequest{ID: "p", Cgroup: "/c/p", Ceiling: "network=false"})
	if err != nil || len(c.Unenforced) != 2 || c.Unenforced[0].Code != coverage.GapNetworkNonInet {
		t.Fatalf("allow_partial=true: %+v, %v", c, err)
	}
	list, err := ts.client.List(context.Background())
	if err != nil || len(list) != 1 || len(list[0].Unenforced) != 2 {
		t.Fatalf("list %+v, %v: want the gaps", list, err)
	}
	rec := httptest.NewRecorder()
	ts.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `enforcerd_unenforced_containers{gap="network-non-inet"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %q", want)
	}
}
