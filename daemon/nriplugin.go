package daemon

import (
	"context"
	"log/slog"

	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/daemon/nri"
	"github.com/enforcerd/enforcerd/daemon/registry"
)

// startNRI runs the Kubernetes NRI plugin (config nri.enable) until ctx
// is done: it registers through reg, the registry the API and the hook
// use, exports its metrics with the daemon's and writes its audit records
// (late registrations) through onEvent. The plugin reconnects by itself;
// only a bad configuration stops the start.
func startNRI(ctx context.Context, cfg Config, reg *registry.Registry, cgs registry.SystemCgroups, m *metrics.Metrics, log *slog.Logger, onEvent func(registry.Event)) error {
	if !cfg.NRI.Enable {
		return nil
	}
	nm := nri.NewMetrics()
	p, err := nri.New(nri.Options{
		Config: cfg.NRI, Registry: reg, DaemonSocket: cfg.Socket,
		Log: log.With("component", "nri"), Metrics: nm, OnEvent: onEvent, Freeze: cgs.Freeze,
	})
	if err != nil {
		return err
	}
	m.Register(nm.Collectors()...)
	go func() { _ = p.Run(ctx) }()
	return nil
}
