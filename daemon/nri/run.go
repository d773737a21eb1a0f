package nri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"
)

// Backoff between connection attempts: doubled from MinBackoff up to
// MaxBackoff, back to MinBackoff after a connection that lasted
// StableAfter.
var (
	MinBackoff  = 250 * time.Millisecond
	MaxBackoff  = 10 * time.Second
	StableAfter = 30 * time.Second
)

// FailurePolicy is what the plugin asks of the runtime: a request the
// plugin does not answer (a timeout, a lost connection) fails instead of
// proceeding without it, and a timeout does not drop the plugin (the next
// request still reaches it). Runtimes with nri before v0.12.4 ignore it.
func FailurePolicy() *api.FailurePolicy {
	return &api.FailurePolicy{FailRequest: true, KeepConnected: true}
}

// Run connects the plugin to the runtime's socket and keeps it connected
// until ctx is done, reconnecting with backoff when the runtime restarts
// or refuses the plugin. It returns nil when ctx is done.
func (p *Plugin) Run(ctx context.Context) error {
	nrilog.Set(nriLogger{p.o.Log.With("component", "nri")})
	backoff := MinBackoff
	for {
		start := p.o.Now()
		err := p.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if p.o.Now().Sub(start) >= StableAfter {
			backoff = MinBackoff
		}
		p.o.Log.Warn("nri: not connected to the runtime; retrying", "socket", p.o.Config.Socket, "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// errClosed: the runtime closed the connection.
var errClosed = errors.New("the runtime closed the connection")

// runOnce makes one connection and returns when it is closed or ctx is
// done.
func (p *Plugin) runOnce(ctx context.Context) error {
	closed := make(chan struct{})
	opts := []stub.Option{
		stub.WithPluginName(p.o.Config.PluginName),
		stub.WithPluginIdx(p.o.Config.PluginIndex),
		stub.WithSocketPath(p.o.Config.Socket),
		stub.WithFailurePolicy(FailurePolicy()),
		stub.WithOnClose(func() { close(closed) }),
	}
	if p.dial != nil {
		opts = append(opts, stub.WithDialer(p.dial))
	}
	s, err := stub.New(p, opts...)
	if err != nil {
		return fmt.Errorf("nri plugin: %w", err)
	}
	if err := s.Start(ctx); err != nil {
		p.o.Metrics.Connections.WithLabelValues("error").Inc()
		s.Stop()
		return err
	}
	p.o.Metrics.Connections.WithLabelValues("ok").Inc()
	p.o.Metrics.Connected.Set(1)
	defer p.o.Metrics.Connected.Set(0)
	p.o.Log.Info("nri: plugin registered with the runtime", "socket", p.o.Config.Socket,
		"name", p.o.Config.PluginIndex+"-"+p.o.Config.PluginName, "mode", p.Mode())
	select {
	case <-ctx.Done():
		s.Stop()
		return ctx.Err()
	case <-closed:
		return errClosed
	}
}

// nriLogger sends nri's log lines to the daemon's logger.
type nriLogger struct{ l *slog.Logger }

func (n nriLogger) Debugf(ctx context.Context, f string, a ...any) {
	n.l.DebugContext(ctx, fmt.Sprintf(f, a...))
}
func (n nriLogger) Infof(ctx context.Context, f string, a ...any) {
	n.l.DebugContext(ctx, fmt.Sprintf(f, a...))
}
func (n nriLogger) Warnf(ctx context.Context, f string, a ...any) {
	n.l.WarnContext(ctx, fmt.Sprintf(f, a...))
}
func (n nriLogger) Errorf(ctx context.Context, f string, a ...any) {
	n.l.ErrorContext(ctx, fmt.Sprintf(f, a...))
}
