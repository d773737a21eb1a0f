package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// AuditReadlog is a NETLINK_AUDIT socket subscribed to the kernel's
// read-only multicast group of audit records (AUDIT_NLGRP_READLOG): a
// copy of every record the kernel's audit thread sends on, whether an
// auditd runs or not (journald reads the same group). Subscribing needs
// CAP_AUDIT_READ in the initial user namespace. Read and Close may be
// called from different goroutines.
type AuditReadlog struct {
	fd     int
	closed atomic.Bool
	buf    []byte
}

// readlogPoll is how often a blocked Read looks whether Close was called.
const readlogPoll = 250 * time.Millisecond

// readlogBuffer is the socket's receive buffer asked for (the kernel caps
// it at net.core.rmem_max): records beyond it while the daemon is slow
// are lost (ErrReadlogOverrun).
const readlogBuffer = 4 << 20

// ErrReadlogOverrun: the socket's buffer overflowed, records were lost.
var ErrReadlogOverrun = errors.New("audit multicast: receive buffer overrun, records lost")

// ErrReadlogClosed: Close was called.
var ErrReadlogClosed = errors.New("audit multicast: closed")

// DialAuditReadlog opens a NETLINK_AUDIT socket bound to the
// AUDIT_NLGRP_READLOG group. Errors: the kernel has no audit
// (EPROTONOSUPPORT), the bind is refused (EPERM: no CAP_AUDIT_READ in
// the initial user namespace), the socket cannot be made.
func DialAuditReadlog() (*AuditReadlog, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("netlink audit socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (unix.AUDIT_NLGRP_READLOG - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink audit multicast group (CAP_AUDIT_READ is needed): %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, readlogBuffer)
	tv := unix.NsecToTimeval(readlogPoll.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink audit: receive timeout: %w", err)
	}
	return &AuditReadlog{fd: fd, buf: make([]byte, 1<<16)}, nil
}

// ReadlogMessage is one record of the multicast group: its type
// (AUDIT_SECCOMP, AUDIT_SYSCALL, ...) and text.
type ReadlogMessage struct {
	Type uint16
	Text []byte
}

// Read blocks until the next datagram and returns its record (the text
// is valid until the next Read). Errors: ErrReadlogClosed after Close,
// ErrReadlogOverrun when records were lost (reading can go on), a
// receive or parse failure.
func (r *AuditReadlog) Read() ([]ReadlogMessage, error) {
	for {
		if r.closed.Load() {
			return nil, ErrReadlogClosed
		}
		n, _, err := unix.Recvfrom(r.fd, r.buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOBUFS):
			return nil, ErrReadlogOverrun
		case r.closed.Load():
			return nil, ErrReadlogClosed
		case err != nil:
			return nil, fmt.Errorf("netlink audit receive: %w", err)
		}
		m, err := auditMessage(r.buf[:n])
		if err != nil {
			return nil, err
		}
		return []ReadlogMessage{m}, nil
	}
}

// auditMessage is the one record of a datagram of the audit thread: a
// netlink header and the text. The kernel's audit records set
// nlmsg_len to the text's length without the header's (kernel/audit.c,
// audit_log_end), so the header's length is not trusted: the text is the
// rest of the datagram. Errors: shorter than a header.
func auditMessage(b []byte) (ReadlogMessage, error) {
	if len(b) < unix.NLMSG_HDRLEN {
		return ReadlogMessage{}, fmt.Errorf("netlink audit message: %d bytes, shorter than its header", len(b))
	}
	return ReadlogMessage{Type: binary.NativeEndian.Uint16(b[4:6]), Text: b[unix.NLMSG_HDRLEN:]}, nil
}

// Close makes a Read (blocked or later) return ErrReadlogClosed, within
// readlogPoll; Release then closes the socket.
func (r *AuditReadlog) Close() { r.closed.Store(true) }

// Release closes the socket; call it once no Read runs any more.
func (r *AuditReadlog) Release() error { return unix.Close(r.fd) }
