// Package endpoint parses and resolves the endpoints a network=false
// ceiling may still reach (enforcerd run --allow-connect, the API's
// allow_connect, the enforcerd.io/allow-connect annotation). The kernel
// meaning is in docs/design.md "Allowed endpoints" and bpf/endpoints.h.
//
// Syntax (one endpoint):
//
//	tcp:IP:PORT    tcp:[IPv6]:PORT    a TCP peer (SOCK_STREAM, IPPROTO_TCP)
//	udp:IP:PORT    udp:[IPv6]:PORT    a UDP peer (SOCK_DGRAM, IPPROTO_UDP)
//	unix:/PATH                        the bound unix socket file at PATH
//
// IP is a literal address (no host names, no zone); an IPv4-mapped IPv6
// address ([::ffff:a.b.c.d]) is the IPv4 address. PORT is 1-65535. PATH is
// absolute; it is resolved to the socket file's identity (device and
// inode) at registration (Resolve): a socket re-created at the same path
// later is a different socket.
//
// Layering (docs/design.md): layer 1; it may import internal/inroot/, and
// of other modules no cilium/ebpf, not even through its imports.
package endpoint

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"
)

// Max is the most endpoints one registration may list (MAX_ENDPOINTS in
// bpf/endpoints.h).
const Max = 16

// maxPathBytes bounds a unix path (the kernel's PATH_MAX).
const maxPathBytes = 4096

// ErrBad is wrapped by every syntax error.
var ErrBad = errors.New("bad endpoint")

// Kind is what an endpoint is reached by.
type Kind string

const (
	TCP  Kind = "tcp"
	UDP  Kind = "udp"
	Unix Kind = "unix"
)

// Endpoint is one allowed endpoint. For TCP and UDP, Addr (IPv4 unmapped)
// and Port; for Unix, Path and, once resolved, the socket file's identity:
// Dev (kernel encoding, major<<20|minor), Ino and Ctime (its change time
// in ns since the epoch; file systems reuse inode numbers, ext4 at once,
// so a socket re-created at the path differs at least there).
type Endpoint struct {
	Kind Kind       `json:"kind"`
	Addr netip.Addr `json:"addr,omitzero"`
	Port uint16     `json:"port,omitempty"`
	Path string     `json:"path,omitempty"`
	Dev  uint32     `json:"dev,omitempty"`
	Ino  uint64     `json:"ino,omitempty"`
	// Ctime in ns: a chmod, chown, rename or link of the socket file
	// changes it, and the endpoint no longer matches (fail closed).
	Ctime int64 `json:"ctime_ns,omitempty"`
}

// Parse reads one endpoint (syntax above). A unix endpoint is returned
// unresolved (Dev and Ino zero). Errors wrap ErrBad and quote the input.
func Parse(s string) (Endpoint, error) {
	kind, rest, ok := strings.Cut(s, ":")
	bad := func(why string) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("%w %q: %s (want tcp:IP:PORT, udp:IP:PORT, tcp:[IPv6]:PORT or unix:/PATH)", ErrBad, s, why)
	}
	if !ok {
		return bad("no kind")
	}
	switch Kind(kind) {
	case TCP, UDP:
		ap, err := netip.ParseAddrPort(rest)
		if err != nil {
			return bad("not IP:PORT")
		}
		a := ap.Addr()
		if a.Zone() != "" {
			return bad("an IPv6 zone is not allowed")
		}
		if ap.Port() == 0 {
			return bad("port 0")
		}
		if a.Is4() && strings.HasPrefix(rest, "[") {
			return bad("an IPv4 address in brackets")
		}
		return Endpoint{Kind: Kind(kind), Addr: a.Unmap(), Port: ap.Port()}, nil
	case Unix:
		switch {
		case !path.IsAbs(rest):
			return bad("the path must be absolute (abstract sockets are never an endpoint)")
		case len(rest) > maxPathBytes:
			return bad(fmt.Sprintf("the path is longer than %d bytes", maxPathBytes))
		case strings.IndexByte(rest, 0) >= 0:
			return bad("the path has a NUL byte")
		}
		return Endpoint{Kind: Unix, Path: rest}, nil
	}
	return bad(fmt.Sprintf("unknown kind %q", kind))
}

// ParseList parses every entry of ss (duplicates collapse). Errors: an
// entry Parse refuses; more than Max distinct endpoints.
func ParseList(ss []string) ([]Endpoint, error) {
	var out []Endpoint
	for _, s := range ss {
		e, err := Parse(s)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(out, func(o Endpoint) bool {
			return o.Path == e.Path && o.Kind == e.Kind && o.Addr == e.Addr && o.Port == e.Port
		}) {
			out = append(out, e)
		}
	}
	if len(out) > Max {
		return nil, fmt.Errorf("%w: %d endpoints, at most %d", ErrBad, len(out), Max)
	}
	return out, nil
}

// SplitAnnotation splits a comma-separated list (the annotation's form);
// blanks around entries are trimmed, an empty entry is an error.
func SplitAnnotation(v string) ([]string, error) {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%w: empty entry in %q", ErrBad, v)
		}
		parts[i] = p
	}
	return parts, nil
}

// String gives the endpoint in Parse's syntax; a resolved unix endpoint
// without a path (read back from the kernel) as unix:dev=MAJ:MIN,ino=N.
func (e Endpoint) String() string {
	switch e.Kind {
	case TCP, UDP:
		return string(e.Kind) + ":" + netip.AddrPortFrom(e.Addr, e.Port).String()
	case Unix:
		if e.Path == "" {
			return fmt.Sprintf("unix:dev=%d:%d,ino=%d", e.Dev>>20, e.Dev&(1<<20-1), e.Ino)
		}
		return "unix:" + e.Path
	}
	return "?"
}

// Same reports whether a and b are the same endpoint to the kernel: kind
// and address and port, or kind and socket file identity (a unix path is
// only a name).
func Same(a, b Endpoint) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Kind == Unix {
		return a.Dev == b.Dev && a.Ino == b.Ino && a.Ctime == b.Ctime
	}
	return a.Addr == b.Addr && a.Port == b.Port
}

// Intersect returns the endpoints of a that b lists too (Same), in a's
// order: the meet of two lists (a nested registration under a parent).
func Intersect(a, b []Endpoint) []Endpoint {
	out := []Endpoint{}
	for _, e := range a {
		if slices.ContainsFunc(b, func(o Endpoint) bool { return Same(e, o) }) {
			out = append(out, e)
		}
	}
	return out
}

// Strings gives every endpoint's String.
func Strings(es []Endpoint) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.String()
	}
	return out
}
