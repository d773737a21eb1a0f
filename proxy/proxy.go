// Package proxy is `enforcerd proxy`: an HTTP forward proxy with CONNECT
// tunnels, the one way out of a container whose ceiling says
// network=false and whose allowed endpoints name the proxy's unix socket.
//
// What it enforces, for every request: the destination port is in the
// port allow list; the destination name is in the domain allow list and,
// when the client is a registered container, in the proxy_allow list of
// that container and of every container enclosing it (a container can
// narrow the global list, never widen it); and the address actually
// connected to is a public unicast address (Classify) unless allow_private
// lists it. The proxy resolves names itself and checks the address twice,
// after resolution and in the socket's Control hook right before
// connect(2), so DNS rebinding cannot slip a private address in between.
// Every request, allowed or not, is one audit line.
//
// Why our own small server on net/http rather than a proxy library such
// as github.com/elazarl/goproxy: the decisions need the raw request head
// (net/http's server and http.ReadRequest drop the Host header of a
// CONNECT, which the proxy compares with the authority), the peer
// credentials of each connection (SO_PEERCRED, for the container), the
// dial hook on the exact address, and byte counts per tunnel; goproxy's
// value is in MITM and request rewriting, which this proxy must not do.
// The parsing is net/http's (http.ReadRequest, http.Transport,
// Response.Write); what is ours is the policy and the plumbing around it,
// small enough to audit.
//
// Layering (docs/design.md): layer 3; it may import egress/, cgroup/ and
// internal/procid/, and of other modules no cilium/ebpf.
package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/egress"
)

// Registry places a client in the daemon's registry.
type Registry interface {
	// ProxyLimits returns the registered container whose cgroup is group
	// or encloses it ("" for none) and the proxy_allow lists of it and of
	// every registered container enclosing it (each one narrows; none:
	// only the global list applies). An error means the client cannot be
	// placed, and the proxy refuses its requests (fail closed).
	ProxyLimits(group string) (container string, limits []egress.Patterns, err error)
}

// Options are the proxy's collaborators; every field is optional.
type Options struct {
	// Audit receives one record per request (nil: discarded).
	Audit *slog.Logger
	// Log receives operational messages (nil: discarded).
	Log *slog.Logger
	// Registry, when set (under the daemon), places each client in a
	// container; a client it cannot place is refused.
	Registry Registry
	// Resolver resolves names not in Config.Resolve (nil:
	// net.DefaultResolver).
	Resolver Resolver
	// CgroupMount is the cgroup2 mount ("": from mountinfo).
	CgroupMount string
	// DialTimeout bounds resolving and connecting (0: DefaultDialTimeout).
	DialTimeout time.Duration
	// MaxConns bounds the open client connections in all, and
	// MaxConnsPerClient those of one client: its cgroup, and every client
	// that cannot be identified counts as one (0: DefaultMaxConns,
	// DefaultMaxConnsPerClient). One over the bound is answered 429
	// too_many_connections and closed.
	MaxConns, MaxConnsPerClient int
}

// The default connection bounds: with the proxy's memory per connection
// (a goroutine while idle; a 64 KiB head buffer once a request arrives)
// they cap what clients can make the proxy, and the daemon it may run
// in, hold.
const (
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerClient = 64
)

// headTimeout bounds the wait for a request head (also between requests
// of a kept-alive connection).
const headTimeout = 60 * time.Second

// responseHeaderTimeout bounds the wait for a forwarded request's
// response head (502 upstream_failed past it).
const responseHeaderTimeout = 10 * time.Minute

// maxHead is the largest request head accepted.
const maxHead = 64 << 10

// Proxy serves proxy connections under one Policy.
type Proxy struct {
	pol       *Policy
	o         Options
	auditLog  *slog.Logger
	log       *slog.Logger
	dialer    *dialer
	transport *http.Transport

	mu        sync.Mutex
	open      int            // client connections open
	perClient map[string]int // by clientKey
}

// New builds a proxy for pol.
func New(pol *Policy, o Options) *Proxy {
	p := &Proxy{pol: pol, o: o, auditLog: o.Audit, log: o.Log}
	if p.auditLog == nil {
		p.auditLog = slog.New(slog.DiscardHandler)
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.o.DialTimeout <= 0 {
		p.o.DialTimeout = DefaultDialTimeout
	}
	if p.o.MaxConns <= 0 {
		p.o.MaxConns = DefaultMaxConns
	}
	if p.o.MaxConnsPerClient <= 0 {
		p.o.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	p.perClient = map[string]int{}
	if p.o.CgroupMount == "" {
		if m, err := cgroup.Mountpoint(); err == nil {
			p.o.CgroupMount = m
		} else {
			p.log.Warn("no cgroup2 mount: clients will not be identified", "err", err)
		}
	}
	var next Resolver = net.DefaultResolver
	if o.Resolver != nil {
		next = o.Resolver
	}
	p.dialer = &dialer{pol: pol, resolver: staticResolver{static: pol.static, next: next}, connect: netConnect}
	p.transport = &http.Transport{
		DialContext:        p.transportDial,
		DisableCompression: true,
		MaxIdleConns:       64,
		IdleConnTimeout:    30 * time.Second,
		// A forwarded request's answer must begin within this; a model
		// API may think for minutes before its first byte.
		ResponseHeaderTimeout: responseHeaderTimeout,
	}
	return p
}

// Serve accepts connections on ln until ctx is done (then it closes ln and
// every connection, and returns nil) or accepting fails.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return err
		}
		go p.ServeConn(ctx, c)
	}
}

// ServeConn serves one client connection: HTTP/1.x requests until the
// connection closes, a CONNECT tunnel ends, or a request is refused.
func (p *Proxy) ServeConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer func() {
		// A bug must cost one connection, never the service.
		if v := recover(); v != nil {
			p.log.Error("proxy connection panicked", "panic", fmt.Sprint(v))
		}
	}()
	cl := identify(c, p.o.CgroupMount)
	key := clientKey(cl)
	if !p.acquire(key) {
		r := &record{start: time.Now(), client: cl, reason: ReasonTooManyConnections,
			detail: fmt.Sprintf("at most %d connections per client, %d in all", p.o.MaxConnsPerClient, p.o.MaxConns)}
		p.refuse(c, r)
		p.audit(r)
		return
	}
	defer p.release(key)
	// The head buffer only once the client sends: an idle connection
	// costs its goroutine, not maxHead bytes.
	_ = c.SetReadDeadline(time.Now().Add(headTimeout))
	if !waitReadable(c) {
		return
	}
	br := bufio.NewReaderSize(c, maxHead)
	for {
		_ = c.SetReadDeadline(time.Now().Add(headTimeout))
		hosts, err := peekHosts(br)
		if err != nil {
			if !errors.Is(err, errNoRequest) {
				r := &record{start: time.Now(), client: cl, reason: ReasonBadRequest, detail: err.Error()}
				p.refuse(c, r)
				p.audit(r)
			}
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			r := &record{start: time.Now(), client: cl, reason: ReasonBadRequest, detail: "malformed request: " + err.Error()}
			p.refuse(c, r)
			p.audit(r)
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		if !p.handle(ctx, c, br, req, hosts, cl) {
			return
		}
	}
}

// handle serves one request and reports whether the connection may carry
// another.
func (p *Proxy) handle(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request, hosts []string, cl Client) bool {
	r := &record{method: req.Method, start: time.Now(), client: cl}
	defer p.audit(r)
	t, err := ParseRequestTarget(req.Method, req.RequestURI, hosts)
	if err != nil {
		r.reason, r.detail = ReasonBadRequest, err.Error()
		p.refuse(c, r)
		return false
	}
	r.domain, r.port = t.Host, t.Port
	if r.reason, r.detail = p.decide(cl, t, r); r.reason != "" {
		p.refuse(c, r)
		return false
	}
	if req.Method == http.MethodConnect {
		p.tunnel(ctx, c, br, t, r)
		return false
	}
	return p.forward(ctx, c, req, t, r)
}

// decide applies the allow lists; "" allows. It records the container.
func (p *Proxy) decide(cl Client, t Target, r *record) (reason, detail string) {
	var limits []egress.Patterns
	if p.o.Registry != nil {
		if cl.Err != nil {
			return ReasonClientUnidentified, cl.Err.Error()
		}
		var err error
		r.container, limits, err = p.o.Registry.ProxyLimits(cl.Group)
		if err != nil {
			return ReasonClientUnidentified, err.Error()
		}
	}
	if !p.pol.Ports[t.Port] {
		return ReasonPortNotAllowed, fmt.Sprintf("port %d is not in the allowed ports", t.Port)
	}
	if !t.AllowedBy(p.pol.Domains) {
		return ReasonDomainNotAllowed, fmt.Sprintf("%s is not in the allowed domains", t.Host)
	}
	for _, l := range limits {
		if !t.AllowedBy(l) {
			return ReasonContainerDomainNotAllowed, fmt.Sprintf("%s is not in the proxy_allow list of container %s or of a container enclosing it", t.Host, r.container)
		}
	}
	return "", ""
}

// refuse answers a refused request and asks the client to close.
func (p *Proxy) refuse(c net.Conn, r *record) {
	status := statusOf(r.reason)
	body := fmt.Sprintf("enforcerd proxy: %s: %s\n", r.reason, r.detail)
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	fmt.Fprintf(&b, "%s: %s\r\n", ReasonHeader, r.reason)
	fmt.Fprintf(&b, "Proxy-Status: enforcerd; error=%s; details=%q\r\n", proxyStatusError(r.reason), headerSafe(r.detail))
	fmt.Fprintf(&b, "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write(b.Bytes())
}

// proxyStatusError maps a reason to an RFC 9209 Proxy-Status error type.
func proxyStatusError(reason string) string {
	switch reason {
	case ReasonResolveFailed:
		return "dns_error"
	case ReasonDialFailed:
		return "connection_refused"
	case ReasonUpstreamFailed:
		return "http_protocol_error"
	case ReasonDestinationRefused:
		return "destination_ip_prohibited"
	case ReasonBadRequest:
		return "http_request_error"
	default:
		return "http_request_denied"
	}
}

// headerSafe keeps a detail printable on one header line.
func headerSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// clientKey is what MaxConnsPerClient counts by: the client's cgroup, or
// one key for every client that cannot be identified.
func clientKey(cl Client) string {
	if cl.Err == nil && cl.Group != "" {
		return "cgroup:" + cl.Group
	}
	return "unidentified"
}

// acquire counts one more connection of key, or reports false when the
// client or the proxy is at its bound.
func (p *Proxy) acquire(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open >= p.o.MaxConns || p.perClient[key] >= p.o.MaxConnsPerClient {
		return false
	}
	p.open++
	p.perClient[key]++
	return true
}

// release undoes one acquire of key.
func (p *Proxy) release(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open--
	if p.perClient[key]--; p.perClient[key] <= 0 {
		delete(p.perClient, key)
	}
}

// waitReadable waits, within c's read deadline, until c has a byte to
// read (or its peer closed it, or it failed); it reports whether a read
// may follow. A connection without a descriptor is readable at once.
func waitReadable(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var b [1]byte
	ready := false
	err = rc.Read(func(fd uintptr) bool {
		n, _, e := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false
		}
		ready = e == nil && n > 0
		return true
	})
	return err == nil && ready
}
