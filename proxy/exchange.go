package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errNoRequest: the connection closed (or idled out) before a request.
var errNoRequest = errors.New("no request")

// peekHosts waits for a whole request head in br without consuming it and
// returns the values of its Host header lines as received (net/http drops
// the Host header of requests it parses, and a CONNECT's Host is
// otherwise unseen). A head over maxHead bytes, or one with a folded
// (obsolete line-continued) header line, is an error.
func peekHosts(br *bufio.Reader) ([]string, error) {
	for {
		b, _ := br.Peek(br.Buffered())
		if end := headEnd(b); end >= 0 {
			return hostLines(b[:end])
		}
		if len(b) >= maxHead {
			return nil, fmt.Errorf("request head larger than %d bytes", maxHead)
		}
		// Wait for at least one more byte.
		if b, err := br.Peek(len(b) + 1); err != nil {
			if len(b) == 0 {
				return nil, errNoRequest
			}
			return nil, fmt.Errorf("incomplete request head: %v", err)
		}
	}
}

// headEnd is the length of the head in b (through the empty line), or -1.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

func hostLines(head []byte) ([]string, error) {
	var hosts []string
	lines := bytes.Split(head, []byte("\n"))
	for _, l := range lines[1:] {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) == 0 {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return nil, errors.New("folded header line refused")
		}
		name, val, ok := bytes.Cut(l, []byte(":"))
		if ok && strings.EqualFold(string(name), "host") {
			hosts = append(hosts, strings.TrimSpace(string(val)))
		}
	}
	return hosts, nil
}

// tunnelLinger bounds how long a tunnel stays open for the client's
// bytes after the destination closed its side.
const tunnelLinger = 30 * time.Second

// tunnel connects to t and relays bytes both ways until both directions
// end. The tunnel's content (TLS, usually) is opaque to the proxy.
func (p *Proxy) tunnel(ctx context.Context, c net.Conn, br *bufio.Reader, t Target, r *record) {
	dctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	up, ip, err := p.dialer.dial(dctx, t)
	cancel()
	r.ip = ip
	if err != nil {
		r.reason, r.detail = dialReason(err), err.Error()
		p.refuse(c, r)
		return
	}
	defer up.Close()
	r.reason = ReasonAllowed
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		r.detail = "client gone: " + err.Error()
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// br first: the client may have sent bytes (a TLS ClientHello)
		// right behind the CONNECT head.
		r.up, _ = io.Copy(up, br)
		closeWrite(up)
	}()
	r.down, _ = io.Copy(c, up)
	closeWrite(c)
	// The destination is done: the client gets a bounded time to finish
	// its side, so a client that never closes cannot pin the tunnel.
	_ = c.SetReadDeadline(time.Now().Add(tunnelLinger))
	wg.Wait()
}

// closeWrite half-closes a connection (shutdown(SHUT_WR)) so the other
// side sees end of stream while its answer can still come back.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

func dialReason(err error) string {
	var de *dialError
	if errors.As(err, &de) {
		return de.reason
	}
	return ReasonDialFailed
}

// transportDial is the http.Transport's dial: addr is the Target
// authority forward put in the URL.
func (p *Proxy) transportDial(ctx context.Context, _, addr string) (net.Conn, error) {
	t, err := ParseAuthority(addr, 0)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, p.o.DialTimeout)
	defer cancel()
	c, ip, err := p.dialer.dial(dctx, t)
	if st, ok := ctx.Value(dialIPKey{}).(*dialIP); ok {
		st.set(ip)
	}
	return c, err
}

type dialIPKey struct{}

// dialIP records the address a forwarded request used.
type dialIP struct {
	mu sync.Mutex
	ip netip.Addr
}

func (d *dialIP) set(ip netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ip.IsValid() {
		d.ip = ip
	}
}

func (d *dialIP) get() netip.Addr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ip
}

// hopByHop are the headers of one connection (RFC 9110 section 7.6.1),
// never forwarded.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// counter counts the bytes read through it.
type counter struct {
	rc io.ReadCloser
	n  atomic.Int64
}

func (c *counter) Read(b []byte) (int, error) {
	n, err := c.rc.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *counter) Close() error { return c.rc.Close() }

// forward sends a plain-HTTP request to t and writes the response back.
// It reports whether the client connection may carry another request.
func (p *Proxy) forward(ctx context.Context, c net.Conn, req *http.Request, t Target, r *record) bool {
	ipRec := &dialIP{}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err == nil {
			ipRec.set(ap.Addr().Unmap())
		}
	}}
	octx := httptrace.WithClientTrace(context.WithValue(ctx, dialIPKey{}, ipRec), trace)
	out := req.Clone(octx)
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "http", t.Authority()
	out.Host = t.Authority()
	if t.Port == 80 {
		out.Host = t.Host
		if t.IP.Is6() {
			out.Host = "[" + t.Host + "]"
		}
	}
	removeHopByHop(out.Header)
	var up *counter
	if req.Body != nil && req.Body != http.NoBody {
		up = &counter{rc: req.Body}
		out.Body = up
	}
	resp, err := p.transport.RoundTrip(out)
	r.ip = ipRec.get()
	if up != nil {
		r.up = up.n.Load()
	}
	if err != nil {
		r.reason, r.detail = ReasonUpstreamFailed, err.Error()
		var de *dialError
		if errors.As(err, &de) {
			r.reason = de.reason
		}
		p.refuse(c, r)
		return false
	}
	r.reason = ReasonAllowed
	removeHopByHop(resp.Header)
	down := &counter{rc: resp.Body}
	resp.Body = down
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	bodyless := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent ||
		resp.StatusCode == http.StatusNotModified || resp.StatusCode < 200
	resp.TransferEncoding = nil
	if resp.ContentLength < 0 && !bodyless {
		resp.TransferEncoding = []string{"chunked"}
	}
	resp.Close = req.Close
	werr := resp.Write(c)
	resp.Body.Close()
	r.down = down.n.Load()
	if werr != nil {
		r.detail = "writing the response to the client: " + werr.Error()
		return false
	}
	// The next request starts after this one's body: what the upstream
	// did not read is drained (up to 1 MiB), else the connection ends.
	if req.Body != nil {
		if n, _ := io.Copy(io.Discard, io.LimitReader(req.Body, 1<<20)); n == 1<<20 {
			return false
		}
	}
	return !resp.Close
}
