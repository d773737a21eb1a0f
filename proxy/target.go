package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/enforcerd/enforcerd/egress"
)

// ErrBadTarget: a request's target (CONNECT authority, absolute-form URL or
// Host header) is malformed, unsupported or inconsistent.
var ErrBadTarget = errors.New("bad request target")

// Target is where a client asks the proxy to connect.
type Target struct {
	// Host is the egress.NormalizeHost name, or the IP literal's canonical text.
	Host string
	// IP is set when the request named an IP literal (then there is
	// nothing to resolve).
	IP netip.Addr
	// Port is 1-65535.
	Port uint16
}

// Authority is "host:port" ("[v6]:port").
func (t Target) Authority() string {
	return net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port)))
}

// AllowedBy reports whether the allow list p admits t: by name, or for an
// IP literal target by its address.
func (t Target) AllowedBy(p egress.Patterns) bool {
	if t.IP.IsValid() {
		return p.MatchIP(t.IP)
	}
	return p.MatchName(t.Host)
}

func badTarget(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadTarget, fmt.Sprintf(format, a...))
}

// ParseAuthority parses "host:port", "[v6]:port", or without ":port" when
// defaultPort is non-zero (0: the port is required, as in CONNECT, RFC
// 9110 section 9.3.6). The host is an egress.NormalizeHost name, an IPv4
// literal or a bracketed IPv6 literal without zone. Userinfo,
// percent-escapes, paths and blanks are refused. Errors wrap ErrBadTarget.
func ParseAuthority(s string, defaultPort uint16) (Target, error) {
	if err := checkAuthorityBytes(s); err != nil {
		return Target{}, err
	}
	host, port, err := splitAuthority(s)
	if err != nil {
		return Target{}, err
	}
	t := Target{Port: defaultPort}
	if port != "" {
		if t.Port, err = parsePort(s, port); err != nil {
			return Target{}, err
		}
	}
	if t.Port == 0 {
		return Target{}, badTarget("authority %q: a port is required", s)
	}
	if t.Host, t.IP, err = parseAuthorityHost(s, host); err != nil {
		return Target{}, err
	}
	return t, nil
}

// checkAuthorityBytes refuses an empty or over-long authority and the
// bytes of userinfo, paths, escapes, zones and blanks.
func checkAuthorityBytes(s string) error {
	if s == "" {
		return badTarget("empty authority")
	}
	if len(s) > 300 {
		return badTarget("authority longer than 300 bytes")
	}
	if i := strings.IndexAny(s, "@/?#%\\ \t\r\n"); i >= 0 {
		return badTarget("authority %q: byte %q is not allowed (no userinfo, path, escape or zone)", s, s[i])
	}
	return nil
}

// splitAuthority splits s into host and port text ("" when s has no
// port); an IPv6 host must be bracketed.
func splitAuthority(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		return splitBracketed(s)
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return "", "", badTarget("authority %q: empty port", s)
		}
		return host, port, nil
	default:
		return "", "", badTarget("authority %q: an IPv6 address must be in brackets", s)
	}
}

// splitBracketed splits "[v6]" or "[v6]:port"; the host must be an IPv6
// address without zone.
func splitBracketed(s string) (host, port string, err error) {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return "", "", badTarget("authority %q: unclosed '['", s)
	}
	host, port = s[1:end], s[end+1:]
	if port != "" {
		if port[0] != ':' {
			return "", "", badTarget("authority %q: junk after ']'", s)
		}
		port = port[1:]
		if port == "" {
			return "", "", badTarget("authority %q: empty port", s)
		}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is6() || ip.Zone() != "" {
		return "", "", badTarget("authority %q: %q is not an IPv6 address", s, host)
	}
	return host, port, nil
}

// parsePort reads authority s's port text: 1-5 decimal digits, 1-65535.
func parsePort(s, port string) (uint16, error) {
	if len(port) > 5 || strings.Trim(port, "0123456789") != "" {
		return 0, badTarget("authority %q: port %q is not a number", s, port)
	}
	n, _ := strconv.Atoi(port)
	if n < 1 || n > 65535 {
		return 0, badTarget("authority %q: port %d is out of range 1-65535", s, n)
	}
	return uint16(n), nil
}

// parseAuthorityHost returns the canonical host text of authority s's
// host, and its address when it is an IP literal (unmapped).
func parseAuthorityHost(s, host string) (string, netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return "", netip.Addr{}, badTarget("authority %q: zoned address", s)
		}
		ip = ip.Unmap()
		return ip.String(), ip, nil
	}
	n, err := egress.NormalizeHost(host)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("%w: authority %q: %w", ErrBadTarget, s, err)
	}
	return n, netip.Addr{}, nil
}

// ParseRequestTarget is the target of a proxy request (RFC 9112 section
// 3.2): for CONNECT the authority-form "host:port"; for every other method
// the absolute-form "http://host[:port]/path" (https and other schemes are
// refused: TLS goes through CONNECT, end to end), or the origin-form
// "/path" with exactly one Host header, which is then the target (a client
// using the unix socket as the server itself); asterisk-form is refused.
// hosts are the request's Host header values as received: more than one
// is refused, and one that names another host or port than the target is
// refused (a Host without port stands for the target's port), so no
// component downstream can be steered by a Host the policy did not check.
// Errors wrap ErrBadTarget.
func ParseRequestTarget(method, requestURI string, hosts []string) (Target, error) {
	var t Target
	var err error
	if method == "CONNECT" {
		if t, err = ParseAuthority(requestURI, 0); err != nil {
			return Target{}, err
		}
	} else if strings.HasPrefix(requestURI, "/") {
		// Origin-form routed by its Host header: what a client that
		// talks to the unix socket as the server sends (curl
		// --unix-socket PATH http://host/...). The Host header is then
		// the target, checked like any other.
		if len(hosts) != 1 {
			return Target{}, badTarget("%q is not an absolute URL and there is not exactly one Host header to route it by", trunc(requestURI))
		}
		if t, err = ParseAuthority(hosts[0], 80); err != nil {
			return Target{}, fmt.Errorf("host header: %w", err)
		}
		return t, nil
	} else {
		if !strings.Contains(requestURI, "://") {
			return Target{}, badTarget("%q is not an absolute URL (configure this address as an HTTP proxy)", trunc(requestURI))
		}
		u, perr := url.ParseRequestURI(requestURI)
		if perr != nil {
			return Target{}, badTarget("URL %q: %v", trunc(requestURI), perr)
		}
		if u.Scheme != "http" {
			return Target{}, badTarget("URL scheme %q: only http is forwarded (use CONNECT for https)", u.Scheme)
		}
		if u.User != nil {
			return Target{}, badTarget("URL with userinfo refused")
		}
		if u.Opaque != "" {
			return Target{}, badTarget("opaque URL refused")
		}
		if t, err = ParseAuthority(u.Host, 80); err != nil {
			return Target{}, err
		}
	}
	switch len(hosts) {
	case 0:
	case 1:
		h, err := ParseAuthority(hosts[0], t.Port)
		if err != nil {
			return Target{}, fmt.Errorf("host header: %w", err)
		}
		if h.Host != t.Host || h.Port != t.Port {
			return Target{}, badTarget("Host header %q does not name the target %s", trunc(hosts[0]), t.Authority())
		}
	default:
		return Target{}, badTarget("%d Host headers", len(hosts))
	}
	return t, nil
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
