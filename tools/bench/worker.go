package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
)

// WorkerResult is what a worker prints on stdout (one JSON line) when done.
type WorkerResult struct {
	// NsPerOp is CPU time (the measuring thread plus reaped children:
	// the exec op's child; plus the worker's io_uring io-wq threads,
	// which run the requests of io_uring_rw the kernel does not complete
	// inline), not wall time: time the worker waits while other work on
	// a shared machine runs is not its cost.
	NsPerOp     map[Op]float64 `json:"ns_per_op,omitempty"`
	WallNsPerOp map[Op]float64 `json:"wall_ns_per_op,omitempty"`
	// Flood: denied / allowed / other outcomes and the elapsed time.
	Denied    uint64  `json:"denied,omitempty"`
	Allowed   uint64  `json:"allowed,omitempty"`
	Other     uint64  `json:"other,omitempty"`
	ElapsedNs float64 `json:"elapsed_ns,omitempty"`
	// DeniedBy: flood denials per distinct operation (FloodOps order).
	DeniedBy []uint64 `json:"denied_by,omitempty"`
	// Notes: how the worker ran an operation where that differs from its
	// description (chmod_setxattr without setxattr).
	Notes []string `json:"notes,omitempty"`
}

// Worker is the "worker" subcommand: set up, apply Landlock if asked, print
// "ready", wait for a line on stdin, run, print the result.
//
// Modes: micro (each -ops op -iters times, after a warm-up of a tenth),
// calibrate (each op for -calibrate, reporting ns/op), flood (-n denied
// operations: the sockets of floodSockets and opens for writing of -files,
// in turn), latency (socket() until stdin closes, printing the
// CLOCK_MONOTONIC time of every allowed<->denied flip).
func Worker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	mode := fs.String("mode", "micro", "micro | calibrate | flood | latency")
	ops := fs.String("ops", "", "comma-separated ops")
	iters := fs.String("iters", "", "comma-separated iteration counts, one per op")
	dir := fs.String("dir", "/tmp/bench", "scratch directory")
	port := fs.Int("port", 0, "loopback listener port")
	tarPath := fs.String("tar", "", "tarball for the macro workload")
	execPath := fs.String("exec", "/bin/true", "static binary for the exec op")
	execDynamic := fs.String("exec-dynamic", "", "dynamically linked binary for exec_dynamic (default: the first of "+strings.Join(dynamicCandidates, ", ")+" that is one)")
	udpPort := fs.Int("udp-port", 0, "loopback UDP sink port (udp_sendto)")
	deny := fs.Bool("deny", false, "denied path: every op must fail with EPERM (with -landlock deny: EACCES)")
	ll := fs.String("landlock", "", "restrict self with Landlock (restrictLandlock): allow (phase e1), typical (phase e2) or deny (phase e0); empty: no Landlock")
	llRoot := fs.String("landlock-root", "", "with -landlock allow or typical: the workspace, the one directory Landlock grants every filesystem right beneath (default: -dir)")
	cal := fs.Duration("calibrate", 200*time.Millisecond, "calibrate: time per op")
	n := fs.Uint64("n", 1_000_000, "flood: operations")
	files := fs.String("files", "", "flood: comma-separated files to open for writing (after the sockets of FloodOps)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var opList []Op
	var iterList []int
	if *ops != "" {
		for _, o := range strings.Split(*ops, ",") {
			opList = append(opList, Op(o))
		}
	}
	cfg := envConfig{dir: *dir, tarPath: *tarPath, execPath: *execPath, execDynamic: *execDynamic, port: *port, udpPort: *udpPort, ops: opList}
	if *deny {
		cfg.denyErr = unix.EPERM
		if *ll == llDeny {
			cfg.denyErr = unix.EACCES // Landlock's denials
		}
	}
	e, err := newEnv(cfg)
	if err != nil {
		return fmt.Errorf("worker setup: %w", err)
	}
	defer func() { _ = e.closeHost() }() // on an error return; see below

	if *ll != "" {
		// The worker's own listener (accept) and UDP socket
		// (udp_recvfrom) are endpoints of (e1)'s like the driver's;
		// (e2) has the driver's alone, as (c2)'s ceiling.
		tcp, udp := []int{*port, e.host.acceptPort}, []int{*udpPort, e.host.udpSelfPort}
		if *ll == llTypical {
			tcp, udp = []int{*port}, []int{*udpPort}
		}
		root := *llRoot
		if root == "" {
			root = *dir
		}
		if err := restrictLandlock(*ll, root, tcp, udp); err != nil {
			return err
		}
	}
	if *iters != "" {
		for _, s := range strings.Split(*iters, ",") {
			v, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("-iters: %w", err)
			}
			iterList = append(iterList, v)
		}
	}
	if *mode == "micro" && len(iterList) != len(opList) {
		return fmt.Errorf("-iters has %d counts for %d ops", len(iterList), len(opList))
	}
	runtime.LockOSThread() // cpuNs measures this thread
	in := bufio.NewReader(os.Stdin)
	quiesceHeap()
	if os.Getenv(GCPressureEnv) == "1" {
		go allocateForever()
	}
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("worker: waiting for go: %w", err)
	}
	if err := idleOtherThreads(); err != nil {
		return err
	}
	res := WorkerResult{NsPerOp: map[Op]float64{}, WallNsPerOp: map[Op]float64{}, Notes: e.notes}
	switch *mode {
	case "micro":
		for i, op := range opList {
			warm := iterList[i] / 10
			for j := 0; j < warm; j++ {
				if err := e.run(op); err != nil {
					return err
				}
			}
			c0, w0, t0 := cpuNs(), ioWorkerNs(), time.Now()
			for j := 0; j < iterList[i]; j++ {
				if err := e.run(op); err != nil {
					return err
				}
			}
			res.WallNsPerOp[op] = float64(time.Since(t0).Nanoseconds()) / float64(iterList[i])
			res.NsPerOp[op] = float64(cpuNs()-c0+ioWorkerDelta(w0, ioWorkerNs())) / float64(iterList[i])
		}
	case "calibrate":
		for _, op := range opList {
			t0 := time.Now()
			k := 0
			for time.Since(t0) < *cal || k < 3 {
				if err := e.run(op); err != nil {
					return err
				}
				k++
			}
			res.NsPerOp[op] = float64(time.Since(t0).Nanoseconds()) / float64(k)
		}
	case "flood":
		var paths []string
		if *files != "" {
			paths = strings.Split(*files, ",")
		}
		res.DeniedBy = make([]uint64, len(floodSockets)+len(paths))
		t0 := time.Now()
		for i := uint64(0); i < *n; i++ {
			k := int(i % uint64(len(res.DeniedBy)))
			var fd int
			var err error
			if k < len(floodSockets) {
				fd, err = unix.Socket(floodSockets[k][0], floodSockets[k][1]|unix.SOCK_CLOEXEC, 0)
			} else {
				fd, err = unix.Open(paths[k-len(floodSockets)], unix.O_WRONLY|unix.O_CLOEXEC, 0)
			}
			switch {
			case err == nil:
				unix.Close(fd)
				res.Allowed++
			case errors.Is(err, unix.EPERM):
				res.Denied++
				res.DeniedBy[k]++
			default:
				res.Other++
			}
		}
		res.ElapsedNs = float64(time.Since(t0).Nanoseconds())
	case "latency":
		return latencyLoop(in)
	default:
		return fmt.Errorf("unknown -mode %q", *mode)
	}
	if err := e.closeHost(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// latencyLoop creates and closes sockets until stdin closes, printing
// "D <ns>" at the first denial after an allowed one and "A <ns>" at the first
// success after a denial (CLOCK_MONOTONIC, comparable across processes).
func latencyLoop(in *bufio.Reader) error {
	var stop atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, in)
		stop.Store(true)
	}()
	denied := false
	out := bufio.NewWriter(os.Stdout)
	for !stop.Load() {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		now := monotonicNs()
		if err == nil {
			unix.Close(fd)
		} else if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("latency probe: %w", err)
		}
		if d := err != nil; d != denied {
			denied = d
			tag := "A"
			if d {
				tag = "D"
			}
			fmt.Fprintf(out, "%s %d\n", tag, now)
			out.Flush()
		}
	}
	return nil
}

// quiesceHeap collects the setup's garbage, returns the free pages to the
// kernel and turns the collector off, so that the worker's address space
// is the same size in every phase and no collection or scavenge runs
// inside a measurement. The operations allocate little; a
// worker lives for one repetition.
func quiesceHeap() {
	atLeastTwoPs()
	runtime.GC()
	debug.FreeOSMemory()
	debug.SetGCPercent(-1)
}

// GCPressureEnv, set to 1, makes a worker allocate 64 KiB at a time on
// another goroutine while it runs, 64 MiB in all: with the collector on
// (GOGC=1) a collection would start during almost every operation. Tests
// set it to show that the worker's operations cannot be caught by one
// (quiesceHeap). Bounded: with the collector off nothing is freed.
const GCPressureEnv = "ENFORCERD_BENCH_GC_PRESSURE"

var garbage [][]byte

// allocateForever allocates and drops 64 KiB at a time, 1,024 times,
// yielding in between.
func allocateForever() {
	for i := 0; i < 1024; i++ {
		garbage = append(garbage[:0], make([]byte, 64<<10))
		runtime.Gosched()
	}
}

// atLeastTwoPs gives the Go scheduler two Ps on a one-CPU machine (the
// icount guest). With a single P no P is ever idle, so sysmon takes the P
// from any system call it sees twice (its tick is 20 µs) and, having taken
// one, keeps polling at that tick: wakeups that preempt the measuring
// thread. With an idle P it leaves short system calls alone and backs off
// to 10 ms.
func atLeastTwoPs() {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
}

// idleOtherThreads puts every thread of the worker but the calling
// (measuring, locked) one under SCHED_IDLE: the Go runtime's threads and
// the pipe operation's partner. The Go runtime's sysmon wakes every 20 µs
// to 10 ms and, every 10 ms, takes the P from the measuring thread's
// system call; on the single CPU of the icount guest each wakeup can
// preempt the measuring thread (measured on unix_stream: 500 to 3,000
// involuntary switches per 200 ms sample, varying from one process to the
// next; about 50, the tick's, with this). A SCHED_IDLE thread never
// preempts a normal one on wakeup, so sysmon runs only when the measuring
// thread sleeps, and the pipe's partner answers only once the measuring
// thread blocks in its read: one switch pattern every time. (With the
// partner at normal priority, whether its wakeup preempted the writer was
// the scheduler's choice; on 6.12 that moved pipe_pingpong by up to 18 %
// from one process to the next.) Errors: /proc/self/task unreadable,
// sched_setattr refused.
func idleOtherThreads() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	self := unix.Gettid()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || tid == self {
			continue
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("worker: SCHED_IDLE for thread %d: %w", tid, err)
		}
	}
	return nil
}

// cpuNs is the CPU time of the calling (locked) thread and of reaped
// children, ns: the Go runtime's own threads are not the operation's cost.
func cpuNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
	return ts.Nano() + ru.Utime.Nano() + ru.Stime.Nano()
}

// ioWorkerNs is the CPU time of each of the worker's io_uring io-wq
// threads (named iou-wrk-<tid>: threads of the worker's own thread group,
// which io_uring creates to run a request that cannot complete inline, as
// tmpfs writes on 6.12 and 6.18), ns by thread id; nil when there is none
// or /proc/self/task cannot be read.
func ioWorkerNs() map[int]int64 {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var out map[int]int64
	for _, t := range tasks {
		comm, err := os.ReadFile("/proc/self/task/" + t.Name() + "/comm")
		if err != nil || !strings.HasPrefix(string(comm), "iou-wrk-") {
			continue
		}
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// The thread's CPU clock (MAKE_THREAD_CPUCLOCK(tid,
		// CPUCLOCK_SCHED)): a thread of the caller's own group.
		var ts unix.Timespec
		if unix.ClockGettime(int32(^tid<<3|6), &ts) != nil {
			continue // exited meanwhile
		}
		if out == nil {
			out = map[int]int64{}
		}
		out[tid] = ts.Nano()
	}
	return out
}

// ioWorkerDelta is the CPU time io-wq threads spent between two
// ioWorkerNs snapshots, ns: a thread new in after counts from 0; one gone
// from after is left out (io-wq threads exit only after seconds idle, so
// it did no work of the measurement).
func ioWorkerDelta(before, after map[int]int64) int64 {
	var d int64
	for tid, ns := range after {
		d += ns - before[tid]
	}
	return d
}

func monotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// The Landlock modes of a worker (-landlock).
const (
	llAllow   = "allow"   // phase (e1)
	llTypical = "typical" // phase (e2)
	llDeny    = "deny"    // phase (e0)
)

// restrictLandlock restricts the worker (every thread) with Landlock,
// handling every access right go-landlock knows (filesystem, TCP bind and
// connect, UDP bind and send, the signal and abstract unix socket scopes),
// best effort: only what the running kernel's ABI has. Modes llAllow (e1)
// and llTypical (e2) are rooted at the workspace, the way a Landlock agent
// sandbox is: every filesystem right beneath workspace, reading files and
// directories and executing files beneath / (a read-only system), TCP
// connect to tcpPorts and UDP send to udpPorts (ports 0 left out). For
// llAllow the caller gives every port the benchmark uses, so everything
// the benchmark does stays allowed and e1 against (c) compares two
// allow-everything sandboxes; for llTypical the ports of (c2)'s endpoints
// alone: (c2)'s twin, one writable root, the rest read-only, network
// restricted to the listed endpoints. mode llDeny
// (e0) grants only reading files and directories beneath / (no write, no
// execute, no TCP connect, no UDP send): the intent of the deny-all
// ceiling network=false, write=false, shell=none, to compare with (d).
// Errors: an unknown mode, Landlock refusing the ruleset.
func restrictLandlock(mode, workspace string, tcpPorts, udpPorts []int) error {
	all := landlock.V11.HandledAccessFS
	var rules []landlock.Rule
	switch mode {
	case llAllow, llTypical:
		rules = append(rules, landlock.PathAccess(all, workspace),
			landlock.PathAccess(llsys.AccessFSReadFile|llsys.AccessFSReadDir|llsys.AccessFSExecute, "/"))
		for _, port := range tcpPorts {
			if port > 0 {
				rules = append(rules, landlock.ConnectTCP(uint16(port)))
			}
		}
		for _, port := range udpPorts {
			if port > 0 {
				rules = append(rules, landlock.ConnectSendUDP(uint16(port)))
			}
		}
	case llDeny:
		rules = append(rules, landlock.PathAccess(llsys.AccessFSReadFile|llsys.AccessFSReadDir, "/"))
	default:
		return fmt.Errorf("-landlock %q: want %s, %s or %s", mode, llAllow, llTypical, llDeny)
	}
	if err := landlock.V11.BestEffort().Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// worker is a running worker process.
type worker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startWorker starts this binary's worker subcommand directly inside cg
// (CLONE_INTO_CGROUP) and waits until it is ready.
func startWorker(cg cgroup.Cgroup, args ...string) (*worker, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := cg.OpenDir()
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	cmd := exec.Command(self, append([]string{"worker"}, args...)...)
	cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker in %s: %w", cg, err)
	}
	w := &worker{cmd: cmd, in: in, out: bufio.NewReader(outp)}
	line, err := w.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = w.cmd.Wait()
		return nil, fmt.Errorf("worker in %s did not get ready (%q): %v", cg, line, err)
	}
	return w, nil
}

// start lets the worker run.
func (w *worker) start() error {
	_, err := io.WriteString(w.in, "go\n")
	return err
}

// result waits for the worker's JSON result and its exit.
func (w *worker) result() (WorkerResult, error) {
	var r WorkerResult
	line, rerr := w.out.ReadString('\n')
	w.in.Close()
	werr := w.cmd.Wait()
	if werr != nil {
		return r, fmt.Errorf("worker %v: %w", w.cmd.Args[2:], werr)
	}
	if rerr != nil {
		return r, fmt.Errorf("worker result: %w", rerr)
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("worker result %q: %w", line, err)
	}
	return r, nil
}

// runWorker starts a worker in cg, lets it run and returns its result.
func runWorker(cg cgroup.Cgroup, args ...string) (WorkerResult, error) {
	w, err := startWorker(cg, args...)
	if err != nil {
		return WorkerResult{}, err
	}
	if err := w.start(); err != nil {
		return WorkerResult{}, err
	}
	return w.result()
}
