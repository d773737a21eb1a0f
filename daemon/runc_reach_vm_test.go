package daemon_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/test/probe"
)

// oci-reach is the entrypoint of a runc container that tries, in order,
// each "what=kind:target" of its arguments and prints one line "what=ok" or
// "what=<error>" for each: kind "create" creates the file target, "unix" and "tcp"
// connect to a unix socket path or an IPv4 address:port and write one byte.
func init() {
	probe.Register("oci-reach", func(r *probe.Result, a []string) {
		for _, arg := range a {
			what, spec, _ := strings.Cut(arg, "=")
			kind, target, _ := strings.Cut(spec, ":")
			var err error
			switch kind {
			case "create":
				var f *os.File
				if f, err = os.Create(target); err == nil {
					f.Close()
				}
			case "unix", "tcp":
				var c net.Conn
				if c, err = net.Dial(kind, target); err == nil {
					_, err = c.Write([]byte{1})
					c.Close()
				}
			default:
				err = fmt.Errorf("unknown kind %q", kind)
			}
			res := "ok"
			if err != nil {
				res = err.Error()
			}
			fmt.Printf("%s=%s\n", what, res)
		}
	})
}

// countingListener accepts connections on l and counts those that sent a
// byte (the probe writes one after connecting).
func countingListener(l net.Listener) *atomic.Int64 {
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := c.Read(make([]byte, 1)); err == nil {
					n.Add(1)
				}
			}()
		}
	}()
	return &n
}

// TestVMRuncWriteRootsAndEndpoints: the annotations enforcerd.io/write-roots
// and enforcerd.io/allow-connect name paths inside the container, and the
// hook resolves them inside its root (the bundle's rootfs), not on the host.
// With Debian's runc, tri-state: (a) under network=true,write=true every
// attempt succeeds (a file in /work and in /, a connect to each of two
// unix sockets and two TCP listeners); (b) under network=false,write=false
// with /work writable and one unix socket and one TCP listener allowed,
// only those succeed and every other attempt fails with EPERM; (c) the
// denied file is absent and the unlisted listeners counted nothing.
func TestVMRuncWriteRootsAndEndpoints(t *testing.T) {
	e := startRuncDaemon(t, "127.0.0.1:19467")
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}

	listenTCP := func() (string, *atomic.Int64) {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().String(), countingListener(l)
	}
	tcpA, hitsA := listenTCP()
	tcpB, hitsB := listenTCP()

	// container builds a bundle whose rootfs has /work and /sock with two
	// listening unix sockets, and whose entrypoint is this test binary.
	type ctr struct {
		bundle       string
		unixA, unixB *atomic.Int64
	}
	container := func(id string, annotations map[string]string) ctr {
		args := []string{"in=create:/work/in", "out=create:/out",
			"unixA=unix:/sock/a.sock", "unixB=unix:/sock/b.sock", "tcpA=tcp:" + tcpA, "tcpB=tcp:" + tcpB}
		b := runcBundleProcess(t, e, id, []string{"/bin/entry"}, append([]string{"PATH=/bin"}, probe.Env("oci-reach", args...)...), annotations)
		if err := os.WriteFile(filepath.Join(b, "rootfs", "bin", "entry"), self, 0o755); err != nil {
			t.Fatal(err)
		}
		c := ctr{bundle: b}
		for _, d := range []string{"work", "sock"} {
			if err := os.MkdirAll(filepath.Join(b, "rootfs", d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, n := range map[string]**atomic.Int64{"a.sock": &c.unixA, "b.sock": &c.unixB} {
			l, err := net.Listen("unix", filepath.Join(b, "rootfs", "sock", name))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			*n = countingListener(l)
		}
		return c
	}
	// outcomes maps each attempt of the output to its result.
	outcomes := func(out string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	all := []string{"in", "out", "unixA", "unixB", "tcpA", "tcpB"}
	exists := func(b, name string) bool {
		_, err := os.Lstat(filepath.Join(b, "rootfs", name))
		return err == nil
	}

	// (a) control.
	c := container("reach-ctl", map[string]string{"enforcerd.io/ceiling": "network=true,write=true"})
	code, out := runRunc(t, e, "reach-ctl", c.bundle)
	got := outcomes(out)
	for _, k := range all {
		if got[k] != "ok" {
			t.Fatalf("control (network=true,write=true): %s: %q, want ok; runc exit %d; output:\n%s", k, got[k], code, out)
		}
	}
	if code != 0 || !exists(c.bundle, "work/in") || !exists(c.bundle, "out") {
		t.Fatalf("control (network=true,write=true): runc exit %d, files created: %v %v; output:\n%s", code, exists(c.bundle, "work/in"), exists(c.bundle, "out"), out)
	}
	waitCount(t, "control: tcp listener A", hitsA, 1)
	waitCount(t, "control: tcp listener B", hitsB, 1)
	waitCount(t, "control: unix socket a", c.unixA, 1)
	waitCount(t, "control: unix socket b", c.unixB, 1)

	// (b) enforced with one writable root and two allowed endpoints.
	c = container("reach-ro", map[string]string{
		"enforcerd.io/ceiling":       "network=false,write=false",
		"enforcerd.io/write-roots":   "/work",
		"enforcerd.io/allow-connect": "unix:/sock/a.sock,tcp:" + tcpA,
	})
	code, out = runRunc(t, e, "reach-ro", c.bundle)
	t.Logf("enforced: runc exit %d: %s", code, out)
	got = outcomes(out)
	for _, k := range []string{"in", "unixA", "tcpA"} {
		if got[k] != "ok" {
			t.Errorf("enforced: listed %s: %q, want ok", k, got[k])
		}
	}
	for _, k := range []string{"out", "unixB", "tcpB"} {
		if !strings.HasSuffix(got[k], "operation not permitted") {
			t.Errorf("BYPASS: enforced: unlisted %s: %q, want EPERM", k, got[k])
		}
	}
	if code != 0 {
		t.Errorf("enforced: runc exit %d, want 0 (the entrypoint runs and reports)", code)
	}
	// (c) effects: the listed ones happened, the others did not.
	if !exists(c.bundle, "work/in") {
		t.Error("enforced: /work/in (beneath the writable root) was not created")
	}
	if exists(c.bundle, "out") {
		t.Error("BYPASS: enforced: /out (outside the writable root) was created")
	}
	waitCount(t, "enforced: tcp listener A (listed)", hitsA, 2)
	waitCount(t, "enforced: unix socket a (listed)", c.unixA, 1)
	if n := hitsB.Load(); n != 1 {
		t.Errorf("BYPASS: enforced: the unlisted tcp listener got %d connections in all, want 1 (the control's)", n)
	}
	if n := c.unixB.Load(); n != 0 {
		t.Errorf("BYPASS: enforced: the unlisted unix socket got %d connections", n)
	}
}

// waitCount waits up to 10 s for n to reach want, then fails the test
// naming what if it has not (or went past it).
func waitCount(t *testing.T, what string, n *atomic.Int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := n.Load(); got != want {
		t.Errorf("%s: %d connections, want %d", what, got, want)
	}
}
