package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/coreos/go-systemd/v22/activation"
)

// Listen opens the listeners of c (compiled as pol): sockets handed over
// by systemd socket activation (LISTEN_FDS) when there are any, else the
// unix socket (an existing socket file is replaced; mode and group as
// configured) and the loopback TCP address. cleanup removes the unix
// socket file the proxy created.
func Listen(c Config, pol *Policy) (lns []net.Listener, cleanup func(), err error) {
	cleanup = func() {}
	act, err := activation.Listeners()
	if err != nil {
		return nil, cleanup, fmt.Errorf("systemd socket activation: %w", err)
	}
	for _, l := range act {
		if l != nil {
			lns = append(lns, l)
		}
	}
	if len(lns) > 0 {
		return lns, cleanup, nil
	}
	closeAll := func() {
		for _, l := range lns {
			l.Close()
		}
	}
	if c.Socket != "" {
		if err := os.MkdirAll(filepath.Dir(c.Socket), 0o755); err != nil {
			return nil, cleanup, fmt.Errorf("socket %s: %w", c.Socket, err)
		}
		if fi, err := os.Lstat(c.Socket); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				return nil, cleanup, fmt.Errorf("socket %s: exists and is not a socket", c.Socket)
			}
			_ = os.Remove(c.Socket)
		}
		ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: c.Socket, Net: "unix"})
		if err != nil {
			return nil, cleanup, fmt.Errorf("socket %s: %w", c.Socket, err)
		}
		ul.SetUnlinkOnClose(false)
		lns = append(lns, ul)
		cleanup = func() { os.Remove(c.Socket) }
		if pol.socketGID >= 0 {
			if err := os.Chown(c.Socket, -1, pol.socketGID); err != nil {
				closeAll()
				cleanup()
				return nil, func() {}, fmt.Errorf("socket %s: group: %w", c.Socket, err)
			}
		}
		if err := os.Chmod(c.Socket, os.FileMode(pol.socketMode)); err != nil {
			closeAll()
			cleanup()
			return nil, func() {}, fmt.Errorf("socket %s: mode: %w", c.Socket, err)
		}
	}
	if c.ListenTCP != "" {
		tl, err := net.Listen("tcp", c.ListenTCP)
		if err != nil {
			closeAll()
			cleanup()
			return nil, func() {}, fmt.Errorf("listen-tcp %s: %w", c.ListenTCP, err)
		}
		lns = append(lns, tl)
	}
	return lns, cleanup, nil
}

// OpenAudit opens the audit destination of c: a JSON slog logger over the
// file (appended, mode 0640), standard output for "-" (stdout), or a
// discarding logger for "".
func OpenAudit(c Config, stdout io.Writer) (*slog.Logger, io.Closer, error) {
	switch c.Audit {
	case "":
		return slog.New(slog.DiscardHandler), io.NopCloser(nil), nil
	case "-":
		return slog.New(slog.NewJSONHandler(stdout, nil)), io.NopCloser(nil), nil
	}
	if err := os.MkdirAll(filepath.Dir(c.Audit), 0o750); err != nil {
		return nil, nil, fmt.Errorf("audit %s: %w", c.Audit, err)
	}
	f, err := os.OpenFile(c.Audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, nil, fmt.Errorf("audit %s: %w", c.Audit, err)
	}
	return slog.New(slog.NewJSONHandler(f, nil)), f, nil
}

// Run serves c until ctx is done. Errors: the listeners or the audit file
// could not be opened, or a listener failed.
func Run(ctx context.Context, c Config, pol *Policy, o Options, stdout io.Writer) error {
	if o.Audit == nil {
		al, closer, err := OpenAudit(c, stdout)
		if err != nil {
			return err
		}
		defer closer.Close()
		o.Audit = al
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = c.DialTimeout
	}
	lns, cleanup, err := Listen(c, pol)
	if err != nil {
		return err
	}
	defer cleanup()
	p := New(pol, o)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(lns))
	for _, l := range lns {
		if p.log != nil {
			p.log.Info("proxy listening", "addr", l.Addr().String(), "network", l.Addr().Network(),
				"allow_domains", pol.Domains.Strings(), "containers", o.Registry != nil)
		}
		go func(l net.Listener) {
			if err := p.Serve(ctx, l); err != nil {
				errc <- fmt.Errorf("proxy %s: %w", l.Addr(), err)
				return
			}
			errc <- nil
		}(l)
	}
	var first error
	for range lns {
		err := <-errc
		if err != nil && first == nil {
			first = err
			cancel()
		}
	}
	if first != nil && !errors.Is(first, context.Canceled) {
		return first
	}
	return nil
}
