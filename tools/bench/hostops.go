package bench

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The operations real hosts do besides the file, socket and process
// basics of ops.go: memory mappings, ioctls and fcntls, directory reads,
// vectored and spliced I/O, accepting connections, receiving datagrams,
// SysV messages, procfs, attribute changes, threads, a real fork, a
// dynamically linked exec and io_uring. Each op's constant (ops.go) says
// what one operation is; everything an op acts on is set up here before
// the worker reports ready.

// Sizes of the host operations.
const (
	getdentsFiles = 1000     // files of getdents_1k's directory
	getdentsBuf   = 32 << 10 // its getdents64 buffer (glibc's readdir buffer)
	mmapAnonSize  = 64 << 10 // mmap_anon's mapping
	threadMemSize = 64 << 10 // thread's stack and tid word (threadCreateJoin)
)

// hostEnv is what the host operations act on.
type hostEnv struct {
	ioctlPipe   [2]int // ioctl_fcntl: a pipe holding 16 B
	dentsDir    string // getdents_1k: a directory of getdentsFiles files
	dentsBuf    []byte
	rwFD        int // readv_writev: a 4 KiB file, O_RDWR
	rwW, rwR    []byte
	rwWiov      [2]unix.Iovec // 2 × 2 KiB of rwW
	rwRiov      [2]unix.Iovec // 2 × 2 KiB of rwR
	spliceFD    int           // splice: a 4 KiB file, O_RDONLY
	splicePipe  [2]int
	spliceOff   int64
	acceptLn    int // accept: the worker's own listener, nonblocking
	acceptPort  int
	acceptTo    unix.SockaddrInet4
	udpSelf     int // udp_recvfrom: bound to 127.0.0.1, sending to itself
	udpSelfPort int
	udpSelfTo   unix.SockaddrInet4
	msqID       int // sysv_msg: IPC_PRIVATE queue; -1: none
	msg         sysvMsg
	procBuf     []byte // proc_status
	chmodPath   string // chmod_setxattr
	chmodOdd    bool
	xattr       bool // chmod_setxattr: the file system takes user.* xattrs
	threadMem   []byte
	sigAll      uint64 // thread: every signal
	sigOld      uint64
	dynPath     string // exec_dynamic
	ring        *uring // io_uring_rw
	ringFD      int    // io_uring_rw's file, O_RDWR
	ringR       []byte
}

func newHostEnv() hostEnv {
	return hostEnv{ioctlPipe: [2]int{-1, -1}, rwFD: -1, spliceFD: -1, splicePipe: [2]int{-1, -1},
		acceptLn: -1, udpSelf: -1, msqID: -1, ringFD: -1}
}

// sysvMsg is a struct msgbuf with 16 B of text.
type sysvMsg struct {
	mtype int64
	text  [16]byte
}

// setupHost prepares what a host operation needs (nothing for any other
// op). Errors: whatever it cannot create, named; exec_dynamic without a
// dynamically linked binary; io_uring_rw where io_uring is disabled.
func (e *env) setupHost(op Op, c envConfig) error {
	h := &e.host
	switch op {
	case OpIoctlFcntl:
		if err := unix.Pipe2(h.ioctlPipe[:], unix.O_CLOEXEC); err != nil {
			return err
		}
		_, err := unix.Write(h.ioctlPipe[1], e.buf4k[:16])
		return err
	case OpGetdents:
		h.dentsDir = filepath.Join(e.dir, string(op))
		if err := os.RemoveAll(h.dentsDir); err != nil {
			return err
		}
		if err := os.MkdirAll(h.dentsDir, 0o755); err != nil {
			return err
		}
		for i := 0; i < getdentsFiles; i++ {
			if err := os.WriteFile(filepath.Join(h.dentsDir, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
				return err
			}
		}
		h.dentsBuf = make([]byte, getdentsBuf)
	case OpReadvWrite:
		fd, err := e.file4k(op, unix.O_RDWR)
		if err != nil {
			return err
		}
		h.rwFD = fd
		h.rwW = append(bytes.Repeat([]byte("a"), 2048), bytes.Repeat([]byte("b"), 2048)...)
		h.rwR = make([]byte, 4096)
		for i := range h.rwWiov {
			h.rwWiov[i] = unix.Iovec{Base: &h.rwW[i*2048]}
			h.rwWiov[i].SetLen(2048)
			h.rwRiov[i] = unix.Iovec{Base: &h.rwR[i*2048]}
			h.rwRiov[i].SetLen(2048)
		}
	case OpSplice:
		fd, err := e.file4k(op, unix.O_RDONLY)
		if err != nil {
			return err
		}
		h.spliceFD = fd
		return unix.Pipe2(h.splicePipe[:], unix.O_CLOEXEC)
	case OpAccept:
		fd, port, err := loopbackSocket(unix.SOCK_STREAM | unix.SOCK_NONBLOCK)
		if err != nil {
			return err
		}
		h.acceptLn, h.acceptPort = fd, port
		h.acceptTo = unix.SockaddrInet4{Addr: loopback.Addr, Port: port}
		return unix.Listen(fd, 128)
	case OpUDPRecvfrom:
		fd, port, err := loopbackSocket(unix.SOCK_DGRAM)
		if err != nil {
			return err
		}
		h.udpSelf, h.udpSelfPort = fd, port
		h.udpSelfTo = unix.SockaddrInet4{Addr: loopback.Addr, Port: port}
	case OpSysvMsg:
		id, _, errno := unix.Syscall(unix.SYS_MSGGET, 0 /* IPC_PRIVATE */, unix.IPC_CREAT|0o600, 0)
		if errno != 0 {
			return fmt.Errorf("msgget: %w", errno)
		}
		h.msqID = int(id)
		h.msg.mtype = 1
	case OpProcStatus:
		h.procBuf = make([]byte, 8192)
	case OpChmodXattr:
		h.chmodPath = filepath.Join(e.dir, string(op))
		if err := os.WriteFile(h.chmodPath, e.payload, 0o644); err != nil {
			return err
		}
		switch err := unix.Setxattr(h.chmodPath, "user.bench", e.payload[:8], 0); {
		case err == nil:
			h.xattr = true
		case errors.Is(err, unix.EOPNOTSUPP):
			// One wording for every phase's directory: the driver
			// keeps each distinct note once.
			e.notes = append(e.notes, fmt.Sprintf("%s: the scratch file system takes no user.* extended attributes (tmpfs before Linux 6.6): fchmodat only, no setxattr", op))
		default:
			return fmt.Errorf("setxattr user.bench: %w", err)
		}
	case OpThread:
		if !vforkSupported {
			return fmt.Errorf("%s is written for amd64 only", op)
		}
		m, err := unix.Mmap(-1, 0, threadMemSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		h.threadMem = m
		h.sigAll = ^uint64(0)
	case OpForkCopy:
		if !vforkSupported {
			return fmt.Errorf("%s is written for amd64 only", op)
		}
	case OpExecDynamic:
		p, err := findDynamic(c.execDynamic)
		if err != nil {
			return err
		}
		h.dynPath = p
	case OpIOUringRW:
		fd, err := e.file4k(op, unix.O_RDWR)
		if err != nil {
			return err
		}
		h.ringFD = fd
		h.ringR = make([]byte, 4096)
		h.ring, err = newURing()
		return err
	}
	return nil
}

// file4k creates the 4 KiB file of op in the scratch directory and opens
// it with flags.
func (e *env) file4k(op Op, flags int) (int, error) {
	p := filepath.Join(e.dir, string(op))
	if err := os.WriteFile(p, e.buf4k, 0o644); err != nil {
		return -1, err
	}
	return unix.Open(p, flags|unix.O_CLOEXEC, 0)
}

// loopbackSocket is an AF_INET socket of typ bound to 127.0.0.1 (port
// chosen by the kernel) and its port.
func loopbackSocket(typ int) (int, int, error) {
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: loopback.Addr}); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, sa.(*unix.SockaddrInet4).Port, nil
}

// dynamicCandidates are where findDynamic looks for a dynamically linked
// `true`.
var dynamicCandidates = []string{"/usr/bin/true", "/bin/true"}

// findDynamic returns path if given, else the first of dynamicCandidates,
// once it has checked that the file is an ELF executable naming a program
// interpreter that exists. Errors: none found (the busybox guest has only
// a static `true`: add a dynamically linked one with its interpreter and
// libraries), or path not such a binary.
func findDynamic(path string) (string, error) {
	try := dynamicCandidates
	if path != "" {
		try = []string{path}
	}
	var why []string
	for _, p := range try {
		err := checkDynamic(p)
		if err == nil {
			return p, nil
		}
		why = append(why, err.Error())
	}
	return "", fmt.Errorf("no dynamically linked executable for %s (-exec-dynamic; add one with its program interpreter and libraries to a guest): %s", OpExecDynamic, strings.Join(why, "; "))
}

// checkDynamic is nil when p is an ELF executable whose program
// interpreter exists.
func checkDynamic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, pr := range f.Progs {
		if pr.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, pr.Filesz)
		if _, err := pr.ReadAt(b, 0); err != nil {
			return fmt.Errorf("%s: program interpreter: %w", p, err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		if _, err := os.Stat(interp); err != nil {
			return fmt.Errorf("%s: program interpreter: %w", p, err)
		}
		return nil
	}
	return fmt.Errorf("%s: statically linked (no PT_INTERP)", p)
}

// closeHost releases what outlives the worker: the SysV queue.
func (e *env) closeHost() error {
	if e.host.msqID < 0 {
		return nil
	}
	_, _, errno := unix.Syscall(unix.SYS_MSGCTL, uintptr(e.host.msqID), unix.IPC_RMID, 0)
	e.host.msqID = -1
	if errno != 0 {
		return fmt.Errorf("msgctl(IPC_RMID): %w", errno)
	}
	return nil
}

// runHost performs one host operation once.
func (e *env) runHost(op Op) error {
	h := &e.host
	switch op {
	case OpMmapAnon:
		addr, _, errno := unix.Syscall6(unix.SYS_MMAP, 0, mmapAnonSize, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
		if errno != 0 {
			return e.check(op, fmt.Errorf("mmap: %w", errno))
		}
		var err error
		if _, _, errno := unix.Syscall(unix.SYS_MPROTECT, addr, mmapAnonSize, unix.PROT_READ); errno != 0 {
			err = fmt.Errorf("mprotect: %w", errno)
		}
		if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, addr, mmapAnonSize, 0); errno != 0 {
			err = errors.Join(err, fmt.Errorf("munmap: %w", errno))
		}
		return e.check(op, err)
	case OpIoctlFcntl:
		n, err := unix.IoctlGetInt(h.ioctlPipe[0], unix.TIOCINQ) // FIONREAD
		if err == nil && n != 16 {
			err = fmt.Errorf("FIONREAD: %d bytes, want 16", n)
		}
		if err == nil {
			var fl int
			fl, err = unix.FcntlInt(uintptr(h.ioctlPipe[0]), unix.F_GETFL, 0)
			if err == nil && fl&unix.O_ACCMODE != unix.O_RDONLY {
				err = fmt.Errorf("F_GETFL: %#x, want O_RDONLY", fl)
			}
		}
		return e.check(op, err)
	case OpGetdents:
		return e.check(op, e.readDir())
	case OpReadvWrite:
		n, _, errno := unix.Syscall6(unix.SYS_PWRITEV, uintptr(h.rwFD), uintptr(unsafe.Pointer(&h.rwWiov[0])), 2, 0, 0, 0)
		if errno != 0 {
			return e.check(op, errno)
		}
		if err := full("pwritev", int(n), 4096, nil); err != nil {
			return e.check(op, err)
		}
		if len(h.rwR) == 4096 {
			h.rwR[0], h.rwR[4095] = 0, 0
		}
		n, _, errno = unix.Syscall6(unix.SYS_PREADV, uintptr(h.rwFD), uintptr(unsafe.Pointer(&h.rwRiov[0])), 2, 0, 0, 0)
		var err error
		if errno != 0 {
			err = errno
		} else if err = full("preadv", int(n), 4096, nil); err == nil && (h.rwR[0] != 'a' || h.rwR[4095] != 'b') {
			err = errors.New("preadv: not what pwritev wrote")
		}
		return e.check(op, err)
	case OpSplice:
		h.spliceOff = 0
		n, err := unix.Splice(h.spliceFD, &h.spliceOff, h.splicePipe[1], nil, 4096, 0)
		if err = full("splice", int(n), 4096, err); err == nil {
			var m int
			m, err = unix.Read(h.splicePipe[0], e.buf4k)
			err = full("pipe read", m, 4096, err)
		}
		return e.check(op, err)
	case OpAccept:
		return e.check(op, e.acceptOnce())
	case OpUDPRecvfrom:
		if err := unix.Sendto(h.udpSelf, e.buf4k[:16], 0, &h.udpSelfTo); err != nil {
			return e.check(op, err)
		}
		return e.check(op, rawRecvfrom(h.udpSelf, e.buf4k[:16], h.udpSelfPort))
	case OpSysvMsg:
		_, _, errno := unix.Syscall6(unix.SYS_MSGSND, uintptr(h.msqID), uintptr(unsafe.Pointer(&h.msg)), 16, unix.IPC_NOWAIT, 0, 0)
		if errno != 0 {
			return e.check(op, fmt.Errorf("msgsnd: %w", errno))
		}
		n, _, errno := unix.Syscall6(unix.SYS_MSGRCV, uintptr(h.msqID), uintptr(unsafe.Pointer(&h.msg)), 16, 0, unix.IPC_NOWAIT, 0)
		var err error
		if errno != 0 {
			err = fmt.Errorf("msgrcv: %w", errno)
		} else {
			err = full("msgrcv", int(n), 16, nil)
		}
		return e.check(op, err)
	case OpProcStatus:
		fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return e.check(op, err)
		}
		n, err := unix.Read(fd, h.procBuf)
		unix.Close(fd)
		if err == nil && (n == len(h.procBuf) || !bytes.HasPrefix(h.procBuf[:n], []byte("Name:"))) {
			err = fmt.Errorf("read /proc/self/status: %d bytes not the whole file", n)
		}
		return e.check(op, err)
	case OpChmodXattr:
		mode := uint32(0o644)
		if h.chmodOdd {
			mode = 0o640
		}
		if h.chmodPath == "" {
			return e.check(op, errors.New("no file set up"))
		}
		err := unix.Fchmodat(unix.AT_FDCWD, h.chmodPath, mode, 0)
		if err == nil {
			h.chmodOdd = !h.chmodOdd
			if h.xattr {
				err = unix.Setxattr(h.chmodPath, "user.bench", e.payload[:8], 0)
			}
		}
		return e.check(op, err)
	case OpThread:
		return e.check(op, e.threadCreateJoin())
	case OpForkCopy:
		pid := forkExit()
		if pid < 0 {
			return e.check(op, syscall.Errno(-pid))
		}
		return e.check(op, rawWaitOK(int(pid), "forked child"))
	case OpExecDynamic:
		if h.dynPath == "" {
			return e.check(op, errors.New("no dynamically linked binary set up"))
		}
		pid, err := syscall.ForkExec(h.dynPath, []string{h.dynPath}, &syscall.ProcAttr{Env: []string{}})
		if err != nil {
			return e.check(op, err)
		}
		return e.check(op, waitOK(pid, h.dynPath))
	case OpIOUringRW:
		if h.ring == nil {
			return e.check(op, errors.New("no io_uring set up"))
		}
		return e.check(op, h.ring.readWrite(h.ringFD, h.ringR, e.buf4k))
	}
	return fmt.Errorf("unknown op %q", op)
}

// readDir is getdents_1k: it opens the directory, reads it to the end and
// checks that it saw every file, "." and "..".
func (e *env) readDir() error {
	h := &e.host
	fd, err := unix.Open(h.dentsDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	entries := 0
	for {
		n, err := unix.Getdents(fd, h.dentsBuf)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		for off := 0; off < n; entries++ {
			// struct linux_dirent64: d_ino, d_off, then d_reclen.
			reclen := int(binary.NativeEndian.Uint16(h.dentsBuf[off+16:]))
			if reclen == 0 {
				return errors.New("getdents64: a record of length 0")
			}
			off += reclen
		}
	}
	if entries != getdentsFiles+2 {
		return fmt.Errorf("getdents64: %d entries, want %d", entries, getdentsFiles+2)
	}
	return nil
}

// acceptOnce is one accept operation (OpAccept): the connecting socket is
// closed first, with linger 0 (an RST: no TIME_WAIT on either side), then
// the accepted one.
func (e *env) acceptOnce() error {
	h := &e.host
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	if err := unix.Connect(fd, &h.acceptTo); err != nil && !errors.Is(err, unix.EINPROGRESS) {
		unix.Close(fd)
		return err
	}
	nfd, _, err := unix.Accept4(h.acceptLn, unix.SOCK_CLOEXEC)
	if errors.Is(err, unix.EAGAIN) {
		pfd := []unix.PollFd{{Fd: int32(h.acceptLn), Events: unix.POLLIN}}
		if n, perr := unix.Poll(pfd, 1000); perr != nil || n == 0 {
			unix.Close(fd)
			return fmt.Errorf("accept4: no connection within a second of connect (%v)", perr)
		}
		nfd, _, err = unix.Accept4(h.acceptLn, unix.SOCK_CLOEXEC)
	}
	cerr := unix.Close(fd)
	if err != nil {
		return fmt.Errorf("accept4: %w", err)
	}
	return errors.Join(cerr, unix.Close(nfd))
}

// rawRecvfrom is recvfrom(2) of len(b) bytes on fd by a raw system call
// (see rawRW: the datagram is queued by the time sendto returns, so it
// does not block; were it not, it waits for the kernel, not for a thread
// of the worker). Errors: the call's, a short datagram, a source other
// than 127.0.0.1:port.
func rawRecvfrom(fd int, b []byte, port int) error {
	var sa unix.RawSockaddrInet4
	salen := uint32(unsafe.Sizeof(sa))
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0,
			uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&salen)))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		if err := full("recvfrom", int(n), len(b), nil); err != nil {
			return err
		}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		if sa.Addr != loopback.Addr || int(p[0])<<8|int(p[1]) != port {
			return fmt.Errorf("recvfrom: datagram from %v:%d, want 127.0.0.1:%d", sa.Addr, int(p[0])<<8|int(p[1]), port)
		}
		return nil
	}
}

// threadCreateJoin creates a thread and joins it as glibc's pthread_create
// and pthread_join do (the flags of glibc's create_thread; every signal
// blocked around the clone, so the new thread starts with all of them
// blocked), written in assembly (cloneThreadExit) because the thread runs
// no Go code: it calls exit(2) at once, touching no memory. Not a
// goroutine on a new OS thread (runtime.LockOSThread): the Go scheduler
// decides when and whether that creates a thread, and the thread's start
// and exit would go through its bookkeeping, which is not what a host's
// threads pay. The join is a raw futex wait (it waits for the kernel to
// clear the tid word at the thread's exit, not for a Go thread). Errors:
// clone's, the futex wait's.
func (e *env) threadCreateJoin() error {
	h := &e.host
	if len(h.threadMem) != threadMemSize {
		return errors.New("no thread stack set up")
	}
	tid := (*int32)(unsafe.Pointer(&h.threadMem[0]))
	tls := uintptr(unsafe.Pointer(&h.threadMem[64]))
	stack := uintptr(unsafe.Pointer(&h.threadMem[0])) + threadMemSize
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&h.sigAll)), uintptr(unsafe.Pointer(&h.sigOld)), 8, 0, 0); errno != 0 {
		return fmt.Errorf("rt_sigprocmask: %w", errno)
	}
	r := cloneThreadExit(stack, tid, tls)
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&h.sigOld)), 0, 8, 0, 0); errno != 0 {
		return fmt.Errorf("rt_sigprocmask: %w", errno)
	}
	if r < 0 {
		return fmt.Errorf("clone: %w", syscall.Errno(-r))
	}
	for {
		v := atomic.LoadInt32(tid)
		if v == 0 {
			return nil
		}
		_, _, errno := unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(tid)), 0 /* FUTEX_WAIT */, uintptr(v), 0, 0, 0)
		if errno != 0 && errno != unix.EAGAIN && errno != unix.EINTR {
			return fmt.Errorf("futex wait for thread %d: %w", r, errno)
		}
	}
}
