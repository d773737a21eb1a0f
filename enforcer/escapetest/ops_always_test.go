package escapetest

// Probe operations of the always-on cases (always_*_test.go) besides the
// capabilities: kernel settings, I/O-signal owners toward processes
// outside (native and compat), resource limits and core dumps.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

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
}
