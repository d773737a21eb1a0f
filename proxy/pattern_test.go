package proxy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPatternsMatch(t *testing.T) {
	p, err := ParsePatterns([]string{"API.Example.com.", "*.example.org, 203.0.113.9", "[2001:db8::1]", "*.bücher.example"})
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
		if got := p.Match(tgt); got != ok {
			t.Errorf("Match(%s) = %v, want %v", host, got, ok)
		}
	}
	var zero Patterns
	if zero.Match(Target{Host: "api.example.com", Port: 443}) {
		t.Fatal("the zero Patterns matched")
	}
}

func TestBadPatternsRefused(t *testing.T) {
	for _, s := range []string{"", " ", "*", "*.", "**.x.com", "a.*.com", "*x.com", "x.*", "a..b", ".a.com", "a.com..",
		"-a.com", "a-.com", "a_b.com", "exa mple.com", "127.1", "1.2.3.4.5", "a.123", strings.Repeat("a", 64) + ".com",
		strings.Repeat("a.", 127) + "com", "a,,b", "http://a.com", "a.com:443", "fe80::1%eth0"} {
		if _, err := ParsePatterns([]string{s}); !errors.Is(err, ErrBadName) {
			t.Errorf("ParsePatterns(%q) = %v, want ErrBadName", s, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for ip, want := range map[string]string{
		"93.184.216.34": "", "2606:4700::1": "", "8.8.8.8": "",
		"127.0.0.1": ClassLoopback, "127.3.4.5": ClassLoopback, "::1": ClassLoopback, "::ffff:127.0.0.1": ClassLoopback,
		"10.1.2.3": ClassPrivate, "172.16.0.1": ClassPrivate, "192.168.1.1": ClassPrivate, "fd12::1": ClassPrivate,
		"169.254.1.1": ClassLinkLocal, "fe80::1": ClassLinkLocal, "100.64.0.1": ClassCGNAT, "100.127.255.255": ClassCGNAT,
		"224.0.0.1": ClassMulticast, "ff02::1": ClassMulticast, "0.0.0.0": ClassUnspecified, "::": ClassUnspecified,
		"169.254.169.254": ClassMetadata, "fd00:ec2::254": ClassMetadata, "100.100.100.200": ClassMetadata,
		"0.1.2.3": ClassReserved, "192.0.2.1": ClassReserved, "198.18.0.1": ClassReserved, "255.255.255.255": ClassReserved,
		"240.0.0.1": ClassReserved, "2001:db8::1": ClassReserved,
		"64:ff9b::a00:1": ClassEmbedded, "2002:a00:1::": ClassEmbedded, "2001::1": ClassEmbedded,
	} {
		if got := Classify(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", ip, got, want)
		}
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

func TestConfigErrorsNameTheSetting(t *testing.T) {
	ok := Config{AllowDomains: []string{"a.com"}, Socket: "/run/x.sock", DialTimeout: 1}
	if _, err := ok.Compile(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"allow-domain":  func(c *Config) { c.AllowDomains = []string{"a b"} },
		"allow-port":    func(c *Config) { c.AllowPorts = []int{70000} },
		"allow-private": func(c *Config) { c.AllowPrivate = []string{"10.0.0.0/33x"} },
		"resolve":       func(c *Config) { c.Resolve = []string{"a.com"} },
		"socket-mode":   func(c *Config) { c.SocketMode = "999" },
		"socket:":       func(c *Config) { c.Socket = "rel.sock" },
		"listen-tcp":    func(c *Config) { c.ListenTCP = "10.0.0.1:80" },
		"no listener":   func(c *Config) { c.Socket = "" },
		"audit":         func(c *Config) { c.Audit = "rel.log" },
		"dial-timeout":  func(c *Config) { c.DialTimeout = 0 },
	} {
		c := ok
		mut(&c)
		if _, err := c.Compile(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAllReasonsHaveStatus(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range AllReasons {
		if seen[r] {
			t.Fatalf("duplicate %s", r)
		}
		seen[r] = true
		if s := statusOf(r); (r == ReasonAllowed) != (s == 200) {
			t.Errorf("%s: status %d", r, s)
		}
	}
	if len(AllReasons) != 11 {
		t.Fatalf("AllReasons has %d entries: update it, statusOf and the docs together", len(AllReasons))
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
