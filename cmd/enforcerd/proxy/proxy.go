// Package proxy is "enforcerd proxy": the egress proxy's flags and lifetime
// around package proxy (the library, imported under the same name). It
// imports the library packages and cmd/enforcerd/cli, no other command's
// package.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/proxy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const proxyUsage = `Usage: enforcerd proxy --allow-domain PATTERN[,PATTERN...] [flags]

Run the egress proxy: an HTTP forward proxy with CONNECT tunnels, the one
way out for an agent whose ceiling says network=false and whose allowed
endpoints name the proxy's unix socket. Clients use it as an HTTP proxy
(HTTPS_PROXY/HTTP_PROXY pointing at a loopback --listen-tcp address, or a
client that dials the unix socket for its proxy). A plain-HTTP client may
also treat the unix socket as the server: "curl --unix-socket
/run/enforcerd/proxy.sock http://api.example.com/" sends the origin-form
"GET /" with "Host: api.example.com", which is routed by that Host.

For every request the proxy:
  * takes the destination from the CONNECT authority ("host:port") or the
    absolute URL ("http://host[:port]/path"; https goes through CONNECT, end
    to end, and the proxy never sees inside TLS), or the Host header of an
    origin-form request ("/path"); a Host header naming another host or
    port than the CONNECT authority or URL, two Host headers, userinfo,
    escapes and zoned addresses are refused (400);
  * allows the port only if it is in --allow-port, the name only if it
    matches --allow-domain (403 otherwise);
  * resolves the name itself (the agent has no DNS) and connects only to
    public unicast addresses: loopback, private (RFC 1918, ULA), link-local,
    CGNAT, multicast, unspecified, documentation, NAT64/6to4/Teredo and
    cloud metadata addresses are refused (403) unless --allow-private lists
    them. The address is checked again on the socket right before
    connect(2), so a name that re-resolves to a private address (DNS
    rebinding) never reaches it. IP literals are checked the same way;
  * writes one audit line (JSON, slog's): time, level (INFO allowed,
    WARN denied), msg ("proxy"), decision (allowed|denied), reason,
    detail, method, domain, port, ip, bytes_up, bytes_down, duration_ms,
    listener, client_pid, cgroup_id, cgroup, container.
A refusal is an HTTP response with a reason in the X-Enforcerd-Reason
header (bad_request, port_not_allowed, domain_not_allowed,
container_domain_not_allowed, destination_refused, client_unidentified,
resolve_failed, dial_failed, upstream_failed) and a Proxy-Status header
(RFC 9209); the connection is then closed.

Clients are identified by SO_PEERCRED (unix socket) or the socket table
(loopback TCP): pid, cgroup, cgroup id. Standalone, the global lists apply
to every client; under "enforcerd daemon" (its "proxy:" configuration) a
registered container's proxy_allow list (API field, annotation
enforcerd.io/proxy-allow) narrows them further, and a client whose cgroup
cannot be read is refused.

Flags (each list flag may be repeated and takes comma-separated values):
  --allow-domain PATTERN  "api.example.com" (exactly that name),
                          "*.example.org" (names below example.org, not
                          example.org itself) or an IP literal. Names are
                          matched case-insensitively, in their IDNA ASCII
                          form, without a trailing dot. Required: without
                          any, nothing is reachable.
  --allow-port PORT       destination TCP ports (default 443)
  --allow-private ENTRY   allow a non-public destination: an IP address, a
                          CIDR prefix, or a domain pattern whose names may
                          resolve to any address. A cloud metadata address
                          (169.254.169.254, fd00:ec2::254, ...) only by
                          its exact address.
  --resolve NAME=IP[,IP]  resolve NAME statically instead of by DNS (tests
                          and demos; the address checks still apply)
  --socket PATH           unix socket to listen on (default
                          /run/enforcerd/proxy.sock; "" for none)
  --socket-mode MODE      its octal mode (default 0666)
  --socket-group GROUP    its group (name or gid)
  --listen-tcp ADDR       also listen on this loopback IP:PORT
  --audit PATH            audit lines to PATH (appended), "-" for standard
                          output (default), "" for none
  --dial-timeout DURATION resolve and connect timeout (default 10s)
  -h, --help              this help

Under systemd socket activation (deploy/enforcerd-proxy.socket) the
sockets systemd passes are served instead of --socket and --listen-tcp.

Signals: SIGTERM/SIGINT stop the proxy (open tunnels are closed).

Exit status:
  0  stopped by a signal
  1  could not listen or open the audit file, or a listener failed
  2  usage error (bad flag or value, named in the message)
`

func NewCommand(s cli.Streams) *cobra.Command {
	cfg := proxy.DefaultConfig()
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "proxy",
		Summary: "egress proxy with a domain allow list (the way out of network=false)",
		Help:    proxyUsage,
		Run: func(c *cobra.Command, _ []string) error {
			if len(cfg.AllowDomains) == 0 {
				return cli.UsageErrorf("give --allow-domain (without it nothing is reachable)")
			}
			pol, err := cfg.Compile()
			if err != nil {
				return cli.UsageError{Err: err}
			}
			log := slog.New(slog.NewTextHandler(s.Err, nil))
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := proxy.Run(ctx, cfg, pol, proxy.Options{Log: log}, s.Out); err != nil {
				if errors.Is(err, proxy.ErrConfig) {
					return cli.UsageError{Err: err}
				}
				return fmt.Errorf("%w", err)
			}
			return nil
		},
	})
	fs := c.Flags()
	fs.StringArrayVar(&cfg.AllowDomains, "allow-domain", nil, "domain pattern allowed (repeatable, comma-separated)")
	fs.IntSliceVar(&cfg.AllowPorts, "allow-port", cfg.AllowPorts, "destination port allowed (repeatable, comma-separated)")
	fs.StringArrayVar(&cfg.AllowPrivate, "allow-private", nil, "non-public destination allowed: IP, CIDR or domain pattern")
	fs.StringArrayVar(&cfg.Resolve, "resolve", nil, "static resolution NAME=IP[,IP]")
	fs.StringVar(&cfg.Socket, "socket", cfg.Socket, "unix socket path (\"\" for none)")
	fs.StringVar(&cfg.SocketMode, "socket-mode", cfg.SocketMode, "octal mode of the unix socket")
	fs.StringVar(&cfg.SocketGroup, "socket-group", "", "group of the unix socket")
	fs.StringVar(&cfg.ListenTCP, "listen-tcp", "", "loopback IP:PORT to listen on too")
	fs.StringVar(&cfg.Audit, "audit", cfg.Audit, "audit destination: PATH, - (stdout) or \"\"")
	fs.DurationVar(&cfg.DialTimeout, "dial-timeout", cfg.DialTimeout, "resolve and connect timeout")
	return c
}
