package endpoint

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Endpoint
	}{
		{"tcp:127.0.0.1:80", Endpoint{Kind: TCP, Addr: netip.MustParseAddr("127.0.0.1"), Port: 80}},
		{"udp:10.0.0.53:53", Endpoint{Kind: UDP, Addr: netip.MustParseAddr("10.0.0.53"), Port: 53}},
		{"tcp:[::1]:8080", Endpoint{Kind: TCP, Addr: netip.MustParseAddr("::1"), Port: 8080}},
		{"tcp:[::ffff:127.0.0.1]:80", Endpoint{Kind: TCP, Addr: netip.MustParseAddr("127.0.0.1"), Port: 80}},
		{"udp:[2001:db8::1]:65535", Endpoint{Kind: UDP, Addr: netip.MustParseAddr("2001:db8::1"), Port: 65535}},
		{"unix:/run/x.sock", Endpoint{Kind: Unix, Path: "/run/x.sock"}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if c.want.Kind != Unix && !strings.Contains(c.in, "::ffff:") {
			if s := got.String(); s != c.in {
				t.Errorf("String of %q = %q", c.in, s)
			}
		}
	}
	for _, in := range []string{
		"", "tcp", "tcp:", "tcp:127.0.0.1", "tcp:127.0.0.1:0", "tcp:127.0.0.1:65536",
		"tcp:localhost:80", "tcp:::1:80", "tcp:[127.0.0.1]:80", "tcp:[fe80::1%eth0]:80",
		"sctp:127.0.0.1:80", "TCP:127.0.0.1:80", "unix:", "unix:relative.sock",
		"unix:@abstract", "unix:/a\x00b", "tcp: 127.0.0.1:80", "udp:1.2.3.4:-1",
	} {
		if _, err := Parse(in); !errors.Is(err, ErrBad) {
			t.Errorf("Parse(%q): %v, want ErrBad", in, err)
		}
	}
}

func TestParseList(t *testing.T) {
	var many []string
	for i := 1; i <= Max+1; i++ {
		many = append(many, "tcp:127.0.0.1:"+itoa(i))
	}
	if _, err := ParseList(many[:Max]); err != nil {
		t.Errorf("%d endpoints: %v", Max, err)
	}
	if _, err := ParseList(many); !errors.Is(err, ErrBad) {
		t.Errorf("%d endpoints: %v, want ErrBad", Max+1, err)
	}
	got, err := ParseList([]string{"tcp:127.0.0.1:80", "tcp:[::ffff:127.0.0.1]:80", "udp:127.0.0.1:80"})
	if err != nil || len(got) != 2 {
		t.Errorf("duplicates (a mapped address is the IPv4 one): %v, %v", got, err)
	}
	if _, err := SplitAnnotation("tcp:1.2.3.4:5,,unix:/x"); !errors.Is(err, ErrBad) {
		t.Errorf("empty entry: %v", err)
	}
	if p, err := SplitAnnotation(" tcp:1.2.3.4:5 , unix:/x"); err != nil || len(p) != 2 || p[0] != "tcp:1.2.3.4:5" {
		t.Errorf("SplitAnnotation: %q %v", p, err)
	}
}

func itoa(i int) string {
	return strconv.Itoa(i)
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eps, err := ParseList([]string{"unix:" + sock, "tcp:127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"/", ""} {
		got, err := Resolve(eps, root)
		if err != nil || got[0].Ino == 0 || got[1].Ino != 0 {
			t.Fatalf("Resolve(%q): %+v, %v", root, got, err)
		}
	}
	// Inside a root: /s.sock in dir is the same socket.
	in, err := Resolve([]Endpoint{{Kind: Unix, Path: "/s.sock"}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := Resolve(eps[:1], "/")
	if !Same(in[0], host[0]) {
		t.Errorf("inside the root %+v, on the host %+v", in[0], host[0])
	}
	// A symlink cannot leave the root.
	if err := os.Symlink(sock, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve([]Endpoint{{Kind: Unix, Path: "/escape"}}, dir); err == nil {
		t.Errorf("a symlink to a host path resolved inside the root")
	}
	if _, err := Resolve([]Endpoint{{Kind: Unix, Path: file}}, "/"); !errors.Is(err, ErrNotSocket) {
		t.Errorf("a regular file: %v, want ErrNotSocket", err)
	}
	if _, err := Resolve([]Endpoint{{Kind: Unix, Path: filepath.Join(dir, "missing")}}, "/"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing path: %v, want ErrNotExist", err)
	}
	// Re-created: another identity.
	l.Close()
	l2, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	again, _ := Resolve(eps[:1], "/")
	if Same(again[0], host[0]) {
		t.Errorf("a socket re-created at the same path has the same identity %+v", again[0])
	}
}

func TestIntersect(t *testing.T) {
	a, _ := ParseList([]string{"tcp:10.0.0.1:1", "tcp:10.0.0.2:2"})
	b, _ := ParseList([]string{"tcp:10.0.0.2:2", "tcp:10.0.0.3:3", "udp:10.0.0.1:1"})
	got := Intersect(b, a)
	if len(got) != 1 || got[0].String() != "tcp:10.0.0.2:2" {
		t.Errorf("Intersect = %v, want only tcp:10.0.0.2:2", got)
	}
	if got := Intersect(a, nil); got == nil || len(got) != 0 {
		t.Errorf("Intersect with nothing = %#v, want empty, not nil", got)
	}
}

// FuzzParse: Parse never panics; what it accepts prints back to itself
// (String then Parse is the identity) and has a nonzero port or an
// absolute path.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"tcp:127.0.0.1:80", "udp:[::1]:53", "unix:/run/a.sock", "tcp:[::ffff:1.2.3.4]:9", "tcp:1.2.3.4:0", "x:y", "unix:@a", "tcp:[fe80::1%lo]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("Parse(%q): %v does not wrap ErrBad", s, err)
			}
			return
		}
		switch e.Kind {
		case TCP, UDP:
			if e.Port == 0 || !e.Addr.IsValid() || e.Addr.Is4In6() || e.Addr.Zone() != "" {
				t.Fatalf("Parse(%q) accepted %+v", s, e)
			}
		case Unix:
			if !strings.HasPrefix(e.Path, "/") || strings.IndexByte(e.Path, 0) >= 0 {
				t.Fatalf("Parse(%q) accepted %+v", s, e)
			}
		default:
			t.Fatalf("Parse(%q): kind %q", s, e.Kind)
		}
		back, err := Parse(e.String())
		if err != nil || back != e {
			t.Fatalf("Parse(String(%+v)) = %+v, %v", e, back, err)
		}
	})
}
