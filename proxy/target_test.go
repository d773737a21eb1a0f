package proxy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/egress"
)

func TestPatternsMatch(t *testing.T) {
	p, err := egress.ParsePatterns([]string{"API.Example.com.", "*.example.org, 203.0.113.9", "[2001:db8::1]", "*.bücher.example"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api.example.com", "*.example.org", "203.0.113.9", "2001:db8::1", "*.xn--bcher-kva.example"}
	if strings.Join(p.Strings(), " ") != strings.Join(want, " ") {
		t.Fatalf("canonical %v", p.Strings())
	}
	for host, ok := range map[string]bool{
		"api.example.com": true, "API.EXAMPLE.COM.": true, "x.api.example.com": false, "example.com": false,
		"a.example.org": true, "a.b.example.org": true, "example.org": false, "aexample.org": false,
		"x.example.org.evil.net": false, "203.0.113.9": true, "[2001:db8::1]": true, "[2001:db8::2]": false,
		"shop.Bücher.example": true, "shop.xn--bcher-kva.example": true, "xn--bcher-kva.example": false,
	} {
		tgt, err := ParseAuthority(host, 443)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if got := tgt.AllowedBy(p); got != ok {
			t.Errorf("Match(%s) = %v, want %v", host, got, ok)
		}
	}
	var zero egress.Patterns
	if (Target{Host: "api.example.com", Port: 443}).AllowedBy(zero) {
		t.Fatal("the zero egress.Patterns matched")
	}
}

func TestParseRequestTarget(t *testing.T) {
	for _, tc := range []struct {
		method, uri string
		hosts       []string
		want        string // authority, or "" for an error
	}{
		{"CONNECT", "api.example.com:443", nil, "api.example.com:443"},
		{"CONNECT", "API.example.com.:443", []string{"api.example.com:443"}, "api.example.com:443"},
		{"CONNECT", "api.example.com:443", []string{"api.example.com"}, "api.example.com:443"},
		{"CONNECT", "[::1]:443", nil, "[::1]:443"},
		{"CONNECT", "[::ffff:10.0.0.1]:443", nil, "10.0.0.1:443"},
		{"GET", "http://api.example.com/x?y", nil, "api.example.com:80"},
		{"GET", "HTTP://api.example.com:8080/", []string{"api.example.com:8080"}, "api.example.com:8080"},
		{"GET", "/v1/x", []string{"api.example.com:8080"}, "api.example.com:8080"},
		{"CONNECT", "api.example.com", nil, ""},
		{"CONNECT", "api.example.com:0", nil, ""},
		{"CONNECT", "api.example.com:65536", nil, ""},
		{"CONNECT", "api.example.com:+443", nil, ""},
		{"CONNECT", "api.example.com:443", []string{"other.example.com:443"}, ""},
		{"CONNECT", "api.example.com:443", []string{"api.example.com:443", "api.example.com:443"}, ""},
		{"CONNECT", "::1:443", nil, ""},
		{"CONNECT", "[::1%lo]:443", nil, ""},
		{"CONNECT", "a@api.example.com:443", nil, ""},
		{"GET", "https://api.example.com/", nil, ""},
		{"GET", "ftp://api.example.com/", nil, ""},
		{"GET", "http://u:p@api.example.com/", nil, ""},
		{"GET", "http://api.example.com/", []string{"evil.example.com"}, ""},
		{"GET", "/x", nil, ""},
		{"GET", "*", []string{"a.com"}, ""},
		{"GET", "http://0x7f000001/", nil, ""},
		{"GET", "http://2130706433/", nil, ""},
	} {
		got, err := ParseRequestTarget(tc.method, tc.uri, tc.hosts)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s %s %v: accepted as %s", tc.method, tc.uri, tc.hosts, got.Authority())
		case tc.want == "" && !errors.Is(err, ErrBadTarget):
			t.Errorf("%s %s %v: %v, want ErrBadTarget", tc.method, tc.uri, tc.hosts, err)
		case tc.want != "" && (err != nil || got.Authority() != tc.want):
			t.Errorf("%s %s %v: %s, %v, want %s", tc.method, tc.uri, tc.hosts, got.Authority(), err, tc.want)
		}
	}
}

func FuzzParseRequestTarget(f *testing.F) {
	f.Add("CONNECT", "api.example.com:443", "api.example.com:443")
	f.Add("GET", "http://api.example.com/x", "")
	f.Add("GET", "/x", "api.example.com")
	f.Add("CONNECT", "[::1]:443", "")
	f.Add("GET", "http://[fe80::1%25eth0]/", "")
	f.Add("CONNECT", "a@b:1", "b:1")
	f.Fuzz(func(t *testing.T, method, uri, host string) {
		var hosts []string
		if host != "" {
			hosts = []string{host}
		}
		tgt, err := ParseRequestTarget(method, uri, hosts)
		if err != nil {
			if !errors.Is(err, ErrBadTarget) {
				t.Fatalf("error %v does not wrap ErrBadTarget", err)
			}
			return
		}
		if tgt.Port == 0 || tgt.Host == "" {
			t.Fatalf("accepted %q %q as %+v", method, uri, tgt)
		}
		// The target's authority is itself a valid authority naming the
		// same place.
		again, err := ParseAuthority(tgt.Authority(), 0)
		if err != nil || again != tgt {
			t.Fatalf("%q: authority %q reparses to %+v, %v", uri, tgt.Authority(), again, err)
		}
		if !tgt.IP.IsValid() {
			if _, err := netip.ParseAddr(tgt.Host); err == nil {
				t.Fatalf("%q: an address taken as a name", uri)
			}
		}
	})
}
