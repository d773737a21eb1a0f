package proxy

// The egress proxy, attacked. A case that documents a confirmed weakness
// FAILS until it is closed.

import (
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cloud credential endpoints beyond the first four metadata addresses: allow_private
// with a link-local or ULA prefix (a cluster's pod network, a VPC's IPv6
// ULA range) lifts the refusal of every address in it, and only the four
// listed metadata addresses are kept back "by exact address only". The
// EKS Pod Identity agent (169.254.170.23, fd00:ec2::23) hands out the
// pod's AWS credentials over plain HTTP on every EKS node; Tencent Cloud's
// instance metadata (metadata.tencentyun.com) is 169.254.0.23. Under such
// a prefix they pass the address check like any pod or VPC address; they
// must be refused as cloud metadata unless listed by their exact address.
func TestAttackProxyMetadataByPrefix(t *testing.T) {
	cfg := Config{
		AllowDomains: []string{"api.example.com"},
		AllowPrivate: []string{"169.254.0.0/16", "fd00::/8"},
		ListenTCP:    "127.0.0.1:0",
		DialTimeout:  time.Second,
	}
	pol, err := cfg.Compile()
	if err != nil {
		t.Fatal(err)
	}
	// The control: the listed metadata address stays refused under the
	// same prefix.
	if c := pol.checkIP("", netip.MustParseAddr("169.254.169.254")); c != ClassMetadata {
		t.Fatalf("169.254.169.254 under allow_private 169.254.0.0/16: %q, want %q (control)", c, ClassMetadata)
	}
	for _, ip := range []string{"169.254.170.23", "fd00:ec2::23", "169.254.0.23"} {
		if c := pol.checkIP("", netip.MustParseAddr(ip)); c != ClassMetadata {
			t.Errorf("BYPASS %s (a cloud credential endpoint) under allow_private 169.254.0.0/16, fd00::/8: class %q, want %q (exact address only)", ip, c, ClassMetadata)
		}
	}
}

// Idle connections cost the proxy (the daemon's process, under the
// daemon) a 64 KiB read buffer each, allocated at accept, with no limit on
// connections per client or in all, for up to headTimeout (60 s) each: a
// sandbox that reaches the proxy opens connections faster than they time
// out and exhausts the daemon's memory. Measured: the heap growth of N
// idle connections (no byte sent) must stay below 16 KiB per connection.
func TestAttackProxyIdleConnectionMemory(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 8192 && rl.Max >= 8192 {
		rl.Cur = 8192
		_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
	}
	tp := startProxy(t, Config{AllowDomains: []string{"api.example.com"}}, Options{CgroupMount: "/nonexistent"})
	const n = 1000
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatalf("connection %d: %v (the proxy accepted %d)", i, err, i)
		}
		conns = append(conns, c)
	}
	time.Sleep(time.Second) // every connection accepted and waiting for its head
	// The least of several samples: what an idle connection holds stays
	// in every one; what other goroutines allocate for a moment (a
	// previous test's proxy winding down, under a loaded machine) does not.
	after := heap()
	for i := 0; i < 10 && int64(after-before)/n > 16<<10; i++ {
		time.Sleep(300 * time.Millisecond)
		after = min(after, heap())
	}
	per := int64(after-before) / n
	t.Logf("%d idle connections: heap %d -> %d bytes (%d per connection)", n, before, after, per)
	if per > 16<<10 {
		t.Errorf("BYPASS (resource exhaustion): %d bytes of heap per idle connection, no connection limit: %d connections held for %s cost %d MiB of the proxy's (the daemon's) memory", per, n, headTimeout, (after-before)>>20)
	}
}
