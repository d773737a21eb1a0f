package daemon

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// get fetches url: its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantReadyz checks /readyz: status and the parts its body names.
func wantReadyz(t *testing.T, base string, status int, parts ...string) {
	t.Helper()
	code, body := get(t, base+"/readyz")
	if code != status {
		t.Errorf("/readyz: %d %q, want %d", code, body, status)
	}
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("/readyz: %q does not name %q", body, p)
		}
	}
}

// TestReadyOnlyAfterReconcile walks Run's steps natively (the enforcer
// step, which needs BPF, is stood in for by marking its part ready, and
// the registry has the fake enforcer): the metrics listener answers
// /healthz from claim on; /readyz is 503 naming pins, state and api
// after claim, state "reconcile running" while Reconcile runs (its state
// save is held), api once reconciled, and 200 "ready" only when the API
// is served; GET /v1/ready on the API socket says the same; after drain
// starts, api is "stopping" again.
func TestReadyOnlyAfterReconcile(t *testing.T) {
	testroot.Require(t, "the API serves only uid 0 peers")
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Socket = filepath.Join(dir, "api.sock")
	cfg.State = filepath.Join(dir, "state", "state.json")
	cfg.Audit.Path = ""
	cfg.Metrics.Listen = freeAddr(t)
	n := newNode(cfg, Options{})
	defer n.stop()
	if err := n.claim(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + cfg.Metrics.Listen
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz after claim: %d %q, want 200 ok", code, body)
	}
	if code, _ := get(t, base+"/metrics"); code != http.StatusServiceUnavailable {
		t.Errorf("/metrics before observe: %d, want 503", code)
	}
	wantReadyz(t, base, http.StatusServiceUnavailable, "pins: not adopted yet", "state: not reconciled yet", "api: not serving yet")

	n.ready.done(partPins) // as openEnforcer does once the host policy is set
	saving, release := make(chan struct{}), make(chan struct{})
	n.reg = registry.New(registry.Options{
		Enforcer: registrytest.NewEnforcer(true), Cgroups: registrytest.NewCgroups(), StatePath: cfg.State,
		Save: func(path string, cs []state.Container) error {
			close(saving)
			<-release
			return state.Save(path, cs)
		},
	})
	done := make(chan error, 1)
	go func() { done <- n.reconcileState() }()
	select {
	case <-saving:
	case <-time.After(10 * time.Second):
		t.Fatal("Reconcile never saved the state")
	}
	wantReadyz(t, base, http.StatusServiceUnavailable, "state: reconcile running", "api: not serving yet")
	if _, body := get(t, base+"/readyz"); strings.Contains(body, "pins") {
		t.Errorf("/readyz names pins after they were adopted: %q", body)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantReadyz(t, base, http.StatusServiceUnavailable, "api: not serving yet")

	n.hub = audit.NewHub()
	n.startServers()
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz when serving: %d %q, want 200 ready", code, body)
	}
	c := api.NewClient(cfg.Socket, 5*time.Second)
	r, err := c.Ready(context.Background())
	if err != nil || !r.Ready || len(r.Missing) != 0 {
		t.Errorf("GET /v1/ready when serving: %+v, %v", r, err)
	}
	n.ready.set(partAPI, "stopping") // as drain does before its shutdown
	r, err = c.Ready(context.Background())
	if err != nil || r.Ready || strings.Join(r.Missing, ",") != "api: stopping" {
		t.Errorf("GET /v1/ready when stopping: %+v, %v; want not ready, api: stopping", r, err)
	}
	wantReadyz(t, base, http.StatusServiceUnavailable, "api: stopping")
}
