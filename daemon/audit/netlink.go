package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AuditNetlink is a NETLINK_AUDIT socket that sends user messages to the
// kernel's audit subsystem, which writes them to the audit trail (auditd,
// or the kernel log when no auditd runs). Sending needs CAP_AUDIT_WRITE in
// the initial user namespace: without it the kernel answers EPERM, from
// another user namespace ECONNREFUSED. Safe for concurrent use.
type AuditNetlink struct {
	mu  sync.Mutex
	fd  int
	seq uint32
}

// ackTimeout bounds the wait for the kernel's answer to one message. The
// kernel answers while it handles the send (before sendto returns), except
// when its audit backlog is full, where it may hold the sender up to
// audit_backlog_wait_time first.
const ackTimeout = 2 * time.Second

// DialAuditNetlink opens and binds a NETLINK_AUDIT socket. Errors: the
// kernel has no audit support (EPROTONOSUPPORT), or the socket cannot be
// made.
func DialAuditNetlink() (*AuditNetlink, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("netlink audit socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink audit bind: %w", err)
	}
	tv := unix.NsecToTimeval(ackTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink audit: receive timeout: %w", err)
	}
	return &AuditNetlink{fd: fd}, nil
}

// SendUser sends text as one user message of type typ (e.g.
// unix.AUDIT_USER_AVC) and waits for the kernel's acknowledgement.
// Errors: the kernel's answer (EPERM: no CAP_AUDIT_WRITE; ECONNREFUSED:
// not in the initial user namespace), a send or receive failure, no
// answer within ackTimeout, the socket closed.
func (a *AuditNetlink) SendUser(typ uint16, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 {
		return errors.New("netlink audit: closed")
	}
	a.seq++
	msg := userMessage(typ, a.seq, text)
	if err := unix.Sendto(a.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink audit send: %w", err)
	}
	return a.awaitAck(a.seq)
}

// userMessage is one netlink message: the header (type typ, a request that
// asks for an acknowledgement, sequence seq) and text with its NUL (the
// kernel replaces the last byte by one).
func userMessage(typ uint16, seq uint32, text string) []byte {
	n := unix.NLMSG_HDRLEN + len(text) + 1
	b := make([]byte, (n+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1))
	binary.NativeEndian.PutUint32(b[0:4], uint32(n))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	binary.NativeEndian.PutUint16(b[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(b[8:12], seq)
	copy(b[unix.NLMSG_HDRLEN:], text)
	return b
}

// awaitAck reads until the NLMSG_ERROR answering seq: nil for error 0,
// else the errno it carries.
func (a *AuditNetlink) awaitAck(seq uint32) error {
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(a.fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return fmt.Errorf("netlink audit: no answer from the kernel within %s", ackTimeout)
		}
		if err != nil {
			return fmt.Errorf("netlink audit receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink audit answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			if e := int32(binary.NativeEndian.Uint32(m.Data[0:4])); e != 0 {
				return fmt.Errorf("netlink audit: %w", unix.Errno(-e))
			}
			return nil
		}
	}
}

// Close closes the socket; later sends fail.
func (a *AuditNetlink) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 {
		return nil
	}
	err := unix.Close(a.fd)
	a.fd = -1
	return err
}

// Probe asks the kernel whether it would take a user message from this
// socket, without writing any: an AUDIT_USER_AVC message with no text
// passes the kernel's permission check (CAP_AUDIT_WRITE, the initial user
// namespace) and is then refused as too short (EINVAL), before anything
// is logged. Errors: the permission check's answer (EPERM, ECONNREFUSED),
// or the send's.
func (a *AuditNetlink) Probe() error {
	err := a.SendUser(unix.AUDIT_USER_AVC, "")
	if errors.Is(err, unix.EINVAL) {
		return nil
	}
	if err == nil {
		return errors.New("netlink audit: the kernel took an empty user message")
	}
	return err
}
