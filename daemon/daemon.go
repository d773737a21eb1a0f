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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/nri"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/buildinfo"
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
// not start or a server failed.
func Run(ctx context.Context, cfg Config, o Options) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	notify := o.Notify
	if notify == nil {
		notify = func(string) {}
	}
	unlock, err := lock(cfg.State + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	// The metrics address is bound before anything changes (pins, host
	// policy, state): a busy or unusable address fails the start cleanly.
	var ml net.Listener
	if cfg.Metrics.Listen != "" {
		if ml, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			return fmt.Errorf("metrics %s: %w", cfg.Metrics.Listen, err)
		}
		defer ml.Close()
	}
	// So are the API socket (one served by another daemon refuses the
	// start here, before this one touches pins or programs; connections
	// queue on it until Reconcile is done and it is served) and the audit
	// log.
	ln := o.Listener
	if ln == nil {
		if ln, err = api.Listen(cfg.Socket); err != nil {
			return err
		}
		defer ln.Close()
		defer os.Remove(cfg.Socket)
	}
	var alog *audit.Log
	if cfg.Audit.Path != "" {
		if alog, err = audit.Open(cfg.Audit.Path, int64(cfg.Audit.MaxSizeMB)<<20, cfg.Audit.MaxBackups); err != nil {
			return err
		}
		defer alog.Close()
	}

	mount := cfg.CgroupMount
	if mount == "" {
		if mount, err = cgroup.Mountpoint(); err != nil {
			return err
		}
	}
	// One daemon per pin directory, whatever its state file: the lock is
	// taken before anything in the pins changes.
	unlockPins, err := enforcer.LockPinDir(cfg.PinDir)
	if err != nil {
		return err
	}
	defer unlockPins()
	enf, err := enforcer.Open(enforcer.Options{PinDir: cfg.PinDir, CgroupMount: mount, VerifierLog: o.VerifierLog})
	if err != nil {
		return err
	}
	defer enf.Close() // pins stay: the kernel keeps enforcing
	// The operator's allow_partial caps every user of these pins
	// (`enforcerd run --allow-partial` included), whatever socket it uses.
	if err := enf.SetHostPolicy(enforcer.HostPolicy{AllowPartial: cfg.AllowPartial, DaemonPID: os.Getpid()}); err != nil {
		return err
	}
	defer func() { _ = enf.ClearDaemonPID(os.Getpid()) }()
	for _, l := range []enforcer.Layer{enforcer.LayerLSM, enforcer.LayerCgroup, enforcer.LayerLifecycle} {
		if err := enf.LayerError(l); err != nil {
			log.Warn("layer not in force: ceilings needing it will be refused", "layer", l, "err", err)
		}
	}
	self, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		return err
	}
	// Activation and freeze decisions go to the audit log, the followers
	// and metrics once those exist; events during Reconcile (what a crash
	// left: EventReconciled, clamps) are kept and written then.
	var onEvent func(registry.Event)
	var early []registry.Event
	reg := registry.New(registry.Options{
		Enforcer: enf, Cgroups: registry.SystemCgroups{Mount: mount},
		StatePath: cfg.State, SelfGroup: self, Log: log,
		PendingDeadline:   cfg.Pending.Deadline,
		AllowPartial:      cfg.AllowPartial,
		DenyConsoleEgress: cfg.DenyConsoleEgress,
		OnEvent: func(ev registry.Event) {
			if onEvent != nil {
				onEvent(ev)
			} else {
				early = append(early, ev)
			}
		},
	})
	rep, err := reg.Reconcile()
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	log.Info("reconciled", "kept", len(rep.Kept), "reinstalled", rep.Reinstalled, "dropped", rep.Dropped,
		"failed", rep.Failed, "orphan_map_entries_removed", rep.Orphans, "narrowed", rep.Narrowed,
		"met", rep.Met, "adopted", rep.Adopted, "abandoned", rep.Abandoned, "temp_files_removed", rep.TempFiles)

	hub := audit.NewHub()
	m := metrics.New(metrics.Sources{
		Registered: reg.Len, LostRecords: enf.LostRecords, Unattributed: enf.UnattributedDenials, Hooks: enf.Hooks, Dropped: hub.Dropped,
		Unenforced: reg.Unenforced,
	})
	onEvent = func(ev registry.Event) {
		switch ev.Kind {
		case nri.EventRegisteredLate:
			log.Warn("registered late", "container", ev.Container, "cgroup", ev.Cgroup, "reason", ev.Reason)
		case registry.EventReconciled:
			// The registry logged it with the fields that differed.
		case registry.EventRegistered, registry.EventNarrowed:
			if len(ev.Unenforced) > 0 {
				log.Warn("registered with gaps in coverage (allow_partial or audit-only)", "container", ev.Container, "cgroup", ev.Cgroup, "event", ev.Kind, "not_enforced", ev.Unenforced)
			}
		default:
			m.Pending.WithLabelValues(ev.Kind).Inc()
			log.Info("activation", "container", ev.Container, "cgroup", ev.Cgroup, "outcome", ev.Kind, "reason", ev.Reason)
		}
		rec := audit.Event(ev.Time, ev.Container, ev.CgroupID, ev.Cgroup, ev.Kind, ev.Reason, ev.Fingerprint)
		rec.Unenforced = ev.Unenforced
		if alog != nil {
			if err := alog.Write(rec); err != nil {
				m.AuditErrors.Inc()
				log.Error("audit log", "err", err)
			}
		}
		hub.Publish(rec)
	}
	for _, ev := range early {
		onEvent(ev)
	}
	early = nil
	// Denials go to the journal as structured entries when journald runs
	// and the configuration does not switch it off.
	var jr *denialJournal
	if cfg.Journal.Denials && journal.Enabled() {
		jr = newDenialJournal(cfg.Journal, journal.Send)
	}
	rd, err := enf.NewReader()
	if err != nil {
		return err
	}
	tally, err := enf.Tally()
	if err != nil {
		log.Warn("denial counts unavailable: every record counts as one denial", "err", err)
		tally = nil
	}
	p := &auditPump{rd: rd, tally: tally, reg: reg, alog: alog, hub: hub, m: m, log: log, jr: jr}
	defer p.start()()

	version := buildinfo.Get().Version
	srv := &api.Server{Reg: reg, Hub: hub, Metrics: m, Log: log, Limits: cfg.API.Limits(), Status: func() api.Status {
		lost, _ := enf.LostRecords()
		return api.Status{
			Version: version, PID: os.Getpid(), Containers: reg.Len(),
			Coverage: enf.Report(), ActivateAtExec: enf.CanActivateAtExec(),
			AllowPartial: cfg.AllowPartial, PinDir: cfg.PinDir,
			LostRecords: lost, Hooks: api.HooksFrom(enf.Hooks()),
		}
	}}
	hs := srv.NewHTTPServer()
	errc := make(chan error, 3)
	go func() { errc <- fmt.Errorf("api %s: %w", cfg.Socket, hs.Serve(ln)) }()
	defer hs.Close()

	if ml != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- fmt.Errorf("metrics %s: %w", cfg.Metrics.Listen, ms.Serve(ml)) }()
		defer ms.Close()
	}

	pctx, stopProxy := context.WithCancel(ctx)
	defer stopProxy()
	if err := startProxy(pctx, cfg.Proxy, reg, mount, log, errc); err != nil {
		return err
	}

	if err := startNRI(pctx, cfg, reg, registry.SystemCgroups{Mount: mount}, m, log, onEvent); err != nil {
		return err
	}

	var tick <-chan time.Time
	if cfg.SweepInterval > 0 {
		t := time.NewTicker(cfg.SweepInterval)
		defer t.Stop()
		tick = t.C
	}
	pendingTick := time.NewTicker(cfg.Pending.CheckInterval)
	defer pendingTick.Stop()
	var watchdog <-chan time.Time
	if o.Watchdog > 0 {
		t := time.NewTicker(o.Watchdog)
		defer t.Stop()
		watchdog = t.C
	}
	status := func() {
		lost, _ := enf.LostRecords()
		notify(fmt.Sprintf("STATUS=serving %s: %d containers registered, %d denial records lost", cfg.Socket, reg.Len(), lost))
	}
	log.Info("serving", "socket", cfg.Socket, "metrics", cfg.Metrics.Listen, "state", cfg.State,
		"pin_dir", cfg.PinDir, "containers", reg.Len(), "coverage", coverageSummary(enf.Report()))
	notify("READY=1")
	status()
	for {
		select {
		case <-ctx.Done():
			notify("STOPPING=1")
			log.Info("stopping; pinned programs keep enforcing every registered container")
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = hs.Shutdown(sctx)
			cancel()
			return nil
		case err := <-errc:
			return err
		case <-watchdog:
			notify("WATCHDOG=1")
			status()
		case <-o.Reload:
			if alog == nil {
				log.Info("reload: no audit log to reopen")
				continue
			}
			if err := alog.Reopen(); err != nil {
				// Records fail (counted in enforcerd_audit_write_errors_total
				// and logged) until a later reload succeeds; enforcement is
				// not affected.
				log.Error("reload: audit log reopen failed", "err", err)
				continue
			}
			log.Info("reload: audit log reopened", "path", cfg.Audit.Path)
		case <-pendingTick.C:
			if _, err := reg.CheckPending(); err != nil {
				log.Error("pending check", "err", err)
			}
		case <-tick:
			rep, err := reg.Sweep()
			if err != nil {
				log.Error("sweep", "err", err)
			}
			for _, id := range rep.Dropped {
				m.Forget(id)
				log.Info("dropped container whose cgroup is gone", "container", id)
			}
		}
	}
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
func coverageSummary(r []enforcer.FieldCoverage) string {
	parts := make([]string, len(r))
	for i, f := range r {
		parts[i] = f.Field + "=" + f.State
	}
	return strings.Join(parts, " ")
}
