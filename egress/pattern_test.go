package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestBadPatternsRefused(t *testing.T) {
	for _, s := range []string{"", " ", "*", "*.", "**.x.com", "a.*.com", "*x.com", "x.*", "a..b", ".a.com", "a.com..",
		"-a.com", "a-.com", "a_b.com", "exa mple.com", "127.1", "1.2.3.4.5", "a.123", strings.Repeat("a", 64) + ".com",
		strings.Repeat("a.", 127) + "com", "a,,b", "http://a.com", "a.com:443", "fe80::1%eth0"} {
		if _, err := ParsePatterns([]string{s}); !errors.Is(err, ErrBadName) {
			t.Errorf("ParsePatterns(%q) = %v, want ErrBadName", s, err)
		}
	}
}

func FuzzParsePatterns(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.org", "a.*.b", "Bücher.example.", "[::1]", "10.0.0.1", "*", "a,b", "xn--bcher-kva.example", "127.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePatterns([]string{s})
		if err != nil {
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("error %v does not wrap ErrBadName", err)
			}
			return
		}
		// Canonical forms parse to themselves.
		q, err := ParsePatterns(p.Strings())
		if err != nil || strings.Join(q.Strings(), ",") != strings.Join(p.Strings(), ",") {
			t.Fatalf("%q: canonical %v reparses to %v, %v", s, p.Strings(), q.Strings(), err)
		}
		for _, c := range p.Strings() {
			if strings.HasPrefix(c, "*.") {
				if p.MatchName(c[2:]) && !p.exact[c[2:]] && !p.MatchName("x."+c[2:]) {
					t.Fatalf("%q: a wildcard matched its base only", s)
				}
				continue
			}
			if c != strings.ToLower(c) {
				t.Fatalf("%q: canonical %q not lower case", s, c)
			}
		}
	})
}

// TestPatternsMatchCanonicalForms: names match in their NormalizeHost form,
// a wildcard only strictly below its base, an IP literal by its unmapped
// address.
func TestPatternsMatchCanonicalForms(t *testing.T) {
	p, err := ParsePatterns([]string{"API.Example.com.", "*.example.org, 203.0.113.9", "[2001:db8::1]", "*.bücher.example"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api.example.com", "*.example.org", "203.0.113.9", "2001:db8::1", "*.xn--bcher-kva.example"}
	if strings.Join(p.Strings(), " ") != strings.Join(want, " ") || p.Len() != len(want) {
		t.Fatalf("canonical %v", p.Strings())
	}
	for name, ok := range map[string]bool{
		"api.example.com": true, "x.api.example.com": false, "example.com": false,
		"a.example.org": true, "a.b.example.org": true, "example.org": false, "aexample.org": false,
		"shop.xn--bcher-kva.example": true, "xn--bcher-kva.example": false,
	} {
		if got := p.MatchName(name); got != ok {
			t.Errorf("MatchName(%s) = %v, want %v", name, got, ok)
		}
	}
	for ip, ok := range map[string]bool{"203.0.113.9": true, "::ffff:203.0.113.9": true, "2001:db8::1": true, "2001:db8::2": false} {
		if got := p.MatchIP(netip.MustParseAddr(ip)); got != ok {
			t.Errorf("MatchIP(%s) = %v, want %v", ip, got, ok)
		}
	}
	var zero Patterns
	if zero.MatchName("api.example.com") || zero.MatchIP(netip.MustParseAddr("203.0.113.9")) {
		t.Fatal("the zero Patterns matched")
	}
}

func TestParseAllowList(t *testing.T) {
	if l, err := ParseAllowList(" none "); err != nil || l == nil || len(l) != 0 {
		t.Fatalf("none: %v %v", l, err)
	}
	if l, err := ParseAllowList("A.com, *.b.org"); err != nil || strings.Join(l, ",") != "a.com,*.b.org" {
		t.Fatalf("%v %v", l, err)
	}
	for _, s := range []string{"", "a.com,", strings.Repeat("a,", 2049)} {
		if _, err := ParseAllowList(s); !errors.Is(err, ErrBadName) {
			t.Errorf("ParseAllowList(%q) = %v, want ErrBadName", s, err)
		}
	}
}

func TestParseIPLiteral(t *testing.T) {
	for s, want := range map[string]string{"10.0.0.1": "10.0.0.1", "[::1]": "::1", "::ffff:10.0.0.1": "10.0.0.1"} {
		if ip, ok := ParseIPLiteral(s); !ok || ip.String() != want {
			t.Errorf("ParseIPLiteral(%q) = %v %v, want %s", s, ip, ok, want)
		}
	}
	for _, s := range []string{"", "fe80::1%eth0", "[10.0.0.1", "a.com", "127.1"} {
		if _, ok := ParseIPLiteral(s); ok {
			t.Errorf("ParseIPLiteral(%q) accepted", s)
		}
	}
}
