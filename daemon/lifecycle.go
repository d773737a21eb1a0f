package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/nri"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/buildinfo"
)

// node is one run of the daemon (Run): what its steps opened, and how to
// close it again. Its steps, in order: open (claim, then openEnforcer),
// reconcile, serve, loop; stop closes what the steps that ran opened, in
// reverse order, whichever step failed, so a refused start leaves nothing
// half-applied: no lock held, no socket file of its own, no daemon pid in
// the host policy.
type node struct {
	cfg    Config
	o      Options
	log    *slog.Logger
	notify func(state string)
	// onStop is what stop runs, last first.
	onStop []func()

	ml   net.Listener // metrics (nil: none)
	ln   net.Listener // the API socket
	alog *audit.Log   // nil: no audit log
	// linuxAudit: audit.linux_audit's sender (nil: off).
	linuxAudit *linuxAuditSender
	mount      string // the cgroup2 mount
	enf        *enforcer.Enforcer
	reg        *registry.Registry
	// early keeps the registry's events until observe wires record
	// (onEvent): those of Reconcile, what a crash left.
	early   []registry.Event
	onEvent func(registry.Event)
	hub     *audit.Hub
	m       *metrics.Metrics
	hs      *http.Server
	errc    chan error // a server failed
	// ready is what the steps have made ready (/readyz, GET /v1/ready).
	ready *readiness
	// metricsHandler serves /metrics once observe has made the metrics.
	metricsHandler atomic.Pointer[http.Handler]
}

// newNode is a node with Options' defaults: a discarding logger, a Notify
// that does nothing.
func newNode(cfg Config, o Options) *node {
	n := &node{cfg: cfg, o: o, log: o.Log, notify: o.Notify, errc: make(chan error, 3), ready: newReadiness()}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	if n.notify == nil {
		n.notify = func(string) {}
	}
	return n
}

// atStop adds f to what stop runs (before what was added earlier).
func (n *node) atStop(f func()) { n.onStop = append(n.onStop, f) }

// stop closes what the steps opened, last first: servers, the denial
// pump, the daemon pid in the host policy, the enforcer (the pins stay:
// the kernel keeps enforcing every registered container), the pin-dir
// lock, the audit log, the API socket it created, the metrics address,
// the state lock.
func (n *node) stop() {
	for i := len(n.onStop) - 1; i >= 0; i-- {
		n.onStop[i]()
	}
	n.onStop = nil
}

// open takes what can refuse the start (claim) and then the kernel side
// (openEnforcer).
func (n *node) open() error {
	if err := n.claim(); err != nil {
		return err
	}
	return n.openEnforcer()
}

// claim takes everything that can refuse the start before anything
// changes kernel state (pins, host policy, state): the state lock
// (ErrLocked), the metrics address, the API socket (one served by another
// daemon is refused here; connections queue on it until it is served),
// the audit log and the Linux audit trail (audit.linux_audit_required).
// The metrics listener serves /healthz and /readyz from here on.
func (n *node) claim() error {
	unlock, err := lock(n.cfg.State + ".lock")
	if err != nil {
		return err
	}
	n.atStop(unlock)
	if n.cfg.Metrics.Listen != "" {
		ml, err := net.Listen("tcp", n.cfg.Metrics.Listen)
		if err != nil {
			return fmt.Errorf("metrics %s: %w", n.cfg.Metrics.Listen, err)
		}
		n.ml = ml
		n.atStop(func() { ml.Close() })
		n.serveMetricsListener()
	}
	if n.ln = n.o.Listener; n.ln == nil {
		ln, err := api.Listen(n.cfg.Socket)
		if err != nil {
			return err
		}
		n.ln = ln
		n.atStop(func() { ln.Close() })
		n.atStop(func() { os.Remove(n.cfg.Socket) })
	}
	if n.cfg.Audit.Path != "" {
		alog, err := audit.Open(n.cfg.Audit.Path, int64(n.cfg.Audit.MaxSizeMB)<<20, n.cfg.Audit.MaxBackups)
		if err != nil {
			return err
		}
		n.alog = alog
		n.atStop(func() { alog.Close() })
	}
	return n.openLinuxAudit()
}

// openEnforcer finds the cgroup2 mount, takes the pin-dir lock (one
// daemon per pin directory, whatever its state file, before anything in
// the pins changes), opens or re-adopts the pinned programs and maps and
// sets the host policy: the operator's allow_partial caps every user of
// these pins (`enforcerd run --allow-partial` included). A layer not in
// force is logged: ceilings needing it are refused.
func (n *node) openEnforcer() error {
	var err error
	if n.mount = n.cfg.CgroupMount; n.mount == "" {
		if n.mount, err = cgroup.Mountpoint(); err != nil {
			return err
		}
	}
	unlockPins, err := enforcer.LockPinDir(n.cfg.PinDir)
	if err != nil {
		return err
	}
	n.atStop(unlockPins)
	enf, err := enforcer.Open(enforcer.Options{PinDir: n.cfg.PinDir, CgroupMount: n.mount, VerifierLog: n.o.VerifierLog})
	if err != nil {
		return err
	}
	n.enf = enf
	n.atStop(func() { enf.Close() }) // pins stay: the kernel keeps enforcing
	if err := enf.SetHostPolicy(enforcer.HostPolicy{AllowPartial: n.cfg.AllowPartial, DaemonPID: os.Getpid()}); err != nil {
		return err
	}
	n.atStop(func() { _ = enf.ClearDaemonPID(os.Getpid()) })
	n.ready.done(partPins)
	for _, l := range []coverage.Layer{coverage.LayerLSM, coverage.LayerCgroup, coverage.LayerLifecycle} {
		if err := enf.LayerError(l); err != nil {
			n.log.Warn("layer not in force: ceilings needing it will be refused", "layer", l, "err", err)
		}
	}
	return nil
}

// reconcile makes the registry and loads the state file into it
// (reconcileState). Its events are kept in n.early until observe writes
// them.
func (n *node) reconcile() error {
	self, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		return err
	}
	n.reg = registry.New(registry.Options{
		Enforcer: n.enf, Cgroups: registry.SystemCgroups{Mount: n.mount},
		StatePath: n.cfg.State, SelfGroup: self, Log: n.log,
		PendingDeadline:   n.cfg.Pending.Deadline,
		AllowPartial:      n.cfg.AllowPartial,
		DenyConsoleEgress: n.cfg.DenyConsoleEgress,
		OnEvent:           n.registryEvent,
	})
	return n.reconcileState()
}

// reconcileState loads the state file into n.reg (registry.Reconcile:
// live entries untouched); the state part of the readiness is missing
// ("reconcile running") until it has succeeded.
func (n *node) reconcileState() error {
	n.ready.set(partState, "reconcile running")
	rep, err := n.reg.Reconcile()
	if err != nil {
		n.ready.set(partState, "reconcile failed")
		return fmt.Errorf("reconcile: %w", err)
	}
	n.log.Info("reconciled", "kept", len(rep.Kept), "reinstalled", rep.Reinstalled, "dropped", rep.Dropped,
		"failed", rep.Failed, "orphan_map_entries_removed", rep.Orphans, "narrowed", rep.Narrowed,
		"met", rep.Met, "adopted", rep.Adopted, "abandoned", rep.Abandoned, "temp_files_removed", rep.TempFiles)
	n.ready.done(partState)
	return nil
}

// registryEvent is the registry's OnEvent: an activation or freeze
// decision goes to record once observe has wired it, and is kept until
// then.
func (n *node) registryEvent(ev registry.Event) {
	if n.onEvent != nil {
		n.onEvent(ev)
	} else {
		n.early = append(n.early, ev)
	}
}

// serve starts what runs beside the main loop: the audit hub and metrics
// (observe), the denial pump, the API and metrics servers, the egress
// proxy and the NRI plugin. A server that fails later reports on n.errc.
func (n *node) serve(ctx context.Context) error {
	n.observe()
	if err := n.startPump(); err != nil {
		return err
	}
	n.startServers()
	pctx, stopProxy := context.WithCancel(ctx)
	n.atStop(stopProxy)
	if err := startProxy(pctx, n.cfg.Proxy, n.reg, n.mount, n.log, n.errc); err != nil {
		return err
	}
	return startNRI(pctx, n.cfg, n.reg, registry.SystemCgroups{Mount: n.mount}, n.m, n.log, n.onEvent)
}

// observe makes the audit hub and the metrics, and from then on sends the
// registry's events to record, those kept since Reconcile first.
func (n *node) observe() {
	n.hub = audit.NewHub()
	n.m = metrics.New(metrics.Sources{
		Registered: n.reg.Len, LostRecords: n.enf.LostRecords, Unattributed: n.enf.UnattributedDenials, RenamesInProgress: n.enf.RenamesInProgress, Hooks: n.enf.Hooks, Dropped: n.hub.Dropped,
		Unenforced: n.reg.Unenforced,
	})
	h := n.m.Handler()
	n.metricsHandler.Store(&h)
	n.onEvent = n.record
	for _, ev := range n.early {
		n.onEvent(ev)
	}
	n.early = nil
}

// record writes one registry (or NRI) event: to the log, the pending
// metrics (activation and freeze decisions), the audit log and the
// followers.
func (n *node) record(ev registry.Event) {
	switch ev.Kind {
	case nri.EventRegisteredLate:
		n.log.Warn("registered late", "container", ev.Container, "cgroup", ev.Cgroup, "reason", ev.Reason)
	case registry.EventReconciled:
		// The registry logged it with the fields that differed.
	case registry.EventRegistered, registry.EventNarrowed:
		if len(ev.Unenforced) > 0 {
			n.log.Warn("registered with gaps in coverage (allow_partial or audit-only)", "container", ev.Container, "cgroup", ev.Cgroup, "event", ev.Kind, "not_enforced", ev.Unenforced)
		}
	default:
		n.m.Pending.WithLabelValues(ev.Kind).Inc()
		n.log.Info("activation", "container", ev.Container, "cgroup", ev.Cgroup, "outcome", ev.Kind, "reason", ev.Reason)
	}
	rec := audit.Event(ev.Time, ev.Container, ev.CgroupID, ev.Cgroup, ev.Kind, ev.Reason, ev.Fingerprint)
	rec.Unenforced = ev.Unenforced
	if n.alog != nil {
		if err := n.alog.Write(rec); err != nil {
			n.m.AuditErrors.Inc()
			n.log.Error("audit log", "err", err)
		}
	}
	n.hub.Publish(rec)
}

// startPump starts the denial pump: the kernel's denial records to the
// audit log, the followers, the metrics, when journald runs and the
// configuration does not switch it off the journal, and with
// audit.linux_audit the Linux audit trail; without BPF LSM also the
// seccomp trail (the process layer's denials, openSeccompTrail).
func (n *node) startPump() error {
	var jr *denialJournal
	if n.cfg.Journal.Denials && journal.Enabled() {
		jr = newDenialJournal(n.cfg.Journal, journal.Send)
	}
	rd, err := n.enf.NewReader()
	if err != nil {
		return err
	}
	tally, err := n.enf.Tally()
	if err != nil {
		n.log.Warn("denial counts unavailable: every record counts as one denial", "err", err)
		tally = nil
	}
	p := &auditPump{rd: rd, tally: tally, reg: n.reg, alog: n.alog, hub: n.hub, m: n.m, log: n.log, jr: jr, la: n.startLinuxAudit()}
	n.atStop(p.start())
	if st := n.openSeccompTrail(p.writeLocal); st != nil {
		n.atStop(st.start())
	}
	return nil
}

// startServers serves the API on n.ln (the metrics listener serves since
// claim); from then on the api part of the readiness is ready.
func (n *node) startServers() {
	version := buildinfo.Get().Version
	srv := &api.Server{Reg: n.reg, Hub: n.hub, Metrics: n.m, Log: n.log, Limits: n.cfg.API.Limits(),
		Status: func() api.Status { return n.apiStatus(version) }, Ready: n.ready.get}
	hs := srv.NewHTTPServer()
	n.hs = hs
	go func() { n.errc <- fmt.Errorf("api %s: %w", n.cfg.Socket, hs.Serve(n.ln)) }()
	n.atStop(func() { hs.Close() })
	n.ready.done(partAPI)
}

// apiStatus is the API's status answer, for this build's version.
func (n *node) apiStatus(version string) api.Status {
	lost, _ := n.enf.LostRecords()
	return api.Status{
		Version: version, PID: os.Getpid(), Containers: n.reg.Len(),
		Coverage: n.enf.Report(), ActivateAtExec: n.enf.CanActivateAtExec(),
		AllowPartial: n.cfg.AllowPartial, PinDir: n.cfg.PinDir,
		LostRecords: lost, Hooks: api.HooksFrom(n.enf.Hooks()),
	}
}

// loop is the main loop, once serving: READY=1, then the watchdog, audit
// log reopens (Options.Reload), pending checks and sweeps until ctx is
// done (nil, after STOPPING=1 and a graceful shutdown of the API) or a
// server fails (its error).
func (n *node) loop(ctx context.Context) error {
	var tick <-chan time.Time
	if n.cfg.SweepInterval > 0 {
		t := time.NewTicker(n.cfg.SweepInterval)
		defer t.Stop()
		tick = t.C
	}
	pendingTick := time.NewTicker(n.cfg.Pending.CheckInterval)
	defer pendingTick.Stop()
	var watchdog <-chan time.Time
	if n.o.Watchdog > 0 {
		t := time.NewTicker(n.o.Watchdog)
		defer t.Stop()
		watchdog = t.C
	}
	n.log.Info("serving", "socket", n.cfg.Socket, "metrics", n.cfg.Metrics.Listen, "state", n.cfg.State,
		"pin_dir", n.cfg.PinDir, "containers", n.reg.Len(), "coverage", coverageSummary(n.enf.Report()))
	n.notify("READY=1")
	n.status()
	for {
		select {
		case <-ctx.Done():
			n.drain()
			return nil
		case err := <-n.errc:
			return err
		case <-watchdog:
			n.notify("WATCHDOG=1")
			n.status()
		case <-n.o.Reload:
			n.reopenAudit()
		case <-pendingTick.C:
			if _, err := n.reg.CheckPending(); err != nil {
				n.log.Error("pending check", "err", err)
			}
		case <-tick:
			n.sweep()
		}
	}
}

// status sends the STATUS= line systemd shows.
func (n *node) status() {
	lost, _ := n.enf.LostRecords()
	n.notify(fmt.Sprintf("STATUS=serving %s: %d containers registered, %d denial records lost", n.cfg.Socket, n.reg.Len(), lost))
}

// drain says STOPPING=1 and lets the API finish its requests (at most 5
// seconds) before stop closes everything.
func (n *node) drain() {
	n.ready.set(partAPI, "stopping")
	n.notify("STOPPING=1")
	n.log.Info("stopping; pinned programs keep enforcing every registered container")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = n.hs.Shutdown(sctx)
	cancel()
}

// reopenAudit reopens the audit log after an external rotation. Until a
// later reload succeeds, records fail (counted in
// enforcerd_audit_write_errors_total and logged); enforcement is not
// affected.
func (n *node) reopenAudit() {
	if n.alog == nil {
		n.log.Info("reload: no audit log to reopen")
		return
	}
	if err := n.alog.Reopen(); err != nil {
		n.log.Error("reload: audit log reopen failed", "err", err)
		return
	}
	n.log.Info("reload: audit log reopened", "path", n.cfg.Audit.Path)
}

// sweep drops the containers whose cgroup is gone (registry.Sweep) and
// their metrics.
func (n *node) sweep() {
	rep, err := n.reg.Sweep()
	if err != nil {
		n.log.Error("sweep", "err", err)
	}
	for _, id := range rep.Dropped {
		n.m.Forget(id)
		n.log.Info("dropped container whose cgroup is gone", "container", id)
	}
}
