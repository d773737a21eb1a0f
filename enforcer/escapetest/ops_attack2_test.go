package escapetest

// Probe ops of the second attack round (attack2_test.go).

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/testing/probe"
)

func init() {
	// autogroup-nice N: write N to /proc/self/autogroup (the nice level of
	// the caller's session autogroup, shared with every process of the
	// session, inside the sandbox or not).
	probe.Register("autogroup-nice", func(r *probe.Result, a []string) {
		time.Sleep(200 * time.Millisecond) // the kernel's 100 ms rate limit
		r.Check(writeFile("/proc/self/autogroup", a[0]), "write /proc/self/autogroup")
	})
}

func init() {
	// audit-user-msg TEXT: an AUDIT_USER_AVC message over NETLINK_AUDIT
	// (CAP_AUDIT_WRITE, on the allow list); the kernel's answer is the
	// result. With no auditd the record is printed into the kernel log.
	probe.Register("audit-user-msg", func(r *probe.Result, a []string) {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
		if !r.Check(err, "socket(NETLINK_AUDIT)") {
			return
		}
		defer unix.Close(fd)
		payload := append([]byte(a[0]), 0)
		msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
		hdr := (*unix.NlMsghdr)(unsafe.Pointer(&msg[0]))
		hdr.Len = uint32(len(msg))
		hdr.Type = 1107 // AUDIT_USER_AVC: accepted even while audit is disabled
		hdr.Flags = unix.NLM_F_REQUEST | unix.NLM_F_ACK
		hdr.Seq = 1
		copy(msg[unix.NLMSG_HDRLEN:], payload)
		if !r.Check(unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}), "sendto") {
			return
		}
		buf := make([]byte, 4096)
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if !r.Check(err, "recv ack") {
			return
		}
		if n >= unix.NLMSG_HDRLEN+4 {
			h := (*unix.NlMsghdr)(unsafe.Pointer(&buf[0]))
			if h.Type == unix.NLMSG_ERROR {
				if e := *(*int32)(unsafe.Pointer(&buf[unix.NLMSG_HDRLEN])); e != 0 {
					r.Errno = unix.Errno(-e)
				}
			}
		}
	})
}
