package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/egress"
	"github.com/enforcerd/enforcerd/proxy"
)

// ProxyConfig is the daemon's "proxy:" section: the egress proxy
// (`enforcerd proxy`) run inside the daemon, where it narrows each
// registered container's requests to its proxy_allow list.
type ProxyConfig struct {
	// Enabled starts the proxy with the daemon (default false).
	Enabled bool `yaml:"enabled"`
	// The settings of `enforcerd proxy`, under the same names
	// (allow_domains, allow_ports, allow_private, resolve, socket,
	// socket_mode, socket_group, listen_tcp, audit, dial_timeout).
	proxy.Config `yaml:",inline"`
}

// DefaultProxyConfig is the proxy section with no file: off; when
// enabled, the socket /run/enforcerd/proxy.sock (0666), port 443 and the
// audit file /var/log/enforcerd/proxy.jsonl.
func DefaultProxyConfig() ProxyConfig {
	c := proxy.DefaultConfig()
	c.Audit = "/var/log/enforcerd/proxy.jsonl"
	return ProxyConfig{Config: c}
}

// validate checks an enabled proxy section (proxy.Config.Compile); it
// must allow at least one domain.
func (p ProxyConfig) validate() error {
	if !p.Enabled {
		return nil
	}
	if len(p.AllowDomains) == 0 {
		return fmt.Errorf("proxy.allow_domains: empty (an enabled proxy that allows nothing is a mistake)")
	}
	if _, err := p.Compile(); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// proxyRegistry places proxy clients in the registry.
type proxyRegistry struct{ reg *registry.Registry }

func (p proxyRegistry) ProxyLimits(group string) (string, []egress.Patterns, error) {
	id, lists, err := p.reg.ProxyAllowChain(group)
	if err != nil {
		return "", nil, err
	}
	out := make([]egress.Patterns, 0, len(lists))
	for _, l := range lists {
		pp, err := egress.ParsePatterns(l)
		if len(l) == 0 {
			pp, err = egress.Patterns{}, nil // "none": matches nothing
		}
		if err != nil {
			return "", nil, fmt.Errorf("container %s: stored proxy_allow: %w", id, err)
		}
		out = append(out, pp)
	}
	return id, out, nil
}

// startProxy runs the proxy section until ctx is done; a failure is sent
// on errc.
func startProxy(ctx context.Context, c ProxyConfig, reg *registry.Registry, mount string, log *slog.Logger, errc chan<- error) error {
	if !c.Enabled {
		return nil
	}
	pol, err := c.Compile()
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	al, closer, err := proxy.OpenAudit(c.Config, os.Stdout)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	go func() {
		defer closer.Close()
		err := proxy.Run(ctx, c.Config, pol, proxy.Options{
			Audit: al, Log: log.With("component", "proxy"), Registry: proxyRegistry{reg}, CgroupMount: mount,
		}, os.Stdout)
		if err != nil {
			errc <- fmt.Errorf("proxy: %w", err)
		}
	}()
	return nil
}
