// Package daemon wires `enforcerd daemon`: the enforcer (pinned programs and
// maps), the registry of containers with its state file, the API socket,
// the denial pump (audit log, journal, metrics, followers) and sd_notify.
//
// Start order closes every window: every check that can refuse the start
// (the state lock, the metrics address, the API socket in use by another
// daemon, the audit log, the pin-dir lock) comes before anything changes
// kernel state, so a refused start leaves no pins or programs behind. The
// pinned programs keep enforcing while no daemon runs; Open re-adopts
// them, Reconcile re-reads the state without touching live entries, and
// only then is the socket served and READY=1 sent.
// Stop (SIGTERM) and crash (SIGKILL) both leave the pins, so enforcement of
// every registered container continues.
//
// Layering (docs/design.md): layer 4; it may import internal/buildinfo/,
// egress/, cgroup/, entry/, coverage/, denial/, enforcer/, proxy/,
// daemon/state/, daemon/audit/, daemon/metrics/, daemon/registry/,
// daemon/api/ and daemon/nri/, and of other modules no cilium/ebpf.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/coverage"
)

// ErrLocked: another daemon holds the state lock.
var ErrLocked = errors.New("another enforcerd daemon is running")

// Options are the runtime hooks of Run.
type Options struct {
	Log *slog.Logger
	// Notify sends an sd_notify state ("READY=1", "STOPPING=1"); may be nil.
	Notify func(state string)
	// VerifierLog receives the verifier log of a program the kernel
	// rejects (enforcer.Options.VerifierLog); may be nil.
	VerifierLog io.Writer
	// Listener serves the API instead of a socket Run creates at
	// cfg.Socket: the socket systemd passed (socket activation), which
	// stays when the daemon stops, so that hooks queue on it through a
	// restart. Nil: Run creates cfg.Socket and removes it when it stops.
	Listener net.Listener
	// Reload: a receive reopens the audit log (after an external rotation;
	// the command sends one per SIGHUP). Nil: never.
	Reload <-chan struct{}
	// Watchdog: when positive, Notify("WATCHDOG=1") is sent at this
	// interval from the daemon's main loop (systemd's WatchdogSec=; the
	// command passes half of WATCHDOG_USEC), so a wedged loop is
	// restarted. A "STATUS=..." line is sent with it and at start.
	Watchdog time.Duration
}

// Run serves until ctx is done. It returns an error when the daemon could
// not start or a server failed. Its steps (lifecycle.go): open (the
// checks that can refuse the start, then the enforcer), reconcile (the
// registry and its state), serve (the denial pump, the API, metrics,
// proxy and NRI servers), the main loop; whichever returns, stop closes
// what was opened, last first, and leaves the pins.
func Run(ctx context.Context, cfg Config, o Options) error {
	n := newNode(cfg, o)
	defer n.stop()
	if err := n.open(); err != nil {
		return err
	}
	if err := n.reconcile(); err != nil {
		return err
	}
	if err := n.serve(ctx); err != nil {
		return err
	}
	return n.loop(ctx)
}

// lock takes an exclusive flock next to the state file so two daemons never
// share one state.
func lock(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
	}
	return func() { f.Close() }, nil
}

// coverageSummary is "network=full write=none shell=none" for the log.
func coverageSummary(r []coverage.Field) string {
	parts := make([]string, len(r))
	for i, f := range r {
		parts[i] = f.Field + "=" + f.State
	}
	return strings.Join(parts, " ")
}
