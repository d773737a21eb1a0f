package api_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
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
