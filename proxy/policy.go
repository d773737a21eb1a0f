package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/enforcerd/enforcerd/egress"
)

// Defaults of Config.
const (
	DefaultSocket      = "/run/enforcerd/proxy.sock"
	DefaultSocketMode  = "0666"
	DefaultDialTimeout = 10 * time.Second
)

// ErrConfig: a proxy setting is invalid (the CLI exits 2, the daemon
// refuses its configuration).
var ErrConfig = errors.New("invalid proxy configuration")

// Config is the proxy's configuration: the flags of `enforcerd proxy` and
// the `proxy:` section of the daemon's YAML use the same names.
type Config struct {
	// AllowDomains are the domain patterns (egress.ParsePatterns) clients may
	// reach. Empty: nothing is reachable.
	AllowDomains []string `yaml:"allow_domains"`
	// AllowPorts are the destination TCP ports (empty: [443]).
	AllowPorts []int `yaml:"allow_ports"`
	// AllowPrivate lifts the refusal of non-public destination addresses
	// (Classify) for the listed entries: an IP address, a CIDR prefix
	// (10.1.0.0/16), or a domain pattern whose names may resolve to any
	// address. A cloud metadata address is allowed only by being listed
	// as that exact address.
	AllowPrivate []string `yaml:"allow_private"`
	// Resolve are static name resolutions "NAME=IP[,IP...]" used instead
	// of DNS for those names (tests and demos; the address checks still
	// apply).
	Resolve []string `yaml:"resolve"`
	// Socket is the unix socket path ("" = none).
	Socket string `yaml:"socket"`
	// SocketMode is the socket's octal permission bits (default "0666").
	SocketMode string `yaml:"socket_mode"`
	// SocketGroup, when set, is the group (name or number) owning the
	// socket.
	SocketGroup string `yaml:"socket_group"`
	// ListenTCP is an optional loopback TCP address ("127.0.0.1:3128").
	ListenTCP string `yaml:"listen_tcp"`
	// Audit is where audit lines go: a file path (appended), "-" for
	// standard output, "" for none.
	Audit string `yaml:"audit"`
	// DialTimeout bounds resolving and connecting to a destination.
	DialTimeout time.Duration `yaml:"dial_timeout"`
}

// DefaultConfig is the configuration with nothing given.
func DefaultConfig() Config {
	return Config{AllowPorts: []int{443}, Socket: DefaultSocket, SocketMode: DefaultSocketMode, Audit: "-", DialTimeout: DefaultDialTimeout}
}

// Policy is a compiled Config: what the proxy allows.
type Policy struct {
	Domains         egress.Patterns
	Ports           map[uint16]bool
	privateIPs      map[netip.Addr]bool
	privatePrefixes []netip.Prefix
	privateNames    egress.Patterns
	static          map[string][]netip.Addr
	socketMode      uint32
	socketGID       int // -1: unchanged
}

func cfgErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
}

// Compile validates c and builds its Policy. Errors wrap ErrConfig and
// name the setting; the settings are checked in the order of the steps
// below, and the first error is returned.
func (c Config) Compile() (*Policy, error) {
	p := &Policy{Ports: map[uint16]bool{}, privateIPs: map[netip.Addr]bool{}, static: map[string][]netip.Addr{}, socketGID: -1}
	for _, step := range []func(*Policy) error{
		c.compileDomains, c.compilePorts, c.compilePrivate, c.compileResolve, c.compileListeners, c.checkAuditAndTimeout,
	} {
		if err := step(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// compileDomains: allow-domain, domain patterns (egress.ParsePatterns).
func (c Config) compileDomains(p *Policy) error {
	var err error
	if p.Domains, err = egress.ParsePatterns(c.AllowDomains); err != nil {
		return cfgErr("allow-domain: %v", err)
	}
	return nil
}

// compilePorts: allow-port, 1-65535 each; none given is [443].
func (c Config) compilePorts(p *Policy) error {
	ports := c.AllowPorts
	if len(ports) == 0 {
		ports = []int{443}
	}
	for _, n := range ports {
		if n < 1 || n > 65535 {
			return cfgErr("allow-port: %d is out of range 1-65535", n)
		}
		p.Ports[uint16(n)] = true
	}
	return nil
}

// compilePrivate: allow-private, comma-separated IP addresses, CIDR
// prefixes and domain patterns.
func (c Config) compilePrivate(p *Policy) error {
	var names []string
	for _, item := range c.AllowPrivate {
		for _, s := range strings.Split(item, ",") {
			s = strings.TrimSpace(s)
			if ip, ok := egress.ParseIPLiteral(s); ok {
				p.privateIPs[ip] = true
				continue
			}
			if pf, err := netip.ParsePrefix(s); err == nil {
				p.privatePrefixes = append(p.privatePrefixes, pf.Masked())
				continue
			}
			names = append(names, s)
		}
	}
	var err error
	if p.privateNames, err = egress.ParsePatterns(names); err != nil {
		return cfgErr("allow-private: %v (want an IP address, a CIDR prefix or a domain pattern)", err)
	}
	return nil
}

// compileResolve: resolve, NAME=IP[,IP...] static answers.
func (c Config) compileResolve(p *Policy) error {
	for _, r := range c.Resolve {
		name, ips, ok := strings.Cut(r, "=")
		if !ok {
			return cfgErr("resolve: %q: want NAME=IP[,IP...]", r)
		}
		n, err := egress.NormalizeHost(strings.TrimSpace(name))
		if err != nil {
			return cfgErr("resolve: %q: %v", r, err)
		}
		for _, s := range strings.Split(ips, ",") {
			ip, ok := egress.ParseIPLiteral(strings.TrimSpace(s))
			if !ok {
				return cfgErr("resolve: %q: %q is not an IP address", r, s)
			}
			p.static[n] = append(p.static[n], ip)
		}
	}
	return nil
}

// compileListeners: at least one of socket and listen-tcp, each valid.
func (c Config) compileListeners(p *Policy) error {
	if c.Socket == "" && c.ListenTCP == "" {
		return cfgErr("no listener: give socket or listen-tcp")
	}
	if c.Socket != "" {
		if err := c.compileSocket(p); err != nil {
			return err
		}
	}
	if c.ListenTCP != "" {
		return c.checkListenTCP()
	}
	return nil
}

// compileSocket: socket (an absolute path that fits sun_path),
// socket-mode (octal, default DefaultSocketMode), socket-group.
func (c Config) compileSocket(p *Policy) error {
	if !filepath.IsAbs(c.Socket) || len(c.Socket) > 107 {
		return cfgErr("socket: %q is not an absolute path of at most 107 bytes", c.Socket)
	}
	mode := c.SocketMode
	if mode == "" {
		mode = DefaultSocketMode
	}
	m, err := strconv.ParseUint(mode, 8, 32)
	if err != nil || m > 0o777 {
		return cfgErr("socket-mode: %q is not an octal mode 0-0777", c.SocketMode)
	}
	p.socketMode = uint32(m)
	if c.SocketGroup != "" {
		if p.socketGID, err = lookupGroup(c.SocketGroup); err != nil {
			return cfgErr("socket-group: %v", err)
		}
	}
	return nil
}

// checkListenTCP: listen-tcp, a loopback IP:PORT.
func (c Config) checkListenTCP() error {
	ap, err := netip.ParseAddrPort(c.ListenTCP)
	if err != nil {
		return cfgErr("listen-tcp: %q: want IP:PORT", c.ListenTCP)
	}
	if !ap.Addr().IsLoopback() {
		return cfgErr("listen-tcp: %s is not a loopback address (the proxy must not be an open relay)", ap.Addr())
	}
	return nil
}

// checkAuditAndTimeout: audit ("", "-" or an absolute path) and a
// positive dial-timeout.
func (c Config) checkAuditAndTimeout(*Policy) error {
	if c.Audit != "" && c.Audit != "-" && !filepath.IsAbs(c.Audit) {
		return cfgErr("audit: %q is not an absolute path or \"-\"", c.Audit)
	}
	if c.DialTimeout <= 0 {
		return cfgErr("dial-timeout: %s must be positive", c.DialTimeout)
	}
	return nil
}

func lookupGroup(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// checkIP decides whether the proxy may connect to ip for the name the
// client asked for ("" for an IP literal target). It returns "" or the
// refusing class.
func (p *Policy) checkIP(name string, ip netip.Addr) string {
	ip = ip.Unmap()
	class := Classify(ip)
	if class == "" || p.privateIPs[ip] {
		return ""
	}
	if class == ClassMetadata {
		return class
	}
	for _, pf := range p.privatePrefixes {
		if pf.Contains(ip) {
			return ""
		}
	}
	if name != "" && p.privateNames.MatchName(name) {
		return ""
	}
	return class
}
