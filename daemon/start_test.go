package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesServedSocketFirst: a second daemon with its own state and
// pin dir but the socket another daemon serves is refused before it
// touches the pin dir (no bpffs mount, no lock, no programs attached, no
// reconcile): the socket check comes before every change to kernel state.
// Natively (no BPF LSM, no root) the old order failed later, at the pin
// dir or enforcer.Open, with another error.
func TestRunRefusesServedSocketFirst(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	other, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cfg := DefaultConfig()
	cfg.Socket = sock
	cfg.State = filepath.Join(dir, "state", "state.json")
	cfg.PinDir = filepath.Join(dir, "pins")
	cfg.CgroupMount = filepath.Join(dir, "no-cgroup")
	cfg.Audit.Path = filepath.Join(dir, "audit", "audit.log")
	cfg.Metrics.Listen = ""
	err = Run(context.Background(), cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "another daemon is serving it") {
		t.Fatalf("Run: %v, want the socket refused as served by another daemon", err)
	}
	for _, p := range []string{cfg.PinDir, cfg.Audit.Path} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after the refused start (%v)", p, err)
		}
	}
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("the other daemon's socket is gone: %v", err)
	}
}
