package escapetest

// Probe operations of the escape and tamper cases (tamper_test.go,
// host_test.go): terminals, cgroup moves, bpf(), processes outside, mounts,
// host settings and the helpers the kernel runs outside. test/probe's
// unlink and rename act on pins.

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

func rawBPF(cmd int, attr unsafe.Pointer, size uintptr) syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	return e
}

// bpfNextID is BPF_{MAP,PROG}_GET_NEXT_ID from id 0.
func bpfNextID(cmd int) syscall.Errno {
	var attr [16]byte // start_id, next_id, open_flags
	return rawBPF(cmd, unsafe.Pointer(&attr[0]), unsafe.Sizeof(attr))
}

func bpfObjGet(path string) syscall.Errno {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return unix.EINVAL
	}
	var attr struct {
		pathname uint64
		bpfFd    uint32
		flags    uint32
	}
	attr.pathname = uint64(uintptr(unsafe.Pointer(p)))
	r, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(p)
	if e == 0 {
		unix.Close(int(r))
	}
	return e
}

func writeFile(path, data string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(data)
	return err
}

// injected reports whether the slave has input to read (TIOCSTI of "\n").
func injected(s int) bool {
	buf := make([]byte, 8)
	n, _ := unix.Read(s, buf)
	return n > 0
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		"tiocsti": func(r *probe.Result, a []string) {
			_, s, err := probe.OpenPty(true)
			if !r.Require(err, "open pty") {
				return
			}
			c := byte('\n')
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
			r.Errno = e
			r.Effect = injected(s)
		},
		// tiocsti-compat: TIOCSTI through the 32-bit ioctl (compat_sys_ioctl).
		"tiocsti-compat": func(r *probe.Result, a []string) {
			_, s, err := probe.OpenPty(true)
			if !r.Require(err, "open pty") {
				return
			}
			page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_32BIT)
			if !r.Require(err, "mmap MAP_32BIT") {
				return
			}
			page[0] = '\n'
			const i386Ioctl = 54
			ret := Int80(i386Ioctl, uintptr(s), unix.TIOCSTI, uintptr(unsafe.Pointer(&page[0])))
			if ret < 0 {
				r.Errno = syscall.Errno(-ret)
			}
			if r.Errno == unix.ENOSYS {
				r.Setup = "32-bit system calls are disabled in this kernel"
			}
			r.Effect = injected(s)
		},
		// write PATH DATA: open an existing file for write and write DATA.
		"write": func(r *probe.Result, a []string) { r.Check(writeFile(a[0], a[1]), "write "+a[0]) },
		// move PROCS: write this process's pid to a cgroup.procs file.
		"move": func(r *probe.Result, a []string) {
			r.Check(writeFile(a[0], strconv.Itoa(os.Getpid())), "write "+a[0])
			r.Out = unifiedCgroupLine()
		},
		// unshare-move PROCS: a new cgroup namespace, then the same move.
		"unshare-move": func(r *probe.Result, a []string) {
			runtime.LockOSThread()
			if !r.Require(unix.Unshare(unix.CLONE_NEWCGROUP), "unshare(CLONE_NEWCGROUP)") {
				return
			}
			r.Check(writeFile(a[0], strconv.Itoa(os.Getpid())), "write "+a[0])
			r.Out = unifiedCgroupLine()
		},
		// setns-move PROCS: join pid 1's cgroup namespace, then move.
		"setns-move": func(r *probe.Result, a []string) {
			runtime.LockOSThread()
			fd, err := unix.Open("/proc/1/ns/cgroup", unix.O_RDONLY, 0)
			if !r.Check(err, "open /proc/1/ns/cgroup") {
				return
			}
			if !r.Check(unix.Setns(fd, unix.CLONE_NEWCGROUP), "setns") {
				return
			}
			r.Check(writeFile(a[0], strconv.Itoa(os.Getpid())), "write "+a[0])
			r.Out = unifiedCgroupLine()
		},
		// clone-into DIR: start a child directly in cgroup DIR (clone3
		// CLONE_INTO_CGROUP); the child reports its cgroup.
		"clone-into": func(r *probe.Result, a []string) {
			d, err := os.Open(a[0])
			if !r.Require(err, "open cgroup dir") {
				return
			}
			cmd := exec.Command("/proc/self/exe")
			cmd.Env = probe.Env("cgroup")
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(d.Fd())}
			out, err := cmd.Output()
			if r.Check(err, "clone3 into "+a[0]) {
				r.Out = strings.TrimSpace(string(out))
			}
		},
		"cgroup": func(r *probe.Result, a []string) {
			r.Out = unifiedCgroupLine()
		},
		"bpf-map-next-id":  func(r *probe.Result, a []string) { r.Errno = bpfNextID(unix.BPF_MAP_GET_NEXT_ID) },
		"bpf-prog-next-id": func(r *probe.Result, a []string) { r.Errno = bpfNextID(unix.BPF_PROG_GET_NEXT_ID) },
		"bpf-obj-get":      func(r *probe.Result, a []string) { r.Errno = bpfObjGet(a[0]) },
		"ptrace-seize": func(r *probe.Result, a []string) {
			runtime.LockOSThread()
			pid, _ := strconv.Atoi(a[0])
			r.Check(unix.PtraceSeize(pid), "ptrace")
		},
		"mem-open": func(r *probe.Result, a []string) {
			fd, err := unix.Open("/proc/"+a[0]+"/mem", unix.O_RDWR, 0)
			if r.Check(err, "open mem") {
				unix.Close(fd)
			}
		},
		"kill": func(r *probe.Result, a []string) {
			pid, _ := strconv.Atoi(a[0])
			r.Check(unix.Kill(pid, unix.SIGKILL), "kill")
		},
		// kill-inside: start a child (inside the sandbox) and SIGKILL it.
		"kill-inside": func(r *probe.Result, a []string) {
			cmd := exec.Command("/proc/self/exe")
			cmd.Env = probe.Env("sleep")
			if !r.Require(cmd.Start(), "start child") {
				return
			}
			r.Check(cmd.Process.Signal(unix.SIGKILL), "kill")
			err := cmd.Wait()
			r.Effect = err != nil && strings.Contains(err.Error(), "killed")
		},
		// sigio-kill PID: a pipe whose owner is PID, F_SETSIG SIGKILL, O_ASYNC,
		// then a write: the kernel sends SIGKILL to PID (send_sigio).
		"sigio-kill": func(r *probe.Result, a []string) {
			pid, _ := strconv.Atoi(a[0])
			var p [2]int
			if !r.Require(unix.Pipe(p[:]), "pipe") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, pid); !r.Check(err, "F_SETOWN") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
				return
			}
			_, err := unix.Write(p[1], []byte("x"))
			r.Check(err, "write pipe")
		},
		// sigio-ioctl PID: like sigio-kill, but the owner is set with the
		// FIOSETOWN ioctl on a socketpair instead of fcntl(F_SETOWN).
		"sigio-ioctl": func(r *probe.Result, a []string) {
			pid, _ := strconv.Atoi(a[0])
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if !r.Require(err, "socketpair") {
				return
			}
			if !r.Check(unix.IoctlSetPointerInt(fds[0], 0x8901 /* FIOSETOWN */, pid), "FIOSETOWN") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
				return
			}
			if !r.Check(unix.IoctlSetPointerInt(fds[0], 0x5452 /* FIOASYNC */, 1), "FIOASYNC") {
				return
			}
			_, err = unix.Write(fds[1], []byte("x"))
			r.Check(err, "write socketpair")
		},
		// setpriority PID: renice a process to 19.
		"setpriority": func(r *probe.Result, a []string) {
			pid, _ := strconv.Atoi(a[0])
			r.Check(unix.Setpriority(unix.PRIO_PROCESS, pid, 19), "setpriority")
		},
		// prlimit-cpu PID: RLIMIT_CPU of 1 s (the kernel then kills it).
		"prlimit-cpu": func(r *probe.Result, a []string) {
			pid, _ := strconv.Atoi(a[0])
			r.Check(unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: 1, Max: 1}, nil), "prlimit")
		},
		// ifflags: SIOCSIFFLAGS on lo with its current flags, via AF_UNIX.
		"ifflags": func(r *probe.Result, a []string) {
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
			r.Check(unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr), "SIOCSIFFLAGS")
		},
		// settime: set the realtime clock to what it reads now.
		"settime": func(r *probe.Result, a []string) {
			var ts unix.Timespec
			if !r.Require(unix.ClockGettime(unix.CLOCK_REALTIME, &ts), "clock_gettime") {
				return
			}
			r.Check(unix.ClockSettime(unix.CLOCK_REALTIME, &ts), "clock_settime")
		},
		// afsock FAMILY: socket() of an address family that is not loaded
		// makes the kernel request_module("net-pf-FAMILY"): a usermode helper
		// outside every sandbox.
		"afsock": func(r *probe.Result, a []string) {
			fam, _ := strconv.Atoi(a[0])
			fd, err := unix.Socket(fam, unix.SOCK_SEQPACKET, 0)
			if err == nil {
				unix.Close(fd)
			}
			if err == unix.EAFNOSUPPORT {
				err = nil // not loaded either way; whether the helper ran decides
			}
			r.Check(err, "socket")
		},
		"mount-tmpfs": func(r *probe.Result, a []string) {
			r.Check(unix.Mount("escapetest", a[0], "tmpfs", 0, ""), "mount")
		},
		// mount-setattr PATH: clear MOUNT_ATTR_RDONLY on the mount at PATH.
		"mount-setattr": func(r *probe.Result, a []string) {
			attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
			r.Check(unix.MountSetattr(unix.AT_FDCWD, a[0], 0, &attr), "mount_setattr")
		},
		// fspick-remount PATH: remount the superblock at PATH read-only with the
		// new mount API (fspick + fsconfig RECONFIGURE).
		"fspick-remount": func(r *probe.Result, a []string) {
			fd, err := unix.Fspick(unix.AT_FDCWD, a[0], unix.FSPICK_CLOEXEC)
			if !r.Check(err, "fspick") {
				return
			}
			if !r.Check(unix.FsconfigSetFlag(fd, "ro"), "fsconfig ro") {
				return
			}
			_, _, e := unix.Syscall6(unix.SYS_FSCONFIG, uintptr(fd), unix.FSCONFIG_CMD_RECONFIGURE, 0, 0, 0, 0)
			r.Errno = e
		},
		// fsmount: a new tmpfs mount with fsopen/fsconfig/fsmount (detached).
		"fsmount": func(r *probe.Result, a []string) {
			fd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
			if !r.Check(err, "fsopen") {
				return
			}
			if !r.Check(unix.FsconfigCreate(fd), "fsconfig create") {
				return
			}
			m, err := unix.Fsmount(fd, unix.FSMOUNT_CLOEXEC, 0)
			if r.Check(err, "fsmount") {
				unix.Close(m)
			}
		},
		// core-pattern PATTERN: set the kernel's core pattern, then crash a
		// child so the kernel runs the pattern's helper (outside any cgroup of
		// ours, as root).
		"core-pattern": func(r *probe.Result, a []string) {
			if !r.Check(writeFile("/proc/sys/kernel/core_pattern", a[0]), "write core_pattern") {
				return
			}
			cmd := exec.Command("/proc/self/exe")
			cmd.Env = append(probe.Env("crash"), "GOTRACEBACK=crash")
			_ = cmd.Run()
		},
		"crash": func(r *probe.Result, a []string) {
			unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
			panic("escapetest: crash for a core dump")
		},
		// flood N: N denied bpf() calls; Out is how many were not EPERM.
		"flood": func(r *probe.Result, a []string) {
			n, _ := strconv.Atoi(a[0])
			bad := 0
			for i := 0; i < n; i++ {
				if bpfNextID(unix.BPF_MAP_GET_NEXT_ID) != unix.EPERM {
					bad++
				}
			}
			r.Out = strconv.Itoa(bad)
		},
		// sub-then OP ARGS...: create a sub-cgroup of the own cgroup, move into
		// it (must succeed), then run OP there.
		"sub-then": func(r *probe.Result, a []string) {
			g, err := os.ReadFile("/proc/self/cgroup")
			if !r.Require(err, "own cgroup") {
				return
			}
			dir := filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(unifiedLine(g), "0::"), "sub")
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				r.Setup = "mkdir sub-cgroup: " + err.Error()
				return
			}
			if !r.Require(writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(os.Getpid())), "move into sub-cgroup") {
				return
			}
			op, ok := probe.Lookup(a[0])
			if !ok {
				r.Setup = "unknown operation " + a[0]
				return
			}
			op(r, a[1:])
			r.Op = "sub-then " + a[0]
		},
	})
}

// unifiedCgroupLine is the process's cgroup v2 line of /proc/self/cgroup
// ("0::/path"), "" when it cannot be read. Other lines (a named v1
// hierarchy some tool mounted, e.g. name=systemd) are left out.
func unifiedCgroupLine() string {
	g, _ := os.ReadFile("/proc/self/cgroup")
	return unifiedLine(g)
}

// unifiedLine is the "0::" line of a /proc/PID/cgroup text.
func unifiedLine(g []byte) string {
	for _, l := range strings.Split(string(g), "\n") {
		if strings.HasPrefix(l, "0::") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func init() {
	// autogroup-nice N: write N to /proc/self/autogroup (the nice level of
	// the caller's session autogroup, shared with every process of the
	// session, inside the sandbox or not).
	probe.Register("autogroup-nice", func(r *probe.Result, a []string) {
		time.Sleep(200 * time.Millisecond) // the kernel's 100 ms rate limit
		r.Check(writeFile("/proc/self/autogroup", a[0]), "write /proc/self/autogroup")
	})
}
