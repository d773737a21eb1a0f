package daemon

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// freeAddr is a TCP address on loopback nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestClaimThenStopLeavesNothing: claim (the first step of Run, before
// any kernel state) holds the state lock, the metrics address, the API
// socket and the audit log when it succeeds; when a later claim fails,
// stop releases the earlier ones: the state lock is free, the socket file
// is gone, the metrics address can be bound again. Natively: no kernel
// state is involved.
func TestClaimThenStopLeavesNothing(t *testing.T) {
	cases := []struct {
		name string
		// setup breaks one claim (or none) and returns a port to hold.
		setup   func(t *testing.T, cfg *Config) net.Listener
		wantErr bool
	}{
		{"all claimed", func(*testing.T, *Config) net.Listener { return nil }, false},
		{"metrics address in use", func(t *testing.T, cfg *Config) net.Listener {
			l, err := net.Listen("tcp", cfg.Metrics.Listen)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, true},
		{"audit log unusable", func(t *testing.T, cfg *Config) net.Listener {
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg.Audit.Path = filepath.Join(file, "audit.log") // below a regular file
			return nil
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := DefaultConfig()
			cfg.Socket = filepath.Join(dir, "api.sock")
			cfg.State = filepath.Join(dir, "state", "state.json")
			cfg.Audit.Path = filepath.Join(dir, "audit", "audit.log")
			cfg.Metrics.Listen = freeAddr(t)
			if held := tc.setup(t, &cfg); held != nil {
				defer held.Close()
			}
			n := newNode(cfg, Options{})
			err := n.claim()
			if (err != nil) != tc.wantErr {
				n.stop()
				t.Fatalf("claim: %v, want error %v", err, tc.wantErr)
			}
			if err == nil {
				if _, err := lock(cfg.State + ".lock"); !errors.Is(err, ErrLocked) {
					t.Errorf("state lock while claimed: %v, want ErrLocked", err)
				}
				if _, err := os.Stat(cfg.Socket); err != nil {
					t.Errorf("socket while claimed: %v", err)
				}
			}
			n.stop()
			unlock, err := lock(cfg.State + ".lock")
			if err != nil {
				t.Fatalf("state lock after stop: %v", err)
			}
			unlock()
			if _, err := os.Stat(cfg.Socket); !os.IsNotExist(err) {
				t.Errorf("socket file after stop: %v, want gone", err)
			}
			if tc.name != "metrics address in use" {
				l, err := net.Listen("tcp", cfg.Metrics.Listen)
				if err != nil {
					t.Fatalf("metrics address after stop: %v", err)
				}
				l.Close()
			}
		})
	}
}
