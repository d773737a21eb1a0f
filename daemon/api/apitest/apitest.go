// Package apitest runs the daemon's API (api.Server) on a unix socket in a
// test's temporary directory, over the registry's fakes (registrytest):
// no BPF, no cgroups, no root beyond what the API's peer check wants (the
// peer must have uid 0, so Start skips the test without root).
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package apitest

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// Server is a running API server.
type Server struct {
	// Socket is the path of the API socket.
	Socket string
	Reg    *registry.Registry
	Enf    *registrytest.Enforcer
	Cgs    *registrytest.Cgroups
	// Hub is the denial stream: Publish on it to feed followers and the
	// recent records.
	Hub *audit.Hub

	hs *http.Server

	mu    sync.Mutex
	ready *api.Readiness // nil: ready
}

// SetReady makes GET /v1/ready answer r.
func (s *Server) SetReady(r api.Readiness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = &r
}

// readiness is GET /v1/ready's answer: SetReady's, or ready.
func (s *Server) readiness() api.Readiness {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready != nil {
		return *s.ready
	}
	return api.Readiness{Ready: true, Missing: []string{}}
}

// Close stops the server and closes its connections (a daemon that went
// away); the test's end does it too.
func (s *Server) Close() { s.hs.Close() }

// Start serves the API over a fresh registry of fakes until the test ends.
// The fake enforcer enforces every field (registrytest.NewEnforcer(true));
// the cgroup "/host" exists, and every peer is attributed to it (an
// unregistered group). opts adjust the registry's options (its
// Enforcer, Cgroups and StatePath are set before). status, when not nil,
// is the body of GET /v1/status.
func Start(t testing.TB, status func() api.Status, opts ...func(*registry.Options)) *Server {
	t.Helper()
	testroot.Require(t, "the daemon's API serves only uid 0 peers (SO_PEERCRED)")
	dir := t.TempDir()
	s := &Server{Socket: filepath.Join(dir, "api.sock"), Enf: registrytest.NewEnforcer(true),
		Cgs: registrytest.NewCgroups(), Hub: audit.NewHub()}
	s.Cgs.Add("/host")
	o := registry.Options{Enforcer: s.Enf, Cgroups: s.Cgs, StatePath: filepath.Join(dir, "state.json")}
	for _, f := range opts {
		f(&o)
	}
	s.Reg = registry.New(o)
	srv := &api.Server{Reg: s.Reg, Hub: s.Hub, Status: status, Ready: s.readiness, PeerGroup: func(int) (string, error) {
		return "/host", nil
	}}
	ln, err := api.Listen(s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	s.hs = srv.NewHTTPServer()
	go s.hs.Serve(ln)
	t.Cleanup(s.Close)
	return s
}
