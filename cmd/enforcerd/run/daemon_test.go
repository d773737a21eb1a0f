package run

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// registerDaemon is a fake daemon reading testPinDir: it answers the
// status, records each registration request and DELETE, and answers a
// registration with refuse (nil: accepted). It installs nothing.
type registerDaemon struct {
	sock    string
	mu      sync.Mutex
	reqs    []api.RegisterRequest
	deleted []string
}

func newRegisterDaemon(t *testing.T, refuse *api.ErrorBody) *registerDaemon {
	t.Helper()
	d := &registerDaemon{sock: filepath.Join(t.TempDir(), "d.sock")}
	l, err := net.Listen("unix", d.sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"pin_dir": testPinDir})
	})
	mux.HandleFunc("POST /v1/containers", func(w http.ResponseWriter, r *http.Request) {
		var req api.RegisterRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		d.mu.Lock()
		d.reqs = append(d.reqs, req)
		d.mu.Unlock()
		if refuse != nil {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(refuse)
			return
		}
		// The answer carries the kernel ceiling as the daemon's does
		// (run refuses one wider than it asked for).
		c, err := policy.ParseCeiling(req.Ceiling, policy.DefaultSession())
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(api.Container{ID: req.ID, Cgroup: req.Cgroup, Ceiling: c, Kernel: c.Kernel(), ExecAllow: req.ExecAllow})
	})
	mux.HandleFunc("DELETE /v1/containers/{id}", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.deleted = append(d.deleted, r.PathValue("id"))
		d.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return d
}

// TestRunRegistersThroughTheDaemon: with a daemon reading the same pins
// on --socket, run asks it to register the cgroup (activate=exec, the
// exec gate, CMD's pid, as init_pid, the ceiling as text) and removes the
// container after; when the daemon refuses, CMD never runs (its file is
// not created), run exits 125 and the message names the daemon's error
// code. The accepted run creates the file (control).
func TestRunRegistersThroughTheDaemon(t *testing.T) {
	vmtest.RequireRoot(t)
	if full, _ := networkCoverage(t); !full {
		// Without BPF LSM CMD restricts itself (the process layer) and
		// run registers directly (Sandbox.SetRegistrar).
		vmtest.Skip(t, "network=false is enforced in full only with BPF LSM")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "ran")
	argv := []string{"/bin/sh", "-c", `echo $$ > "$0"`, file}

	// (a) Accepted: CMD runs; the request names it as the init.
	ok := newRegisterDaemon(t, nil)
	r := clitest.Run(t, nil, append([]string{"run", "-q", "--pin-dir", testPinDir, "--socket", ok.sock, "--network=deny", "--"}, argv...)...)
	b, err := os.ReadFile(file)
	if r.Code != 0 || err != nil {
		t.Fatalf("accepted: exit %d, file %v\nstderr: %s", r.Code, err, r.Stderr)
	}
	if len(ok.reqs) != 1 {
		t.Fatalf("accepted: %d registration requests, want 1", len(ok.reqs))
	}
	req := ok.reqs[0]
	if req.Activate != api.ActivateExec || req.InitPID <= 0 || strings.TrimSpace(string(b)) != strconv.Itoa(req.InitPID) ||
		req.Ceiling != "network=false,write=true,shell=full" || !strings.HasPrefix(req.ID, "enforcerd-run-") || req.Entrypoint == nil {
		t.Errorf("accepted: request %+v; CMD's pid %s", req, b)
	}
	if len(ok.deleted) != 1 || ok.deleted[0] != req.ID {
		t.Errorf("accepted: DELETEs %v, want [%s]", ok.deleted, req.ID)
	}

	// (b) Refused: CMD never runs.
	os.Remove(file)
	no := newRegisterDaemon(t, &api.ErrorBody{Error: "refused by the test", Code: "conflict"})
	r = clitest.Run(t, nil, append([]string{"run", "-q", "--pin-dir", testPinDir, "--socket", no.sock, "--network=deny", "--"}, argv...)...)
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused: CMD ran (stat: %v)\nstderr: %s", err, r.Stderr)
	}
	if r.Code != cli.ExitCannotEnforce || !strings.Contains(r.Stderr, "error code conflict") || !strings.Contains(r.Stderr, "refused by the test") {
		t.Fatalf("refused: exit %d (want %d), stderr %q: want the daemon's error code", r.Code, cli.ExitCannotEnforce, r.Stderr)
	}
	if len(no.reqs) != 1 || len(no.deleted) != 0 {
		t.Errorf("refused: %d requests, DELETEs %v; want 1 and none", len(no.reqs), no.deleted)
	}
}
