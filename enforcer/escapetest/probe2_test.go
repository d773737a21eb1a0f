package escapetest

// Probe ops of the second round of always-on and shell cases (always2_test.go,
// shell2_test.go).

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/probe"
)

// evictCaches writes back and drops the page cache, dentries and inodes
// (from the test, outside every sandbox), so that state the kernel keeps
// only while an inode is cached is gone.
func evictCaches(t *testing.T) {
	t.Helper()
	unix.Sync()
	for i := 0; i < 2; i++ {
		if err := writeFile("/proc/sys/vm/drop_caches", "3"); err != nil {
			t.Fatalf("drop_caches: %v", err)
		}
	}
}

// compat32 is a page below 4 GiB for int $0x80 pointer arguments.
func compat32(r *probe.Result) []byte {
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_32BIT)
	if !r.Require(err, "mmap MAP_32BIT") {
		return nil
	}
	return page
}

// int80Errno runs a compat system call and sets r.Errno (Setup on ENOSYS).
func int80Errno(r *probe.Result, trap, a1, a2, a3 uintptr) bool {
	ret := Int80(trap, a1, a2, a3)
	if ret < 0 {
		r.Errno = syscall.Errno(-ret)
		if r.Errno == unix.ENOSYS {
			r.Setup = "32-bit system calls are disabled in this kernel"
		}
		return false
	}
	return true
}

const (
	i386Ioctl   = 54
	i386Fcntl64 = 221
	fioSetown   = 0x8901
	siocSpgrp   = 0x8902
	fioAsync    = 0x5452
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

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// asyncWrite writes to the peer (fd) so the kernel sends the owner's signal.
func asyncWrite(r *probe.Result, fd int) {
	_, err := unix.Write(fd, []byte("x"))
	r.Require(err, "write peer")
}

func init() {
	// pwrite PATH OFFSET HEX: write bytes at OFFSET (no truncation).
	probe.Register("pwrite", func(r *probe.Result, a []string) {
		data, err := hex.DecodeString(a[2])
		if !r.Require(err, "hex") {
			return
		}
		fd, err := unix.Open(a[0], unix.O_WRONLY, 0)
		if !r.Check(err, "open "+a[0]) {
			return
		}
		defer unix.Close(fd)
		off, _ := strconv.ParseInt(a[1], 0, 64)
		_, err = unix.Pwrite(fd, data, off)
		r.Check(err, "pwrite")
	})
	// write-read PATH DATA: write, then read back (Out); Effect: it reads DATA.
	probe.Register("write-read", func(r *probe.Result, a []string) {
		if !r.Check(writeFile(a[0], a[1]), "write "+a[0]) {
			return
		}
		b, _ := os.ReadFile(a[0])
		r.Out = strings.TrimSpace(string(b))
		r.Effect = r.Out == a[1]
	})
	// write-all PATH DATA [PATH DATA...]: each write must succeed; Out is
	// the last file read back.
	probe.Register("write-all", func(r *probe.Result, a []string) {
		for i := 0; i+1 < len(a); i += 2 {
			if !r.Check(writeFile(a[i], a[i+1]), "write "+a[i]) {
				r.Out = a[i]
				return
			}
		}
		b, _ := os.ReadFile(a[len(a)-2])
		r.Out = strings.TrimSpace(string(b))
		r.Effect = true
	})
	// create-chown PATH UID GID: create a file and chown it (CAP_CHOWN).
	probe.Register("create-chown", func(r *probe.Result, a []string) {
		f, err := os.OpenFile(a[0], os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if !r.Require(err, "create") {
			return
		}
		f.Close()
		r.Check(unix.Chown(a[0], atoi(a[1]), atoi(a[2])), "chown")
	})
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

	// sigio-compat-ioctl PID fiosetown|siocspgrp: the owner set through the
	// 32-bit ioctl, F_SETSIG SIGKILL, FIOASYNC, then I/O.
	probe.Register("sigio-compat-ioctl", func(r *probe.Result, a []string) {
		page := compat32(r)
		if page == nil {
			return
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if !r.Require(err, "socketpair") {
			return
		}
		cmd := uintptr(fioSetown)
		if a[1] == "siocspgrp" {
			cmd = siocSpgrp
		}
		binary.NativeEndian.PutUint32(page, uint32(int32(atoi(a[0]))))
		if !int80Errno(r, i386Ioctl, uintptr(fds[0]), cmd, uintptr(unsafe.Pointer(&page[0]))) {
			return
		}
		if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETSIG, int(unix.SIGKILL)); !r.Require(err, "F_SETSIG") {
			return
		}
		if !r.Require(unix.IoctlSetPointerInt(fds[0], fioAsync, 1), "FIOASYNC") {
			return
		}
		asyncWrite(r, fds[1])
	})
	// sigio-compat-fcntl PID: F_SETOWN through the 32-bit fcntl64.
	probe.Register("sigio-compat-fcntl", func(r *probe.Result, a []string) {
		var p [2]int
		if !r.Require(unix.Pipe(p[:]), "pipe") {
			return
		}
		if !int80Errno(r, i386Fcntl64, uintptr(p[0]), unix.F_SETOWN, uintptr(atoi(a[0]))) {
			return
		}
		if !int80Errno(r, i386Fcntl64, uintptr(p[0]), unix.F_SETSIG, uintptr(unix.SIGKILL)) {
			return
		}
		if !int80Errno(r, i386Fcntl64, uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC) {
			return
		}
		asyncWrite(r, p[1])
	})
	// sigio-setsig-first PID: F_SETSIG SIGKILL first, then F_SETOWN PID.
	probe.Register("sigio-setsig-first", func(r *probe.Result, a []string) {
		var p [2]int
		if !r.Require(unix.Pipe(p[:]), "pipe") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, atoi(a[0])); !r.Check(err, "F_SETOWN") {
			return
		}
		asyncWrite(r, p[1])
	})
	// sigio-setown-ex PID pid|pgrp|tid: F_SETOWN_EX, F_SETSIG SIGKILL,
	// O_ASYNC, I/O.
	probe.Register("sigio-setown-ex", func(r *probe.Result, a []string) {
		var p [2]int
		if !r.Require(unix.Pipe(p[:]), "pipe") {
			return
		}
		owner := struct{ typ, pid int32 }{typ: 1 /* F_OWNER_PID */, pid: int32(atoi(a[0]))}
		switch a[1] {
		case "tid":
			owner.typ = 0
		case "pgrp":
			owner.typ = 2
		}
		_, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(p[0]), unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&owner)))
		if e != 0 {
			r.Errno = e
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
			return
		}
		asyncWrite(r, p[1])
	})
	// sigio-pgrp PGID: F_SETOWN(-PGID), a process group outside.
	probe.Register("sigio-pgrp", func(r *probe.Result, a []string) {
		var p [2]int
		if !r.Require(unix.Pipe(p[:]), "pipe") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, -atoi(a[0])); !r.Check(err, "F_SETOWN") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
			return
		}
		if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
			return
		}
		asyncWrite(r, p[1])
	})
	// async-inherited fcntl|fioasync|compat-fioasync: fd 3 is a socket whose
	// owner (an outside process) and signal (SIGKILL) were set outside the
	// sandbox, fd 4 its peer. Enable async I/O on 3, write on 4.
	probe.Register("async-inherited", func(r *probe.Result, a []string) {
		switch a[0] {
		case "fcntl":
			fl, err := unix.FcntlInt(3, unix.F_GETFL, 0)
			if !r.Require(err, "F_GETFL") {
				return
			}
			if _, err := unix.FcntlInt(3, unix.F_SETFL, fl|unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
				return
			}
		case "fioasync":
			if !r.Check(unix.IoctlSetPointerInt(3, fioAsync, 1), "FIOASYNC") {
				return
			}
		case "compat-fioasync":
			page := compat32(r)
			if page == nil {
				return
			}
			binary.NativeEndian.PutUint32(page, 1)
			if !int80Errno(r, i386Ioctl, 3, fioAsync, uintptr(unsafe.Pointer(&page[0]))) {
				return
			}
		default:
			r.Setup = "unknown mode " + a[0]
			return
		}
		asyncWrite(r, 4)
	})
	// rlimit-core CUR: set RLIMIT_CORE's soft limit (hard unchanged);
	// Effect: it now reads CUR.
	probe.Register("rlimit-core", func(r *probe.Result, a []string) {
		var old unix.Rlimit
		if !r.Require(unix.Getrlimit(unix.RLIMIT_CORE, &old), "getrlimit") {
			return
		}
		cur := uint64(unix.RLIM_INFINITY)
		if a[0] != "unlimited" {
			cur, _ = strconv.ParseUint(a[0], 10, 64)
		}
		if cur == old.Cur || cur > old.Max {
			r.Setup = fmt.Sprintf("RLIMIT_CORE is %d/%d: cannot test a change of the soft limit to %d", old.Cur, old.Max, cur)
			return
		}
		r.Check(unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: cur, Max: old.Max}), "setrlimit")
		var now unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_CORE, &now)
		r.Effect = now.Cur == cur
		r.Out = fmt.Sprintf("RLIMIT_CORE %d/%d -> %d/%d", old.Cur, old.Max, now.Cur, now.Max)
	})
	// crash-dump none|raise|zero: crash with a core dump (SIGABRT) after
	// leaving RLIMIT_CORE alone, trying to raise it to unlimited, or
	// lowering its soft limit to 0 (a pipe core_pattern ignores 0).
	probe.Register("crash-dump", func(r *probe.Result, a []string) {
		var old unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_CORE, &old)
		switch a[0] {
		case "raise":
			_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
		case "zero":
			_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: old.Max})
		}
		var now unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_CORE, &now)
		fmt.Fprintf(os.Stderr, "crash-dump: RLIMIT_CORE %d/%d -> %d/%d\n", old.Cur, old.Max, now.Cur, now.Max)
		debug.SetTraceback("crash")
		panic("escapetest: crash for a core dump")
	})
	// rewrite-wait-exec SRC DST ARGS...: open DST for write (create or
	// O_TRUNC), write SRC's bytes, close; wait for the test (which evicts
	// the inode); exec DST ARGS. Effect: its output has "pwned".
	probe.Register("rewrite-wait-exec", func(r *probe.Result, a []string) {
		f, err := os.OpenFile(a[1], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if !r.Require(err, "open "+a[1]+" for write") {
			return
		}
		err = copyFile(f, a[0])
		f.Close()
		if !r.Require(err, "write "+a[1]) {
			return
		}
		probe.Sync()
		probe.RunProgram(r, a[1:], nil, nil)
		r.Effect = strings.Contains(r.Out, "pwned")
	})
	// write-mmap-exec SRC DST sync|nosync mmap|mprotect: write DST (SRC's
	// bytes), optionally wait for the test, then map it executable
	// (mmap PROT_EXEC, or mmap PROT_READ and mprotect PROT_EXEC).
	probe.Register("write-mmap-exec", func(r *probe.Result, a []string) {
		f, err := os.OpenFile(a[1], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if !r.Require(err, "open "+a[1]+" for write") {
			return
		}
		err = copyFile(f, a[0])
		f.Close()
		if !r.Require(err, "write "+a[1]) {
			return
		}
		if a[2] == "sync" {
			probe.Sync()
		}
		mapExec(r, a[1], a[3])
	})
	// mmap-exec PATH mmap|mprotect: map an existing file executable.
	probe.Register("mmap-exec", func(r *probe.Result, a []string) { mapExec(r, a[0], a[1]) })
}

func mapExec(r *probe.Result, path, how string) {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if !r.Require(err, "open "+path) {
		return
	}
	defer unix.Close(fd)
	if how == "mprotect" {
		b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE)
		if !r.Require(err, "mmap PROT_READ") {
			return
		}
		r.Effect = r.Check(unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC), "mprotect PROT_EXEC")
		return
	}
	b, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if r.Check(err, "mmap PROT_EXEC") {
		r.Effect = true
		_ = unix.Munmap(b)
	}
}
