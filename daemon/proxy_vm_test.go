package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// The probe proxy-get SOCKET URL asks the egress proxy on the unix socket
// SOCKET for URL (absolute-form) and reports "STATUS REASON" in Out.
func init() {
	probe.Register("proxy-get", func(r *probe.Result, a []string) {
		tr := &http.Transport{
			Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", a[0])
			},
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Get(a[1])
		if !r.Require(err, "request") {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.Out = fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Enforcerd-Reason"))
	})
}

// TestVMDaemonProxyNarrowsPerContainer: under the daemon, the proxy places
// a client in its registered container and applies the container's
// proxy_allow on top of the global list; a client outside any container
// gets the global list. Audit lines name the container.
func TestVMDaemonProxyNarrowsPerContainer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "model") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	pdir := t.TempDir()
	sock, paudit := filepath.Join(pdir, "proxy.sock"), filepath.Join(pdir, "proxy.jsonl")
	e := newVMEnvAnyLSM(t, "", "allow_partial: true\n", fmt.Sprintf(
		"proxy:\n  enabled: true\n  allow_domains: [a.example.com, b.example.com]\n  allow_ports: [%s]\n"+
			"  allow_private: [127.0.0.1]\n  resolve: [a.example.com=127.0.0.1, b.example.com=127.0.0.1]\n"+
			"  socket: %s\n  audit: %s\n", port, sock, paudit))
	if pin, shared := vmtest.PinDir("daemon-test"); !shared {
		defer os.RemoveAll(pin)
	}
	e.startDaemon()
	defer e.stopDaemon(t.Failed())

	group := "/vmtest-runtime/px1"
	cg, err := cgroup.Create(e.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove(5 * time.Second)
	allow := "a.example.com"
	c := api.NewClient(e.sock, 10*time.Second)
	if _, err := c.Register(context.Background(), api.RegisterRequest{ID: "px1", Cgroup: group, ProxyAllow: &allow}); err != nil {
		t.Fatal(err)
	}
	defer c.Unregister(context.Background(), "px1")

	get := func(group, host string) string {
		t.Helper()
		p := startIn(t, e.mount, group, probe.Cmd{Op: "proxy-get", Args: []string{sock, "http://" + host + ":" + port + "/"}})
		res, err := p.Wait()
		if err != nil || res.Setup != "" {
			t.Fatalf("probe in %s for %s: %v %s", group, host, err, res)
		}
		return strings.TrimSpace(res.Out)
	}
	if got := get(group+"/worker", "b.example.com"); got != "403 container_domain_not_allowed" {
		t.Fatalf("container px1, b.example.com (not in its proxy_allow): %q", got)
	}
	if got := get(group+"/worker", "a.example.com"); got != "200" {
		t.Fatalf("container px1, a.example.com: %q", got)
	}
	if got := get("/vmtest-runtime/unregistered", "b.example.com"); got != "200" {
		t.Fatalf("no container, b.example.com (global list): %q", got)
	}
	if cg, err := cgroup.Open(e.mount, "/vmtest-runtime/unregistered"); err == nil {
		cg.Remove(5 * time.Second)
	}
	if cg, err := cgroup.Open(e.mount, group+"/worker"); err == nil {
		cg.Remove(5 * time.Second)
	}
	// The proxy writes a request's audit line when its handler returns,
	// after the client has the whole response: wait for the third line.
	var b []byte
	var lines []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ = os.ReadFile(paudit)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[0], `"reason":"container_domain_not_allowed"`) ||
		!strings.Contains(lines[0], `"container":"px1"`) || !strings.Contains(lines[0], `"cgroup":"`+group+`/worker"`) ||
		!strings.Contains(lines[1], `"container":"px1"`) || !strings.Contains(lines[2], `"container":""`) {
		t.Fatalf("proxy audit:\n%s", b)
	}
}
