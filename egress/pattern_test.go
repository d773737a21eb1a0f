package egress

import (
	"errors"
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
