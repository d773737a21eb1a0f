package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// Resolver looks up the addresses of a name (*net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrRefusedAddress: the address a connection would go to is not public
// and not allowed by allow_private. Returned (wrapped in *dialError) by
// the resolver step and by the socket's Control check.
var ErrRefusedAddress = errors.New("destination address refused")

// dialError is why a destination could not be reached: its reason is
// ReasonDestinationRefused, ReasonResolveFailed or ReasonDialFailed.
type dialError struct {
	reason string
	ip     netip.Addr // the last address tried, if any
	err    error
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// staticResolver answers the Config.Resolve names and asks next for the
// others.
type staticResolver struct {
	static map[string][]netip.Addr
	next   Resolver
}

func (r staticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ips, ok := r.static[host]; ok {
		return ips, nil
	}
	return r.next.LookupNetIP(ctx, network, host)
}

// dialer connects to allowed destinations only.
type dialer struct {
	pol      *Policy
	resolver Resolver
	// connect opens a TCP connection to an IP address; the Control
	// function must run on the socket before connect(2) (net.Dialer
	// with Control). Tests replace it to see which address is dialled.
	connect func(ctx context.Context, addr netip.AddrPort, control func(string, string, syscall.RawConn) error) (net.Conn, error)
}

// netConnect is dialer.connect outside tests.
func netConnect(ctx context.Context, addr netip.AddrPort, control func(string, string, syscall.RawConn) error) (net.Conn, error) {
	d := net.Dialer{Control: control}
	return d.DialContext(ctx, "tcp", addr.String())
}

// dial resolves t (unless it is an IP literal) and connects to the first
// address that the policy allows and that answers. Every address is
// checked twice: after resolution, and again in the socket's Control hook
// on the address connect(2) is about to use, so a name whose answer
// changes between a check and a dial (DNS rebinding) can never reach an
// address that was not checked. Addresses that are refused are skipped;
// when none is left the error's reason is ReasonDestinationRefused.
func (d *dialer) dial(ctx context.Context, t Target) (net.Conn, netip.Addr, error) {
	name := t.Host
	ips := []netip.Addr{t.IP}
	if t.IP.IsValid() {
		name = ""
	} else {
		var err error
		ips, err = d.resolver.LookupNetIP(ctx, "ip", t.Host)
		if err != nil {
			return nil, netip.Addr{}, &dialError{reason: ReasonResolveFailed, err: fmt.Errorf("resolve %s: %w", t.Host, err)}
		}
		if len(ips) == 0 {
			return nil, netip.Addr{}, &dialError{reason: ReasonResolveFailed, err: fmt.Errorf("resolve %s: no address", t.Host)}
		}
	}
	control := func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot parse dialled address %q", ErrRefusedAddress, address)
		}
		if class := d.pol.checkIP(name, ap.Addr()); class != "" {
			return fmt.Errorf("%w: %s is %s", ErrRefusedAddress, ap.Addr().Unmap(), class)
		}
		return nil
	}
	var refused, failed error
	var last netip.Addr
	seen := map[netip.Addr]bool{}
	for _, ip := range ips {
		ip = ip.Unmap()
		if seen[ip] {
			continue
		}
		seen[ip] = true
		last = ip
		if class := d.pol.checkIP(name, ip); class != "" {
			refused = fmt.Errorf("%w: %s is %s (not in allow_private)", ErrRefusedAddress, ip, class)
			continue
		}
		c, err := d.connect(ctx, netip.AddrPortFrom(ip, t.Port), control)
		if err == nil {
			return c, ip, nil
		}
		if errors.Is(err, ErrRefusedAddress) {
			refused = err
			continue
		}
		failed = fmt.Errorf("connect %s: %w", net.JoinHostPort(ip.String(), strconv.Itoa(int(t.Port))), err)
	}
	if failed != nil {
		return nil, last, &dialError{reason: ReasonDialFailed, ip: last, err: failed}
	}
	return nil, last, &dialError{reason: ReasonDestinationRefused, ip: last, err: refused}
}
