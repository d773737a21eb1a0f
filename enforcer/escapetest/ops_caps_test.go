package escapetest

// Probe operations of the capability cases (always_caps_test.go): each
// needs one capability outside the allow list.

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// Netlink audit (include/uapi/linux/audit.h).
const (
	auditGet              = 1000
	auditSet              = 1001
	auditStatusBacklogLim = 0x10
)

// auditRequest sends one audit netlink request and returns the AUDIT_GET
// reply's payload (get) or the ack's error.
func auditRequest(typ uint16, payload []byte) ([]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, fmt.Errorf("netlink audit socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	copy(msg[unix.NLMSG_HDRLEN:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var reply []byte
	buf := make([]byte, 8192)
	for i := 0; i < 4; i++ {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("netlink audit recv: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return nil, syscall.Errno(-e)
				}
				if typ != auditGet {
					return nil, nil
				}
			case auditGet:
				reply = append([]byte(nil), m.Data...)
				return reply, nil
			}
		}
	}
	return reply, fmt.Errorf("netlink audit: no reply")
}

// auditBacklogLimit reads the kernel's audit backlog limit (AUDIT_GET).
func auditBacklogLimit() (uint32, error) {
	b, err := auditRequest(auditGet, nil)
	if err != nil {
		return 0, err
	}
	if len(b) < 24 {
		return 0, fmt.Errorf("short audit_status: %d bytes", len(b))
	}
	return binary.NativeEndian.Uint32(b[20:]), nil
}

// auditSetBacklogLimit sets it (AUDIT_SET, CAP_AUDIT_CONTROL).
func auditSetBacklogLimit(n uint32) error {
	var s [44]byte // struct audit_status
	binary.NativeEndian.PutUint32(s[0:], auditStatusBacklogLim)
	binary.NativeEndian.PutUint32(s[20:], n)
	_, err := auditRequest(auditSet, s[:])
	return err
}

// vmLocked is VmLck of /proc/self/status in kB.
func vmLocked() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmLck:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}

func init() {
	// acct PATH: process accounting on (CAP_SYS_PACCT), a child exits (a
	// record is written), accounting off.
	probe.Register("acct", func(r *probe.Result, a []string) {
		if !r.Check(unix.Acct(a[0]), "acct") {
			return
		}
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = probe.Env("noop")
		_ = cmd.Run()
		_, _, _ = unix.Syscall(unix.SYS_ACCT, 0, 0, 0)
	})
	// sched-fifo: SCHED_FIFO for itself (CAP_SYS_NICE: RLIMIT_RTPRIO is 0).
	probe.Register("sched-fifo", func(r *probe.Result, a []string) {
		runtime.LockOSThread()
		if !r.Require(unix.Setrlimit(unix.RLIMIT_RTPRIO, &unix.Rlimit{Cur: 0, Max: 0}), "RLIMIT_RTPRIO 0") {
			return
		}
		prio := int32(1)
		_, _, e := unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, 0, 1 /* SCHED_FIFO */, uintptr(unsafe.Pointer(&prio)))
		r.Errno = e
		pol, _, _ := unix.Syscall(unix.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
		r.Effect = pol == 1
	})
	// raise-hard: RLIMIT_MSGQUEUE hard limit doubled (CAP_SYS_RESOURCE).
	probe.Register("raise-hard", func(r *probe.Result, a []string) {
		var old unix.Rlimit
		if !r.Require(unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &old), "getrlimit") {
			return
		}
		if old.Max == unix.RLIM_INFINITY {
			r.Setup = "RLIMIT_MSGQUEUE hard limit is already unlimited"
			return
		}
		want := old.Max*2 + 4096
		r.Check(unix.Setrlimit(unix.RLIMIT_MSGQUEUE, &unix.Rlimit{Cur: want, Max: want}), "setrlimit")
		var now unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &now)
		r.Effect = now.Max == want
		r.Out = fmt.Sprintf("hard %d -> %d", old.Max, now.Max)
	})
	// audit-set-backlog N: AUDIT_SET of the backlog limit (CAP_AUDIT_CONTROL).
	probe.Register("audit-set-backlog", func(r *probe.Result, a []string) {
		n, _ := strconv.ParseUint(a[0], 10, 32)
		r.Check(auditSetBacklogLimit(uint32(n)), "AUDIT_SET")
	})
	// mlock-nolimit: with RLIMIT_MEMLOCK 0, mlock needs CAP_IPC_LOCK.
	probe.Register("mlock-nolimit", func(r *probe.Result, a []string) {
		if !r.Require(unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 0, Max: 0}), "RLIMIT_MEMLOCK 0") {
			return
		}
		b, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if !r.Require(err, "mmap") {
			return
		}
		r.Check(unix.Mlock(b), "mlock")
		r.Effect = vmLocked() > 0
	})
	// shm-lock: SHM_LOCK of a new segment with RLIMIT_MEMLOCK 0
	// (CAP_IPC_LOCK).
	probe.Register("shm-lock", func(r *probe.Result, a []string) {
		if !r.Require(unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 0, Max: 0}), "RLIMIT_MEMLOCK 0") {
			return
		}
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if !r.Require(err, "shmget") {
			return
		}
		defer func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) }()
		_, err = unix.SysvShmCtl(id, 11 /* SHM_LOCK */, nil)
		r.Check(err, "shmctl SHM_LOCK")
		var ds unix.SysvShmDesc
		if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err == nil {
			r.Effect = ds.Perm.Mode&0o2000 != 0 // SHM_LOCKED
		}
	})
	// userns-lo-up: a child in a new user and network namespace (uid 0
	// mapped, so it keeps its capabilities there) brings up lo: needs
	// CAP_NET_ADMIN in that user namespace.
	probe.Register("userns-lo-up", func(r *probe.Result, a []string) {
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = probe.Env("lo-up")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		}
		out, err := cmd.Output()
		if err != nil {
			// An errno from clone/uid_map: the namespaces themselves
			// were refused.
			r.Check(err, "start child in new user+net namespace")
			return
		}
		inner, err := probe.ParseResult(out)
		if !r.Require(err, "inner result") {
			return
		}
		*r = inner
	})
	probe.Register("lo-up", func(r *probe.Result, a []string) {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if !r.Require(err, "socket") {
			return
		}
		ifr, err := unix.NewIfreq("lo")
		if !r.Require(err, "ifreq") {
			return
		}
		if !r.Require(unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr), "SIOCGIFFLAGS") {
			return
		}
		if ifr.Uint16()&unix.IFF_UP != 0 {
			r.Setup = "lo is already up in the new network namespace"
			return
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		r.Check(unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr), "SIOCSIFFLAGS")
		_ = unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr)
		r.Effect = ifr.Uint16()&unix.IFF_UP != 0
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
