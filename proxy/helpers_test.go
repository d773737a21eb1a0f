package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/test/syncbuf"
)

// syncBuf is a goroutine-safe audit sink.
type syncBuf struct{ syncbuf.Buffer }

// records returns the audit lines written so far, decoded.
func (s *syncBuf) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// waitRecord waits for the n-th audit line (1-based).
func (s *syncBuf) waitRecord(t *testing.T, n int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if r := s.records(t); len(r) >= n {
			return r[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit record %d; have %v", n, s.records(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type testProxy struct {
	p     *Proxy
	addr  string // loopback TCP
	audit *syncBuf
}

// startProxy serves cfg on a loopback TCP listener until the test ends.
func startProxy(t *testing.T, cfg Config, o Options) *testProxy {
	t.Helper()
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	if cfg.Socket == "" && cfg.ListenTCP == "" {
		cfg.ListenTCP = "127.0.0.1:0"
	}
	pol, err := cfg.Compile()
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	ab := &syncBuf{}
	o.Audit = slog.New(slog.NewJSONHandler(ab, nil))
	o.DialTimeout = cfg.DialTimeout
	p := New(pol, o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return &testProxy{p: p, addr: ln.Addr().String(), audit: ab}
}

// raw sends a request head (and body) on a new connection and reads the
// response; the connection is returned for tunnels.
func (tp *testProxy) raw(t *testing.T, head string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(head)[0]})
	if err != nil {
		t.Fatalf("response to %q: %v", head, err)
	}
	return resp, c, br
}

// connectTo is a CONNECT request head for authority.
func connectTo(authority string) string {
	return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
}

// wantRefused checks a refusal's status and reason header.
func wantRefused(t *testing.T, resp *http.Response, status int, reason string) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get(ReasonHeader) != reason {
		t.Fatalf("got %d %s=%q, want %d %q", resp.StatusCode, ReasonHeader, resp.Header.Get(ReasonHeader), status, reason)
	}
}

// fakeResolver answers from a function of the call count.
type fakeResolver struct {
	mu    sync.Mutex
	calls int
	f     func(call int, host string) []netip.Addr
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.calls++
	n := r.calls
	r.mu.Unlock()
	ips := r.f(n, host)
	if len(ips) == 0 {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return ips, nil
}

// recordingConnect replaces the dialer's connect: it records every address
// and refuses to really connect anywhere but loopback through the real
// Control check.
type recordingConnect struct {
	mu    sync.Mutex
	addrs []netip.AddrPort
}

func (rc *recordingConnect) connect(ctx context.Context, addr netip.AddrPort, control func(string, string, syscall.RawConn) error) (net.Conn, error) {
	rc.mu.Lock()
	rc.addrs = append(rc.addrs, addr)
	rc.mu.Unlock()
	if err := control("tcp", addr.String(), nil); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("test: not connecting to %s", addr)
}

func (rc *recordingConnect) dialled() []netip.AddrPort {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]netip.AddrPort(nil), rc.addrs...)
}

// portOf is the port of a "host:port".
func portOf(t *testing.T, addr string) int {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return int(ap.Port())
}
