package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/registry/registrytest"
)

// TestClientWaitsForRestartingDaemon: with WaitForDaemon a request made
// while the socket is missing is sent once the daemon listens (within the
// deadline); without it, it fails at once; past the deadline it fails
// with ErrUnreachable.
func TestClientWaitsForRestartingDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	served := make(chan struct{}, 10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		served <- struct{}{}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"version":"test","pid":1}`))
	})

	c := api.NewClient(sock, 5*time.Second)
	if _, err := c.Status(context.Background()); !errors.Is(err, api.ErrUnreachable) {
		t.Fatalf("no daemon, not waiting: %v, want ErrUnreachable at once", err)
	}

	w := api.NewClient(sock, 5*time.Second)
	w.WaitForDaemon = true
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := w.Status(ctx)
	cancel()
	if !errors.Is(err, api.ErrUnreachable) {
		t.Fatalf("no daemon until the deadline: %v, want ErrUnreachable", err)
	}

	go func() {
		time.Sleep(400 * time.Millisecond)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Error(err)
			return
		}
		http.Serve(ln, mux)
	}()
	start := time.Now()
	st, err := w.Status(context.Background())
	if err != nil || st.Version != "test" {
		t.Fatalf("daemon up after 400ms: %+v, %v; want the status", st, err)
	}
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Errorf("answered after %v, before the daemon listened", d)
	}
	if len(served) != 1 {
		t.Errorf("request served %d times, want once", len(served))
	}
}

// TestMethodNotAllowed: a method an endpoint does not serve is 405 with
// the Allow header listing those it does, and the API's JSON error body
// (code method_not_allowed); an unknown path stays 404.
func TestMethodNotAllowed(t *testing.T) {
	enf, cgs := registrytest.NewEnforcer(false), registrytest.NewCgroups()
	cgs.Add("/host")
	ts := start(t, enf, cgs)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", ts.socket)
	}}}
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/v1/containers", "GET, HEAD, POST"},
		{"POST", "/v1/containers/x", "GET, HEAD, DELETE"},
		{"GET", "/v1/containers/x/narrow", "POST"},
		{"POST", "/v1/nothing", ""},
	} {
		req, _ := http.NewRequest(tc.method, "http://enforcerd"+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb struct{ Error, Code string }
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		want, code := http.StatusMethodNotAllowed, "method_not_allowed"
		if tc.allow == "" {
			want, code = http.StatusNotFound, "not_found"
		}
		if resp.StatusCode != want || resp.Header.Get("Allow") != tc.allow || eb.Code != code || eb.Error == "" {
			t.Errorf("%s %s: %d Allow %q %+v; want %d Allow %q code %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), eb, want, tc.allow, code)
		}
	}
}
