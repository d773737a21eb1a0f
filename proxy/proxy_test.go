package proxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
)

// modelAPI is a local test server standing for the model API; it counts
// the connections it accepted.
func modelAPI(t *testing.T, tlsOn bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Host-Seen", r.Host)
		io.WriteString(w, "model says: "+string(b))
	})
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	if tlsOn {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s, &conns
}

func TestConnectToAllowedDomainReachesServer(t *testing.T) {
	srv, _ := modelAPI(t, true)
	port := portOf(t, srv.Listener.Addr().String())
	tp := startProxy(t, Config{
		AllowDomains: []string{"example.com"}, AllowPorts: []int{port},
		AllowPrivate: []string{"127.0.0.1"}, Resolve: []string{"example.com=127.0.0.1"},
	}, Options{})
	// httptest's certificate names example.com: TLS end to end, through
	// the tunnel, verified by the client.
	cli := srv.Client()
	tr := cli.Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})
	tr.TLSClientConfig.ServerName = "example.com"
	cli = &http.Client{Transport: tr}
	resp, err := cli.Post("https://Example.COM.:"+strconv.Itoa(port)+"/v1/chat", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tr.CloseIdleConnections()
	if resp.StatusCode != 200 || string(b) != "model says: hello" {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}
	rec := tp.audit.waitRecord(t, 1)
	if rec["decision"] != "allowed" || rec["reason"] != ReasonAllowed || rec["method"] != "CONNECT" ||
		rec["domain"] != "example.com" || rec["ip"] != "127.0.0.1" || rec["port"] != float64(port) {
		t.Fatalf("audit %v", rec)
	}
	if rec["bytes_up"].(float64) < 100 || rec["bytes_down"].(float64) < 100 {
		t.Fatalf("tunnel bytes not counted: %v", rec)
	}
	// Field by field: exactly the documented keys, each of its type.
	want := map[string]string{
		"time": "string", "level": "string", "msg": "string", "decision": "string", "reason": "string",
		"detail": "string", "method": "string", "domain": "string", "port": "number", "ip": "string",
		"bytes_up": "number", "bytes_down": "number", "duration_ms": "number", "listener": "string",
		"client_pid": "number", "cgroup_id": "number", "cgroup": "string", "container": "string",
	}
	for k, typ := range want {
		v, ok := rec[k]
		_, isNum := v.(float64)
		_, isStr := v.(string)
		if !ok || typ == "number" && !isNum || typ == "string" && !isStr {
			t.Errorf("audit field %s = %#v, want a %s", k, v, typ)
		}
	}
	if len(rec) != len(want) || rec["msg"] != "proxy" || rec["level"] != "INFO" || rec["listener"] != "tcp" ||
		rec["client_pid"] != float64(os.Getpid()) || rec["duration_ms"].(float64) <= 0 {
		t.Fatalf("audit %v", rec)
	}
}

func TestPlainHTTPToAllowedDomainIsForwarded(t *testing.T) {
	srv, _ := modelAPI(t, false)
	port := portOf(t, srv.Listener.Addr().String())
	tp := startProxy(t, Config{
		AllowDomains: []string{"*.example.org"}, AllowPorts: []int{port},
		AllowPrivate: []string{"api.example.org"}, Resolve: []string{"api.example.org=127.0.0.1"},
	}, Options{})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: tp.addr})}
	defer tr.CloseIdleConnections()
	cli := &http.Client{Transport: tr}
	for i := 1; i <= 2; i++ { // two requests: the client connection is kept alive
		resp, err := cli.Post("http://api.example.org:"+strconv.Itoa(port)+"/x", "text/plain", strings.NewReader("ping"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "model says: ping" || resp.Header.Get("X-Host-Seen") != "api.example.org:"+strconv.Itoa(port) {
			t.Fatalf("got %d %q host %q", resp.StatusCode, b, resp.Header.Get("X-Host-Seen"))
		}
		rec := tp.audit.waitRecord(t, i)
		if rec["decision"] != "allowed" || rec["method"] != "POST" || rec["domain"] != "api.example.org" ||
			rec["ip"] != "127.0.0.1" || rec["bytes_up"] != float64(4) || rec["bytes_down"] != float64(len("model says: ping")) {
			t.Fatalf("audit %v", rec)
		}
	}
}

func TestDisallowedDomainAndPortAreForbidden(t *testing.T) {
	srv, conns := modelAPI(t, false)
	port := portOf(t, srv.Listener.Addr().String())
	tp := startProxy(t, Config{
		AllowDomains: []string{"api.example.com", "*.example.org"}, AllowPorts: []int{port},
		AllowPrivate: []string{"127.0.0.1"},
		Resolve:      []string{"evil.example.net=127.0.0.1", "api.example.com=127.0.0.1", "example.org=127.0.0.1"},
	}, Options{})
	for i, tc := range []struct{ head, reason, domain string }{
		{connectTo("evil.example.net:" + strconv.Itoa(port)), ReasonDomainNotAllowed, "evil.example.net"},
		{connectTo("example.org:" + strconv.Itoa(port)), ReasonDomainNotAllowed, "example.org"}, // "*." is subdomains only
		{connectTo("api.example.com.evil.example.net:" + strconv.Itoa(port)), ReasonDomainNotAllowed, "api.example.com.evil.example.net"},
		{connectTo("api.example.com:22"), ReasonPortNotAllowed, "api.example.com"},
		{"GET http://evil.example.net:" + strconv.Itoa(port) + "/ HTTP/1.1\r\nHost: evil.example.net:" + strconv.Itoa(port) + "\r\n\r\n", ReasonDomainNotAllowed, "evil.example.net"},
		{"GET http://api.example.com:8080/ HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n", ReasonPortNotAllowed, "api.example.com"},
	} {
		resp, _, _ := tp.raw(t, tc.head)
		wantRefused(t, resp, 403, tc.reason)
		// The record is written after the refusal reaches the client, so
		// it is awaited before the next request: one record per request, in order.
		rec := tp.audit.waitRecord(t, i+1)
		if rec["decision"] != "denied" || rec["reason"] != tc.reason || rec["domain"] != tc.domain || rec["ip"] != "" {
			t.Fatalf("audit record %d: %v", i+1, rec)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the server saw %d connections", n)
	}
	if recs := tp.audit.records(t); len(recs) != 6 {
		t.Fatalf("audit %v", recs)
	}
}

func TestNonPublicDestinationsRefusedUnlessListed(t *testing.T) {
	srv, conns := modelAPI(t, false)
	port := portOf(t, srv.Listener.Addr().String())
	cfg := Config{
		AllowDomains: []string{"*.example.com", "127.0.0.1", "10.0.0.1", "169.254.169.254", "[::1]"},
		AllowPorts:   []int{port},
		Resolve: []string{"lo.example.com=127.0.0.1", "ten.example.com=10.0.0.1", "md.example.com=169.254.169.254",
			"cg.example.com=100.64.1.1", "ula.example.com=fd00:ec2::254", "mapped.example.com=::ffff:127.0.0.1",
			"nat64.example.com=64:ff9b::a00:1"},
	}
	tp := startProxy(t, cfg, Options{})
	for _, target := range []string{"lo.example.com", "ten.example.com", "md.example.com", "cg.example.com",
		"ula.example.com", "mapped.example.com", "nat64.example.com", "127.0.0.1", "10.0.0.1", "169.254.169.254", "[::1]"} {
		resp, _, _ := tp.raw(t, connectTo(target+":"+strconv.Itoa(port)))
		wantRefused(t, resp, 403, ReasonDestinationRefused)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the server saw %d connections", n)
	}

	// Listed explicitly: by name, by IP, by prefix. The metadata address
	// only by itself, never by a name or a prefix.
	cfg.AllowPrivate = []string{"lo.example.com", "10.0.0.0/8", "169.254.0.0/16", "md.example.com"}
	tp = startProxy(t, cfg, Options{})
	rc := &recordingConnect{}
	tp.p.dialer.connect = rc.connect
	resp, _, _ := tp.raw(t, connectTo("ten.example.com:"+strconv.Itoa(port)))
	wantRefused(t, resp, 502, ReasonDialFailed) // allowed, then the fake connect fails
	resp, _, _ = tp.raw(t, connectTo("md.example.com:"+strconv.Itoa(port)))
	wantRefused(t, resp, 403, ReasonDestinationRefused)
	resp, _, _ = tp.raw(t, connectTo("127.0.0.1:"+strconv.Itoa(port)))
	wantRefused(t, resp, 403, ReasonDestinationRefused) // the literal is not the listed name
	if got := rc.dialled(); len(got) != 1 || got[0].Addr().String() != "10.0.0.1" {
		t.Fatalf("dialled %v", got)
	}
	cfg.AllowPrivate = []string{"169.254.169.254", "lo.example.com"}
	tp = startProxy(t, cfg, Options{})
	rc = &recordingConnect{}
	tp.p.dialer.connect = rc.connect
	resp, _, _ = tp.raw(t, connectTo("md.example.com:"+strconv.Itoa(port)))
	wantRefused(t, resp, 502, ReasonDialFailed)
	if got := rc.dialled(); len(got) != 1 || got[0].Addr().String() != "169.254.169.254" {
		t.Fatalf("dialled %v", got)
	}
	// And the real thing: a listed name reaches the loopback server.
	tp = startProxy(t, cfg, Options{})
	resp, _, _ = tp.raw(t, "GET http://lo.example.com:"+strconv.Itoa(port)+"/ HTTP/1.1\r\nHost: lo.example.com:"+strconv.Itoa(port)+"\r\n\r\n")
	if resp.StatusCode != 200 || conns.Load() != 1 {
		t.Fatalf("listed name: %d, %d connections", resp.StatusCode, conns.Load())
	}
	// Origin-form routed by Host (curl --unix-socket).
	resp, _, _ = tp.raw(t, "GET /v1 HTTP/1.1\r\nHost: lo.example.com:"+strconv.Itoa(port)+"\r\n\r\n")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "model says: " {
		t.Fatalf("listed name: %d, %d connections", resp.StatusCode, conns.Load())
	}
}

func TestDNSRebindingRefusedAtDial(t *testing.T) {
	srv, conns := modelAPI(t, false)
	port := portOf(t, srv.Listener.Addr().String())
	// The first answer is public, every later one private: a proxy that
	// checked one lookup and dialled the name again would reach the server.
	res := &fakeResolver{f: func(call int, _ string) []netip.Addr {
		if call == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}}
	tp := startProxy(t, Config{AllowDomains: []string{"rebind.example.com"}, AllowPorts: []int{port}}, Options{Resolver: res})
	rc := &recordingConnect{}
	tp.p.dialer.connect = rc.connect
	resp, _, _ := tp.raw(t, connectTo("rebind.example.com:"+strconv.Itoa(port)))
	wantRefused(t, resp, 502, ReasonDialFailed)
	if got := rc.dialled(); len(got) != 1 || got[0].Addr().String() != "93.184.216.34" || res.calls != 1 {
		t.Fatalf("dialled %v after %d lookups", got, res.calls)
	}

	// The socket-level check: whatever address connect(2) is handed, a
	// private one is refused before the connection is made.
	tp.p.dialer.connect = func(ctx context.Context, _ netip.AddrPort, control func(string, string, syscall.RawConn) error) (net.Conn, error) {
		return netConnect(ctx, netip.MustParseAddrPort(srv.Listener.Addr().String()), control)
	}
	res.calls = 0
	resp, _, _ = tp.raw(t, connectTo("rebind.example.com:"+strconv.Itoa(port)))
	wantRefused(t, resp, 403, ReasonDestinationRefused)
	if n := conns.Load(); n != 0 {
		t.Fatalf("the server saw %d connections", n)
	}
	// Records are written when a request ends: the first request's may
	// come after the second's. Find the second by its reason.
	tp.audit.waitRecord(t, 2)
	var rec map[string]any
	for _, r := range tp.audit.records(t) {
		if r["reason"] == ReasonDestinationRefused {
			rec = r
		}
	}
	if rec["reason"] != ReasonDestinationRefused || !strings.Contains(rec["detail"].(string), "127.0.0.1 is loopback") {
		t.Fatalf("audit %v", rec)
	}
}

func TestBadRequestsAre400(t *testing.T) {
	tp := startProxy(t, Config{AllowDomains: []string{"api.example.com"}}, Options{})
	for _, head := range []string{
		"GET / HTTP/1.0\r\n\r\n",                                                     // origin-form without Host: nothing to route by
		"OPTIONS * HTTP/1.1\r\nHost: api.example.com\r\n\r\n",                        // asterisk-form
		"CONNECT api.example.com:443 HTTP/1.1\r\nHost: evil.example.net:443\r\n\r\n", // Host mismatch
		"CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:80\r\n\r\n",   // port mismatch
		"CONNECT api.example.com HTTP/1.1\r\n\r\n",                                   // no port
		"CONNECT user@api.example.com:443 HTTP/1.1\r\n\r\n",                          // userinfo
		"GET https://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n",     // https in absolute form
		"GET http://api.example.com/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",         // two Hosts
		"GET http://a%2eexample.com/ HTTP/1.1\r\n\r\n",                               // escaped name
		"CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",                              // zone
		"GET http://api.example.com/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",            // folded header
		"BLAH\r\n\r\n", // not HTTP
	} {
		resp, _, _ := tp.raw(t, head)
		wantRefused(t, resp, 400, ReasonBadRequest)
	}
}

func TestUnixSocketIdentifiesClient(t *testing.T) {
	srv, _ := modelAPI(t, false)
	port := portOf(t, srv.Listener.Addr().String())
	dir := t.TempDir()
	cfg := Config{Socket: dir + "/proxy.sock", SocketMode: "0666", AllowDomains: []string{"api.example.com"},
		AllowPorts: []int{port}, AllowPrivate: []string{"127.0.0.1"}, Resolve: []string{"api.example.com=127.0.0.1"}, DialTimeout: 2e9}
	pol, err := cfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	lns, cleanup, err := Listen(cfg, pol)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if fi, err := os.Stat(cfg.Socket); err != nil || fi.Mode().Perm() != 0o666 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	ab := &syncBuf{}
	p := New(pol, Options{Audit: slog.New(slog.NewJSONHandler(ab, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Serve(ctx, lns[0])
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", cfg.Socket)
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://api.example.com:" + strconv.Itoa(port) + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rec := ab.waitRecord(t, 1)
	group, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	cg, err := cgroup.Open(mount, group)
	if err != nil {
		t.Fatal(err)
	}
	if rec["listener"] != "unix" || rec["client_pid"] != float64(os.Getpid()) || rec["cgroup"] != group ||
		rec["cgroup_id"] != float64(cg.ID) || rec["container"] != "" {
		t.Fatalf("audit %v, want pid %d cgroup %s id %d", rec, os.Getpid(), group, cg.ID)
	}
}
