package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrBadName: a host name or domain pattern is malformed.
var ErrBadName = errors.New("malformed host name")

// hostProfile maps a name for lookup (UTS #46: case folding, width
// mapping, Unicode to Punycode) and enforces the DNS lengths and STD3
// letters-digits-hyphen labels, so "Bücher.Example." and
// "xn--bcher-kva.example" are one name.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.VerifyDNSLength(true),
	idna.StrictDomainName(true),
)

// NormalizeHost returns the canonical form of a DNS host name: ASCII
// (IDNA/Punycode), lower case, without the trailing dot of a fully
// qualified name. Rules (RFC 1035, RFC 5891 lookup): 1-63 byte labels of
// letters, digits and inner hyphens, at most 253 bytes in all, and a last
// label that is not all digits and labels that are not all inet_aton(3)
// numbers (so "127.1", "2130706433" or "0x7f000001" are never taken for
// names: IP addresses are written as IP literals). Errors wrap
// ErrBadName.
func NormalizeHost(s string) (string, error) {
	in := s
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", fmt.Errorf("%w: %q is empty", ErrBadName, in)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %q is not UTF-8", ErrBadName, in)
	}
	a, err := hostProfile.ToASCII(s)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrBadName, in, err)
	}
	a = strings.ToLower(a)
	// The ASCII form must be its own canonical form, so a stored or
	// logged name always parses back to itself.
	if again, err := hostProfile.ToASCII(a); err != nil || again != a {
		return "", fmt.Errorf("%w: %q has no stable ASCII form", ErrBadName, in)
	}
	if len(a) > 253 {
		return "", fmt.Errorf("%w: %q is longer than 253 bytes", ErrBadName, in)
	}
	labels := strings.Split(a, ".")
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 {
			return "", fmt.Errorf("%w: %q has an empty or over-long label", ErrBadName, in)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%w: %q: label %q starts or ends with a hyphen", ErrBadName, in, l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("%w: %q: byte %q is not a letter, digit or hyphen", ErrBadName, in, c)
			}
		}
	}
	if allDigits(labels[len(labels)-1]) || inetAtonForm(labels) {
		return "", fmt.Errorf("%w: %q is a numeric address form, not a name (write an IP address as a dotted-quad or bracketed IPv6 literal)", ErrBadName, in)
	}
	return a, nil
}

// inetAtonForm: every label is a number as inet_aton(3) reads it
// (decimal, 0x hex, octal), so a C resolver would take the name for an
// address ("0x7f000001", "0x7f.1").
func inetAtonForm(labels []string) bool {
	if len(labels) > 4 {
		return false
	}
	for _, l := range labels {
		h, ok := strings.CutPrefix(l, "0x")
		if !ok {
			if !allDigits(l) {
				return false
			}
			continue
		}
		for i := 0; i < len(h); i++ {
			c := h[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Patterns is a domain allow list. A pattern is one of
//
//   - "api.example.com": exactly that name;
//   - "*.example.org": every name strictly below example.org
//     ("a.example.org", "a.b.example.org"), not example.org itself;
//   - an IP literal ("203.0.113.7", "2001:db8::1" or "[2001:db8::1]"):
//     a request naming exactly that address.
//
// Names are compared in their NormalizeHost form, so matching is
// case-insensitive and blind to IDNA spelling and a trailing dot. The zero
// value matches nothing.
type Patterns struct {
	exact    map[string]bool
	suffixes []string // ".example.org"
	ips      map[netip.Addr]bool
	text     []string // the canonical patterns, in order
}

// ParsePatterns parses domain patterns. Each element may itself be a
// comma-separated list; blanks around commas are ignored, an empty pattern
// is an error. Errors wrap ErrBadName and name the pattern.
func ParsePatterns(list []string) (Patterns, error) {
	p := Patterns{exact: map[string]bool{}, ips: map[netip.Addr]bool{}}
	for _, item := range list {
		for _, raw := range strings.Split(item, ",") {
			s := strings.TrimSpace(raw)
			canon, err := p.add(s)
			if err != nil {
				return Patterns{}, fmt.Errorf("domain pattern %q: %w", s, err)
			}
			p.text = append(p.text, canon)
		}
	}
	return p, nil
}

func (p *Patterns) add(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty pattern", ErrBadName)
	}
	if ip, ok := ParseIPLiteral(s); ok {
		p.ips[ip] = true
		return ip.String(), nil
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		if strings.Contains(rest, "*") {
			return "", fmt.Errorf("%w: only one leading \"*.\" wildcard is allowed", ErrBadName)
		}
		n, err := NormalizeHost(rest)
		if err != nil {
			return "", err
		}
		p.suffixes = append(p.suffixes, "."+n)
		return "*." + n, nil
	}
	if strings.Contains(s, "*") {
		return "", fmt.Errorf("%w: a wildcard may only be a leading \"*.\" label", ErrBadName)
	}
	n, err := NormalizeHost(s)
	if err != nil {
		return "", err
	}
	p.exact[n] = true
	return n, nil
}

// ParseIPLiteral accepts an IPv4 or IPv6 address, the latter optionally
// in brackets, without a zone, as a pattern spells one. It returns the
// address unmapped (an IPv4-mapped IPv6 address is its IPv4 address); ok
// is false for anything else.
func ParseIPLiteral(s string) (netip.Addr, bool) {
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// Strings returns the canonical patterns in the order given.
func (p Patterns) Strings() []string { return append([]string(nil), p.text...) }

// Len is the number of patterns.
func (p Patterns) Len() int { return len(p.text) }

// MatchName reports whether a NormalizeHost name is allowed.
func (p Patterns) MatchName(name string) bool {
	if p.exact[name] {
		return true
	}
	for _, suf := range p.suffixes {
		if len(name) > len(suf) && strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// MatchIP reports whether an IP literal target is listed.
func (p Patterns) MatchIP(ip netip.Addr) bool { return p.ips[ip.Unmap()] }

// ParseAllowList parses a container's proxy_allow value (API field,
// annotation enforcerd.io/proxy-allow): comma-separated domain patterns, or
// "none" for no domain at all. It returns the canonical patterns ([] for
// none). Errors wrap ErrBadName and name the pattern.
func ParseAllowList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "none" {
		return []string{}, nil
	}
	if len(s) > 4096 {
		return nil, fmt.Errorf("%w: proxy allow list longer than 4096 bytes", ErrBadName)
	}
	p, err := ParsePatterns([]string{s})
	if err != nil {
		return nil, err
	}
	return p.Strings(), nil
}
