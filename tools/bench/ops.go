// Package bench is the driver of `make bench`: syscall
// microbenchmarks, a file-heavy macro workload, scale, registration latency,
// memory and an audit flood, each measured without enforcerd, with its
// programs loaded, under an enforced ceiling, on the denied path, and under
// the same intent expressed with Landlock. Figures are ratios against the
// no-program baseline of the same run (TCG timings mean nothing absolute).
//
// The measured work runs in worker processes (this binary re-executed with
// "worker") started directly inside the phase's cgroup with
// CLONE_INTO_CGROUP, so the parent (the driver, in an unregistered cgroup)
// never runs under a ceiling.
//
// Layering (docs/design.md): a tool; it may import anything, and only cmd/
// and tools/ import it.
package bench

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Op names one microbenchmark operation.
type Op string

// The measured operations (docs/performance.md says why each). Each
// comment says what one operation is; every file and descriptor an
// operation uses is set up before the worker reports ready (newEnv), so
// setup is never measured and never runs under a ceiling.
const (
	OpOpenRead    Op = "open_read"     // open(O_RDONLY) + close of an existing file
	OpCreateWrite Op = "create_unlink" // open(O_CREAT|O_WRONLY) + write 64 B + close + unlink
	OpStat        Op = "stat"          // stat of an existing file
	OpRename      Op = "rename"        // rename within one directory
	OpExec        Op = "exec"          // fork + exec of a static binary + wait
	OpSocket      Op = "socket_close"  // socket(AF_INET, SOCK_STREAM) + close
	OpConnect     Op = "connect"       // socket + connect to a loopback listener + close (RST)
	OpPread       Op = "pread_4k"      // pread of 4 KiB at offset 0 of a 4 KiB file opened O_RDONLY beforehand
	// OpPwrite is pwrite of 4 KiB at offset 0 through a descriptor opened
	// O_RDWR beforehand (before any ceiling applies): enforcerd's
	// file_permission hook still denies it under write=false (the write,
	// not the open, is checked), so it is Deniable.
	OpPwrite     Op = "pwrite_4k"
	OpPipe       Op = "pipe_pingpong" // 1 byte through a pipe to a partner thread of the worker and 1 byte back (the measuring thread's side: its write, its read, and the switch to the partner and back)
	OpUnixStream Op = "unix_stream"   // send + recv of 16 B on an AF_UNIX SOCK_STREAM socketpair
	OpUnixDgram  Op = "unix_dgram"    // send + recv of 16 B on an AF_UNIX SOCK_DGRAM socketpair
	OpTCPRR      Op = "tcp_rr"        // 16 B request + 16 B echoed response on an established loopback TCP connection to the listener
	OpUDPSendto  Op = "udp_sendto"    // sendto of 16 B from a bound UDP socket to the loopback UDP sink
	OpFork       Op = "fork"          // process creation as posix_spawn does it (clone with CLONE_VM|CLONE_VFORK|SIGCHLD: no copy of the address space, the parent held until the child exits) + child _exit(0) + wait
	OpMmapExec   Op = "mmap_exec"     // mmap(PROT_READ|PROT_EXEC, MAP_PRIVATE) of one page of the exec op's binary + munmap
	// OpKill is kill(getpid(), 0): check_kill_permission calls the LSM
	// hook task_kill for every signal a process sends, signal 0 and the
	// sender itself included, so the hook runs without a second process.
	OpKill        Op = "kill"
	OpOpenDepth1  Op = "open_depth1"  // open(O_RDONLY) + close of a file 1 directory below the phase directory
	OpOpenDepth10 Op = "open_depth10" // open(O_RDONLY) + close of a file 10 directories below the phase directory
	OpOpenDepth28 Op = "open_depth28" // open(O_RDONLY) + close of a file 28 directories below the phase directory
	// The operations real hosts do besides the ones above (hostops.go).
	OpMmapAnon   Op = "mmap_anon"    // mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS) of 64 KiB + mprotect(PROT_READ) of it + munmap, no page touched
	OpIoctlFcntl Op = "ioctl_fcntl"  // ioctl(FIONREAD) on the read end of a pipe holding 16 B + fcntl(F_GETFL) on it
	OpGetdents   Op = "getdents_1k"  // open(O_RDONLY|O_DIRECTORY) of a directory of 1,000 files + getdents64 into 32 KiB until it returns 0 + close
	OpReadvWrite Op = "readv_writev" // pwritev of 2 × 2 KiB at offset 0 of a 4 KiB file + preadv of the same 2 × 2 KiB, through a descriptor opened O_RDWR beforehand (Deniable as pwrite_4k)
	OpSplice     Op = "splice"       // splice of 4 KiB at offset 0 of a file opened O_RDONLY beforehand into an empty pipe + read(2) of the 4 KiB out of the pipe
	// OpAccept is socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK) +
	// setsockopt(SO_LINGER 0) + connect to a loopback listener of the
	// worker's own (listening since setup, nonblocking) + accept4 on the
	// listener + close of the connecting socket (RST) + close of the
	// accepted one. No partner: the kernel completes the loopback
	// handshake inside connect, so the connection is in the accept queue
	// when connect returns (EINPROGRESS); should it not be, accept4 polls
	// the listener for up to a second, then fails.
	OpAccept      Op = "accept"
	OpUDPRecvfrom Op = "udp_recvfrom"   // sendto of 16 B from a UDP socket bound to 127.0.0.1 beforehand to its own address + recvfrom of the 16 B on it
	OpSysvMsg     Op = "sysv_msg"       // msgsnd of 16 B + msgrcv of them (both IPC_NOWAIT) on a private SysV message queue the worker created beforehand (removed when it exits)
	OpProcStatus  Op = "proc_status"    // open(O_RDONLY) of /proc/self/status + one read(2) of it whole (into 8 KiB) + close
	OpChmodXattr  Op = "chmod_setxattr" // fchmodat of a file (0644 and 0640 in turn) + setxattr(user.bench, 8 B) on it by path; where tmpfs has no user.* xattrs (before Linux 6.6) the setxattr is left out and the worker's result says so
	// OpThread is a thread created and joined as pthread_create and
	// pthread_join do (hostops.go threadCreateJoin): every signal blocked
	// + clone(CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|
	// CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID)
	// on a stack allocated beforehand + the signal mask restored + the
	// thread's exit(0) + futex wait until the kernel clears its tid.
	OpThread Op = "thread"
	// OpForkCopy is fork(2): clone(SIGCHLD) without CLONE_VM, so the
	// worker's address space is copied (page tables, copy-on-write) +
	// child exit_group(0) + wait. What it costs depends on how much the
	// worker has mapped (see spawnExit): compare phases, not machines.
	OpForkCopy    Op = "fork_copy"
	OpExecDynamic Op = "exec_dynamic" // fork + execve of a dynamically linked `true` (found at setup: its ELF names a program interpreter) + wait
	// OpIOUringRW is one IORING_OP_READ and one IORING_OP_WRITE of 4 KiB
	// at offset 0 of a 4 KiB file opened O_RDWR beforehand, submitted
	// together by one io_uring_enter that also waits for both completions
	// (the ring set up beforehand with io_uring_setup and mmap).
	OpIOUringRW Op = "io_uring_rw"
	OpMacro     Op = "macro_untar" // unpack a source tree, walk + stat + read it, remove it
	// OpExecStorm runs the exec op's binary once per file of a tree of
	// execStormFiles files (fork + exec with the file as its argument +
	// wait, one after the other), as `find -exec` or a build's tool runs do.
	OpExecStorm Op = "exec_storm"
	// OpStatStorm lstats every entry of a tree of statStormEntries
	// entries (directories and files, paths listed beforehand), as `git
	// status` refreshing its index does.
	OpStatStorm Op = "stat_storm"
	OpFlood     Op = "flood"          // audit flood: denied socket() in a loop
	OpLatency   Op = "latency_socket" // registration latency probe
)

// MicroOps is every microbenchmark in table order.
var MicroOps = []Op{OpOpenRead, OpCreateWrite, OpStat, OpRename, OpExec, OpSocket, OpConnect,
	OpPread, OpPwrite, OpPipe, OpUnixStream, OpUnixDgram, OpTCPRR, OpUDPSendto,
	OpFork, OpMmapExec, OpKill, OpOpenDepth1, OpOpenDepth10, OpOpenDepth28,
	OpMmapAnon, OpIoctlFcntl, OpGetdents, OpReadvWrite, OpSplice, OpAccept, OpUDPRecvfrom,
	OpSysvMsg, OpProcStatus, OpChmodXattr, OpThread, OpForkCopy, OpExecDynamic, OpIOUringRW}

// MacroOps is every macro workload in table order. OpMacro runs only when
// the run has a tarball (-tar); the storms build their own trees.
var MacroOps = []Op{OpMacro, OpExecStorm, OpStatStorm}

// allOps is MicroOps then MacroOps: the order of tables and summary lines.
func allOps() []Op { return append(append([]Op{}, MicroOps...), MacroOps...) }

// isMacro reports whether op is a macro workload (MacroOps).
func isMacro(op Op) bool {
	for _, m := range MacroOps {
		if op == m {
			return true
		}
	}
	return false
}

// NetOps are the operations the cgroup-BPF layer sees (the native part).
var NetOps = []Op{OpSocket, OpConnect}

// Sizes of the storms' trees.
const (
	execStormFiles   = 100  // files of the exec storm's tree (10 directories of 10)
	statStormEntries = 3030 // entries of the stat storm's tree (30 directories of 100 files, and the 30 directories)
)

// Deniable reports whether an enforced deny-all ceiling (network=false,
// write=false, shell=none) denies op, so that phase (d) runs it and
// requires EPERM: writes (create_unlink, rename, and pwrite_4k,
// readv_writev's pwritev and io_uring_rw's IORING_OP_WRITE through
// descriptors opened before the ceiling: file_permission checks every
// write, io_uring's too; chmod_setxattr at inode_setattr), exec
// (bprm_check_security: exec, exec_dynamic), inet sockets (socket_create:
// socket_close, accept's socket; connect; tcp_rr on a connection
// established before the ceiling, udp_sendto and udp_recvfrom's sendto
// from sockets created before it, at socket_sendmsg).
// Never denied: reads (getdents_1k, proc_status, splice of a file into a
// pipe), stats, pipes (exempt from the write ceiling; ioctl_fcntl's
// FIONREAD and F_GETFL change nothing), unix socketpairs (both peers
// inside the sandbox), a SysV queue the sandbox created itself
// (ipc_permission allows objects created inside it), anonymous memory
// (mmap_anon), fork, fork_copy, thread, a signal to oneself, and an
// executable mapping of a file the sandbox could not have written.
// The macro workloads run only on allowed paths.
func Deniable(op Op) bool {
	switch op {
	case OpCreateWrite, OpRename, OpExec, OpSocket, OpConnect, OpPwrite, OpTCPRR, OpUDPSendto,
		OpReadvWrite, OpAccept, OpUDPRecvfrom, OpChmodXattr, OpExecDynamic, OpIOUringRW:
		return true
	}
	return false
}

// LandlockExpresses reports whether Landlock at ABI abi mediates op (so that
// a Landlock figure is a comparison of like with like): opens, creations,
// renames and execs by path (every ABI: open_read, create_unlink, rename,
// exec, exec_dynamic, the open_depth ops, getdents_1k's open of a
// directory (LANDLOCK_ACCESS_FS_READ_DIR), proc_status's open); TCP
// connect from ABI 4 (connect, accept's connect); signals (the signal
// scope) from ABI 6; UDP sendto from ABI 10 (udp_sendto, udp_recvfrom).
// Landlock has no rule for socket creation, stat, reads and writes
// through an open descriptor (readv_writev, splice, io_uring_rw), ioctls
// on anything but a device (ioctl_fcntl's pipe), chmod and xattrs,
// pipes, socketpairs, established TCP connections, SysV IPC, fork,
// threads or mmap.
func LandlockExpresses(op Op, abi int) bool {
	if abi < 1 {
		return false
	}
	switch op {
	case OpOpenRead, OpCreateWrite, OpRename, OpExec, OpMacro, OpOpenDepth1, OpOpenDepth10, OpOpenDepth28, OpExecStorm,
		OpExecDynamic, OpGetdents, OpProcStatus:
		return true
	case OpConnect, OpAccept:
		return abi >= 4
	case OpKill:
		return abi >= 6
	case OpUDPSendto, OpUDPRecvfrom:
		return abi >= 10
	}
	return false
}

// TypicalDenies reports whether (c2)'s typical ceiling (typical:
// network=false with the driver's listener and UDP sink as its only
// endpoints) denies op, which then does not run in (c2): accept (its
// connect goes to the worker's own listener, not a listed endpoint, and
// socket_accept is denied under network=false whatever the endpoints) and
// udp_recvfrom (its sendto goes to the worker's own socket).
func TypicalDenies(op Op) bool { return op == OpAccept || op == OpUDPRecvfrom }

// typicalOps is ops without those TypicalDenies.
func typicalOps(ops []Op) []Op {
	var out []Op
	for _, op := range ops {
		if !TypicalDenies(op) {
			out = append(out, op)
		}
	}
	return out
}

// env is what a worker's operations act on, prepared before the worker
// reports ready (so setup is never measured and never under a ceiling).
type env struct {
	dir      string // scratch directory (tmpfs in the guest)
	readPath string // an existing file
	tmpPath  string // created and unlinked by OpCreateWrite
	renameA  string
	renameB  string
	renamed  bool
	execPath string
	port     int    // loopback TCP listener (echoes what it reads)
	connFD   int    // pre-created socket for the denied connect
	tarData  []byte // OpMacro input
	payload  []byte
	// denyErr: the denied path, every operation must fail with this
	// errno (EPERM for enforcerd, EACCES for Landlock); 0: allowed path.
	denyErr unix.Errno

	buf4k     []byte
	preadFD   int    // OpPread: a 4 KiB file, O_RDONLY
	pwriteFD  int    // OpPwrite: a 4 KiB file, O_RDWR
	pipeTo    int    // OpPipe: write end toward the partner thread
	pipeFrom  int    // OpPipe: read end of the partner's answers
	unixS     [2]int // OpUnixStream socketpair
	unixD     [2]int // OpUnixDgram socketpair
	tcpFD     int    // OpTCPRR: connected to the listener
	udpFD     int    // OpUDPSendto: bound to 127.0.0.1:0
	udpTo     unix.SockaddrInet4
	mmapFD    int // OpMmapExec: execPath, O_RDONLY
	depth     map[Op]string
	stormExec []string // OpExecStorm: the tree's files
	stormStat []string // OpStatStorm: the tree's entries
	host      hostEnv  // the operations of hostops.go
	// notes: what the worker's result says about how it ran an operation
	// (WorkerResult.Notes).
	notes []string
}

// envConfig is what newEnv sets up.
type envConfig struct {
	dir, tarPath, execPath string
	execDynamic            string // OpExecDynamic's binary; empty: found at setup (findDynamic)
	port, udpPort          int
	ops                    []Op       // the operations to prepare for
	denyErr                unix.Errno // see env.denyErr
}

func newEnv(c envConfig) (*env, error) {
	e := &env{dir: c.dir, port: c.port, connFD: -1, execPath: c.execPath, denyErr: c.denyErr,
		payload: bytes.Repeat([]byte("x"), 64), buf4k: bytes.Repeat([]byte("y"), 4096),
		preadFD: -1, pwriteFD: -1, pipeTo: -1, pipeFrom: -1, unixS: [2]int{-1, -1}, unixD: [2]int{-1, -1},
		tcpFD: -1, udpFD: -1, mmapFD: -1, depth: map[Op]string{}, host: newHostEnv()}
	dir := c.dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.readPath = filepath.Join(dir, "read")
	e.tmpPath = filepath.Join(dir, "tmp")
	e.renameA = filepath.Join(dir, "ren-a")
	e.renameB = filepath.Join(dir, "ren-b")
	if err := os.WriteFile(e.readPath, e.payload, 0o644); err != nil {
		return nil, err
	}
	_ = os.Remove(e.renameB)
	if err := os.WriteFile(e.renameA, e.payload, 0o644); err != nil {
		return nil, err
	}
	if c.port > 0 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("socket: %w", err)
		}
		e.connFD = fd
	}
	if c.tarPath != "" {
		b, err := os.ReadFile(c.tarPath)
		if err != nil {
			return nil, err
		}
		e.tarData = b
	}
	for _, op := range c.ops {
		if err := e.setup(op, c); err != nil {
			return nil, errors.Join(fmt.Errorf("set up %s: %w", op, err), e.closeHost())
		}
	}
	return e, nil
}

// setup prepares what op needs beyond the common files. Errors: whatever
// it cannot create (a missing listener port for tcp_rr or udp_sendto).
func (e *env) setup(op Op, c envConfig) error {
	var err error
	switch op {
	case OpPread, OpPwrite:
		p := filepath.Join(e.dir, string(op))
		if err := os.WriteFile(p, e.buf4k, 0o644); err != nil {
			return err
		}
		flags := unix.O_RDONLY
		if op == OpPwrite {
			flags = unix.O_RDWR
		}
		fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if op == OpPread {
			e.preadFD = fd
		} else {
			e.pwriteFD = fd
		}
	case OpPipe:
		return e.startPipePartner()
	case OpUnixStream:
		e.unixS, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	case OpUnixDgram:
		e.unixD, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	case OpTCPRR:
		if c.port <= 0 {
			return errors.New("no -port listener")
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		e.tcpFD = fd
		sa := *loopback
		sa.Port = c.port
		if err := unix.Connect(fd, &sa); err != nil {
			return err
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	case OpUDPSendto:
		if c.udpPort <= 0 {
			return errors.New("no -udp-port sink")
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		e.udpFD = fd
		// Bound now: no implicit bind at the first send under a ceiling.
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: loopback.Addr}); err != nil {
			return err
		}
		e.udpTo = unix.SockaddrInet4{Addr: loopback.Addr, Port: c.udpPort}
	case OpMmapExec:
		e.mmapFD, err = unix.Open(e.execPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	case OpOpenDepth1, OpOpenDepth10, OpOpenDepth28:
		n := map[Op]int{OpOpenDepth1: 1, OpOpenDepth10: 10, OpOpenDepth28: 28}[op]
		d := filepath.Join(e.dir, string(op))
		for i := 1; i < n; i++ {
			d = filepath.Join(d, "d")
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		e.depth[op] = filepath.Join(d, "f")
		return os.WriteFile(e.depth[op], e.payload, 0o644)
	case OpExecStorm:
		e.stormExec, err = makeTree(filepath.Join(e.dir, "exec-tree"), 10, 10)
	case OpStatStorm:
		var files []string
		root := filepath.Join(e.dir, "stat-tree")
		files, err = makeTree(root, 30, 100)
		if err == nil {
			for i := 0; i < 30; i++ {
				e.stormStat = append(e.stormStat, filepath.Join(root, strconv.Itoa(i)))
			}
			e.stormStat = append(e.stormStat, files...)
		}
	default:
		return e.setupHost(op, c)
	}
	return err
}

// makeTree creates root with dirs directories of files 64 B files each
// (any earlier tree there is removed first) and returns the files' paths.
func makeTree(root string, dirs, files int) ([]string, error) {
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	var out []string
	b := bytes.Repeat([]byte("z"), 64)
	for i := 0; i < dirs; i++ {
		d := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		for j := 0; j < files; j++ {
			p := filepath.Join(d, "f"+strconv.Itoa(j)+".go")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// startPipePartner starts the partner of OpPipe: a goroutine on its own OS
// thread that answers every byte it reads with one byte back.
func (e *env) startPipePartner() error {
	var to, from [2]int
	if err := unix.Pipe2(to[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	if err := unix.Pipe2(from[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	e.pipeTo, e.pipeFrom = to[1], from[0]
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(locked) // its thread exists: idleOtherThreads will find it
		b := make([]byte, 1)
		for {
			if n, err := unix.Read(to[0], b); n != 1 || err != nil {
				return
			}
			if n, err := unix.Write(from[1], b); n != 1 || err != nil {
				return
			}
		}
	}()
	<-locked
	return nil
}

// errWrongOutcome: an allowed operation failed or a denied one succeeded.
// Fatal: a benchmark of broken enforcement measures nothing.
var errWrongOutcome = errors.New("wrong outcome")

// check turns one operation's error into the benchmark's verdict.
func (e *env) check(op Op, err error) error {
	if e.denyErr != 0 {
		if err == nil {
			return fmt.Errorf("%s: %w: succeeded on the denied path", op, errWrongOutcome)
		}
		if !errors.Is(err, e.denyErr) {
			return fmt.Errorf("%s: %w: denied with %v, want %v", op, errWrongOutcome, err, e.denyErr)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %v", op, errWrongOutcome, err)
	}
	return nil
}

// full turns a short transfer of n bytes where want were due into an error.
func full(what string, n, want int, err error) error {
	if err == nil && n != want {
		err = fmt.Errorf("%s: %d of %d bytes", what, n, want)
	}
	return err
}

var loopback = &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}

// run performs op once.
func (e *env) run(op Op) error {
	switch op {
	case OpOpenRead:
		fd, err := unix.Open(e.readPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return e.check(op, err)
	case OpCreateWrite:
		fd, err := unix.Open(e.tmpPath, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return e.check(op, err)
		}
		_, werr := unix.Write(fd, e.payload)
		unix.Close(fd)
		uerr := unix.Unlink(e.tmpPath)
		return e.check(op, errors.Join(werr, uerr))
	case OpStat:
		var st unix.Stat_t
		return e.check(op, unix.Stat(e.readPath, &st))
	case OpRename:
		from, to := e.renameA, e.renameB
		if e.renamed {
			from, to = to, from
		}
		err := unix.Rename(from, to)
		if err == nil {
			e.renamed = !e.renamed
		}
		return e.check(op, err)
	case OpExec:
		pid, err := syscall.ForkExec(e.execPath, []string{e.execPath}, &syscall.ProcAttr{Env: []string{}})
		if err != nil {
			return e.check(op, err)
		}
		return e.check(op, waitOK(pid, e.execPath))
	case OpSocket:
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return e.check(op, err)
	case OpConnect:
		sa := *loopback
		sa.Port = e.port
		if e.denyErr != 0 {
			// The socket was created before the ceiling applied; the
			// denied connect leaves it unconnected, ready for the next.
			return e.check(op, unix.Connect(e.connFD, &sa))
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return e.check(op, err)
		}
		// Linger 0: close sends RST, so no TIME_WAIT piles up and the
		// ephemeral ports never run out.
		_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		err = unix.Connect(fd, &sa)
		unix.Close(fd)
		return e.check(op, err)
	case OpPread:
		n, err := unix.Pread(e.preadFD, e.buf4k, 0)
		return e.check(op, full("pread", n, len(e.buf4k), err))
	case OpPwrite:
		n, err := unix.Pwrite(e.pwriteFD, e.buf4k, 0)
		return e.check(op, full("pwrite", n, len(e.buf4k), err))
	case OpPipe:
		b := e.buf4k[:1]
		n, err := rawWrite(e.pipeTo, b)
		if err = full("pipe write", n, 1, err); err == nil {
			n, err = rawRead(e.pipeFrom, b)
			err = full("pipe read", n, 1, err)
		}
		return e.check(op, err)
	case OpUnixStream, OpUnixDgram:
		p := e.unixS
		if op == OpUnixDgram {
			p = e.unixD
		}
		return e.check(op, sendRecv(p[0], p[1], e.buf4k[:16]))
	case OpTCPRR:
		return e.check(op, sendRecv(e.tcpFD, e.tcpFD, e.buf4k[:16]))
	case OpUDPSendto:
		return e.check(op, unix.Sendto(e.udpFD, e.buf4k[:16], 0, &e.udpTo))
	case OpFork:
		pid, err := spawnExit()
		if err != nil {
			return e.check(op, err)
		}
		return e.check(op, rawWaitOK(pid, "spawned child"))
	case OpMmapExec:
		m, err := unix.Mmap(e.mmapFD, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		if err == nil {
			err = unix.Munmap(m)
		}
		return e.check(op, err)
	case OpKill:
		return e.check(op, unix.Kill(unix.Getpid(), 0))
	case OpOpenDepth1, OpOpenDepth10, OpOpenDepth28:
		fd, err := unix.Open(e.depth[op], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return e.check(op, err)
	case OpMacro:
		return e.check(op, e.macro())
	case OpExecStorm:
		for _, f := range e.stormExec {
			pid, err := syscall.ForkExec(e.execPath, []string{e.execPath, f}, &syscall.ProcAttr{Env: []string{}})
			if err == nil {
				err = waitOK(pid, e.execPath)
			}
			if err != nil {
				return e.check(op, err)
			}
		}
		return e.check(op, nil)
	case OpStatStorm:
		var st unix.Stat_t
		for _, p := range e.stormStat {
			if err := unix.Lstat(p, &st); err != nil {
				return e.check(op, err)
			}
		}
		return e.check(op, nil)
	}
	return e.runHost(op)
}

// waitOK waits for the child pid. Errors: the wait fails, the child did
// not exit with status 0.
func waitOK(pid int, what string) error {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return err
	}
	return exitedOK(ws, what)
}

// exitedOK is nil when ws says the child exited with status 0.
func exitedOK(ws syscall.WaitStatus, what string) error {
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("%s: wait status %#x", what, uint32(ws))
	}
	return nil
}

// rawWaitOK is waitOK by a raw wait4(2) (see rawRW: the measuring
// thread may block in it, when its wakeup by the child's vfork release
// preempted the exiting child). Errors: wait4's, a status other than
// exit 0.
func rawWaitOK(pid int, what string) error {
	var ws syscall.WaitStatus
	for {
		_, _, errno := unix.RawSyscall6(unix.SYS_WAIT4, uintptr(pid), uintptr(unsafe.Pointer(&ws)), 0, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		break
	}
	return exitedOK(ws, what)
}

// sendRecv sends b on fd and receives len(b) bytes back on peer (for a
// stream, possibly in several reads). Errors: either call's, or a short
// send.
func sendRecv(fd, peer int, b []byte) error {
	n, err := rawWrite(fd, b)
	if err := full("send", n, len(b), err); err != nil {
		return err
	}
	for got := 0; got < len(b); {
		n, err := rawRead(peer, b[got:])
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("recv: end of stream")
		}
		got += n
	}
	return nil
}

// rawRead and rawWrite are read(2) and write(2) without the Go
// scheduler's system-call bookkeeping (RawSyscall: no entersyscall and
// exitsyscall), for the measuring thread's system calls that block on a
// peer (pipe_pingpong, unix_stream, unix_dgram, tcp_rr). A goroutine
// blocked in an ordinary system call lets sysmon hand its P to another
// thread, and getting a P back then takes the scheduler's slow path: a
// cost that depends on when sysmon last ran, not on the operation. The
// thread keeps its P while it blocks, so the peer must not need it: it
// runs on another P (the worker has at least two) or in another process.
// Errors: the system call's errno (EINTR retried).
func rawRead(fd int, b []byte) (int, error) { return rawRW(unix.SYS_READ, fd, b) }

func rawWrite(fd int, b []byte) (int, error) { return rawRW(unix.SYS_WRITE, fd, b) }

func rawRW(trap uintptr, fd int, b []byte) (int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	for {
		n, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(p), uintptr(len(b)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return int(n), errno
	}
}

// spawnExit creates a process as posix_spawn(3) and Go's os/exec do
// (clone with CLONE_VM, CLONE_VFORK and SIGCHLD: the child shares the
// parent's memory until it exits, and CLONE_VFORK holds the parent until
// then) and returns the child's pid; the child calls exit_group(0) at once
// (vforkExit, in assembly: it touches no memory). Not fork(2)'s copy of the
// address space: what that costs depends on how much of the parent's
// memory is mapped and how (transparent huge pages, page tables), which
// differed between two workers by up to 23 % with transparent huge pages
// and up to 7 % without (icount guest;
// docs/bench-results/diagnosis/2026-12-01-icount-fork-thp.txt), and the
// copy runs no hook enforcerd attaches (task_alloc, the one it has on
// this path, runs either way). Errors: clone's; ENOSYS off amd64.
func spawnExit() (int, error) {
	pid := vforkExit()
	if pid < 0 {
		return 0, syscall.Errno(-pid)
	}
	return int(pid), nil
}

// macro unpacks the tarball into a fresh tree, walks it (stat + read of
// every file), and removes it: the file-heavy shape of a build or a checkout.
func (e *env) macro() error {
	root := filepath.Join(e.dir, "tree")
	if err := untar(e.tarData, root); err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := os.Lstat(p); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			if _, err := f.Read(buf); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(root)
}

func untar(data []byte, root string) error {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(root, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			cerr := f.Close()
			if err := errors.Join(err, cerr); err != nil {
				return err
			}
		}
	}
}
