package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestEveryOpDoesItsWork runs every microbenchmark and the storms three
// times on the allowed path, natively, in a worker process as the benchmark
// runs them (with the listeners the driver starts in this process): each
// must succeed (the worker fails when an operation does not do its work).
// The scratch trees the storms read are checked here.
func TestEveryOpDoesItsWork(t *testing.T) {
	ops := append(append([]Op{}, MicroOps...), OpExecStorm, OpStatStorm)
	runTestWorker(t, ops, 3, nil)
	e, err := newEnv(envConfig{dir: t.TempDir(), execPath: "/bin/true", ops: []Op{OpExecStorm, OpStatStorm, OpOpenDepth1, OpOpenDepth10, OpOpenDepth28}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.stormExec) != execStormFiles || len(e.stormStat) != statStormEntries {
		t.Errorf("storm trees: %d files to exec, %d entries to stat; want %d, %d", len(e.stormExec), len(e.stormStat), execStormFiles, statStormEntries)
	}
	for op, n := range map[Op]int{OpOpenDepth1: 1, OpOpenDepth10: 10, OpOpenDepth28: 28} {
		rel, err := filepath.Rel(e.dir, filepath.Dir(e.depth[op]))
		if err != nil {
			t.Fatal(err)
		}
		if got := countSep(rel) + 1; got != n {
			t.Errorf("%s: file %d directories below the phase directory, want %d", op, got, n)
		}
	}
}

func countSep(p string) int {
	n := 0
	for _, c := range p {
		if c == filepath.Separator {
			n++
		}
	}
	return n
}

// TestOpsFailLoudly: an op whose setup is missing, or an allowed op that
// fails, is an error, never a silent success.
func TestOpsFailLoudly(t *testing.T) {
	e, err := newEnv(envConfig{dir: t.TempDir(), execPath: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Op{OpPread, OpPwrite, OpTCPRR, OpUDPSendto, OpMmapExec, OpUnixStream, OpOpenDepth10,
		OpIoctlFcntl, OpGetdents, OpReadvWrite, OpSplice, OpAccept, OpUDPRecvfrom, OpSysvMsg, OpChmodXattr,
		OpThread, OpExecDynamic, OpIOUringRW} {
		if err := e.run(op); !errors.Is(err, errWrongOutcome) {
			t.Errorf("%s without its setup: %v, want a wrong outcome", op, err)
		}
	}
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := newEnv(envConfig{dir: t.TempDir(), execPath: "/bin/true", execDynamic: notELF, ops: []Op{OpExecDynamic}}); err == nil {
		t.Error("exec_dynamic set up with a script for its binary")
	}
	if err := uringSetupError(unix.EPERM, "2"); !strings.Contains(err.Error(), "kernel.io_uring_disabled = 2") {
		t.Errorf("io_uring_setup refused under kernel.io_uring_disabled=2: %v, want the sysctl named", err)
	}
	if _, err := newEnv(envConfig{dir: t.TempDir(), execPath: "/bin/true", ops: []Op{OpTCPRR}}); err == nil {
		t.Error("tcp_rr set up without a listener")
	}
	if _, err := newEnv(envConfig{dir: t.TempDir(), execPath: "/bin/true", ops: []Op{OpUDPSendto}}); err == nil {
		t.Error("udp_sendto set up without a sink")
	}
}

// TestDeniedPathChecksErrno: on the denied path an op must fail with the
// phase's errno (EPERM for enforcerd, EACCES for Landlock).
func TestDeniedPathChecksErrno(t *testing.T) {
	e := &env{denyErr: unix.EPERM}
	if err := e.check(OpConnect, nil); !errors.Is(err, errWrongOutcome) {
		t.Errorf("denied connect that succeeded: %v", err)
	}
	if err := e.check(OpConnect, unix.EACCES); !errors.Is(err, errWrongOutcome) {
		t.Errorf("EACCES under (d): %v", err)
	}
	if err := e.check(OpConnect, unix.EPERM); err != nil {
		t.Errorf("EPERM under (d): %v", err)
	}
	e.denyErr = unix.EACCES
	if err := e.check(OpRename, unix.EACCES); err != nil {
		t.Errorf("EACCES under (e0): %v", err)
	}
	// Every Deniable micro operation, set up and run on the denied path
	// where nothing denies it, must report the success as a wrong
	// outcome, never as a denial. Each in a worker process of its own,
	// as the benchmark runs them: run in this process, an op's raw
	// blocking read (tcp_rr's answer) keeps its P, and a stop-the-world
	// collection then waits for it while the answering goroutine of this
	// process never runs again.
	for _, op := range MicroOps {
		if !Deniable(op) {
			continue
		}
		err := runTestWorkerIn(t, t.TempDir(), []Op{op}, 1, nil, "-deny")
		if err == nil || !strings.Contains(err.Error(), "succeeded on the denied path") {
			t.Errorf("%s allowed on the denied path: %v, want a wrong outcome", op, err)
		}
	}
}

func TestDeniableAndLandlock(t *testing.T) {
	for _, op := range []Op{OpPwrite, OpTCPRR, OpUDPSendto, OpCreateWrite, OpRename, OpExec, OpSocket, OpConnect,
		OpReadvWrite, OpAccept, OpUDPRecvfrom, OpChmodXattr, OpExecDynamic, OpIOUringRW} {
		if !Deniable(op) {
			t.Errorf("%s not deniable", op)
		}
	}
	for _, op := range []Op{OpPread, OpPipe, OpUnixStream, OpUnixDgram, OpFork, OpMmapExec, OpKill, OpOpenDepth28, OpStat,
		OpMmapAnon, OpIoctlFcntl, OpGetdents, OpSplice, OpSysvMsg, OpProcStatus, OpThread, OpForkCopy} {
		if Deniable(op) {
			t.Errorf("%s deniable", op)
		}
	}
	for _, c := range []struct {
		op   Op
		abi  int
		want bool
	}{
		{OpOpenDepth28, 1, true}, {OpExecStorm, 1, true}, {OpStatStorm, 6, false},
		{OpConnect, 3, false}, {OpConnect, 4, true}, {OpKill, 5, false}, {OpKill, 6, true},
		{OpUDPSendto, 9, false}, {OpUDPSendto, 10, true}, {OpTCPRR, 10, false}, {OpPwrite, 10, false},
		{OpOpenRead, 0, false},
		{OpGetdents, 1, true}, {OpProcStatus, 1, true}, {OpExecDynamic, 1, true},
		{OpAccept, 3, false}, {OpAccept, 4, true}, {OpUDPRecvfrom, 9, false}, {OpUDPRecvfrom, 10, true},
		{OpReadvWrite, 10, false}, {OpIOUringRW, 10, false}, {OpChmodXattr, 10, false}, {OpSplice, 10, false},
		{OpIoctlFcntl, 10, false}, {OpSysvMsg, 10, false}, {OpMmapAnon, 10, false}, {OpThread, 10, false}, {OpForkCopy, 10, false},
	} {
		if got := LandlockExpresses(c.op, c.abi); got != c.want {
			t.Errorf("LandlockExpresses(%s, %d) = %v, want %v", c.op, c.abi, got, c.want)
		}
	}
}

// TestTypicalOps: (c2) runs every micro operation but the two whose
// traffic goes to the worker's own sockets (TypicalDenies).
func TestTypicalOps(t *testing.T) {
	got := typicalOps(MicroOps)
	if len(got) != len(MicroOps)-2 || slices.Contains(got, OpAccept) || slices.Contains(got, OpUDPRecvfrom) {
		t.Errorf("typicalOps(MicroOps) = %v, want MicroOps without accept and udp_recvfrom", got)
	}
}

// TestSpawnExitKeepsTheParent: the fork operation's child shares the
// parent's memory and stack (CLONE_VM); the parent must come back intact,
// with a child to reap, every time, while other goroutines run.
func TestSpawnExitKeepsTheParent(t *testing.T) {
	if !vforkSupported {
		t.Skip("vforkExit is written for amd64 only")
	}
	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 2; i++ {
		go func() { // keep the scheduler and preemption busy
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	for i := 0; i < 500; i++ {
		if err := spawnBetweenCanaries(); err != nil {
			t.Fatalf("spawn %d: %v", i, err)
		}
	}
}

// spawnBetweenCanaries spawns and reaps one child with a canary on its
// own stack frame, whose address escapes to a function the compiler
// cannot see through. Errors: the spawn's, the wait's, a changed canary.
//
//go:noinline
func spawnBetweenCanaries() error {
	var canary [8]uint64
	for i := range canary {
		canary[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	before := canarySum(&canary)
	pid, err := spawnExit()
	if err != nil {
		return err
	}
	if err := rawWaitOK(pid, "spawned child"); err != nil {
		return err
	}
	if after := canarySum(&canary); after != before {
		return fmt.Errorf("the parent's stack changed: sum %#x, was %#x", after, before)
	}
	return nil
}

//go:noinline
func canarySum(c *[8]uint64) uint64 {
	var s uint64
	for i, v := range c {
		s += v * uint64(i+1)
	}
	return s
}

// TestMacrosWorkApart: a macro workload's worker works in a sibling of its
// phase's directory, at the same depth and for (c2) inside the writable
// root; micro operations (and a profile pass) work in the phase's own, so
// (a), whose macros run, and (a0), whose do not, measure in directories
// with the same history.
func TestMacrosWorkApart(t *testing.T) {
	r := &run{root: "/tmp/bench", iters: map[Op]int{}}
	dirOf := func(args []string) string {
		for i, a := range args {
			if a == "-dir" && i+1 < len(args) {
				return args[i+1]
			}
		}
		t.Fatalf("no -dir in %q", args)
		return ""
	}
	for _, ph := range []string{PhaseA, PhaseA0, PhaseC2} {
		micro := dirOf(r.microArgs(ph, []Op{OpRename, OpCreateWrite}))
		if micro != r.phaseDir(ph) {
			t.Errorf("%s micro: -dir %s, want %s", ph, micro, r.phaseDir(ph))
		}
		for _, m := range MacroOps {
			d := dirOf(r.microArgs(ph, []Op{m}))
			if d == micro || filepath.Dir(d) != filepath.Dir(micro) {
				t.Errorf("%s %s: -dir %s, want a sibling of %s", ph, m, d, micro)
			}
		}
	}
	if d := dirOf(r.microArgs(PhaseC2, []Op{OpMacro})); !strings.HasPrefix(d, r.writeRoot()+"/") {
		t.Errorf("(c2) macro -dir %s is outside the writable root %s", d, r.writeRoot())
	}
	if d := dirOf(r.microArgs("profile-"+PhaseC2, []Op{OpRename})); d != r.phaseDir(PhaseC2) {
		t.Errorf("profile pass of (c2): -dir %s, want %s", d, r.phaseDir(PhaseC2))
	}
}

// TestOpsDoNotHangUnderGC runs every microbenchmark 20 times in a worker
// whose collector is as eager as it gets (GOGC=1) while another goroutine
// allocates (GCPressureEnv). The operations block in
// raw system calls that keep their P, and a stop-the-world or a collection's
// per-P step cannot pass a P held that way: one that starts while the
// measuring thread waits for an in-process peer (pipe_pingpong's partner
// thread) waits forever. The worker turns the collector off before it
// measures (quiesceHeap); without that this test hangs, and go test's
// -timeout fails it.
func TestOpsDoNotHangUnderGC(t *testing.T) {
	runTestWorker(t, append([]Op{}, MicroOps...), 20, []string{"GOGC=1", GCPressureEnv + "=1"})
}

// testWorkerEnv makes the test binary the benchmark's worker subcommand
// (TestMain), so the tests run the operations the way the benchmark does.
const testWorkerEnv = "ENFORCERD_BENCH_TEST_WORKER"

// runTestWorker runs ops n times each in a worker process (this test
// binary, testWorkerEnv, with env added) against loopback listeners in
// this process, and fails t unless the worker ran them all.
func runTestWorker(t *testing.T, ops []Op, n int, env []string) {
	t.Helper()
	if err := runTestWorkerIn(t, t.TempDir(), ops, n, env); err != nil {
		t.Fatal(err)
	}
}

// runTestWorkerIn is runTestWorker with the worker working in dir and
// extra worker arguments; it returns the worker's failure instead of
// failing t (a worker that prints no result for an op fails t).
func runTestWorkerIn(t *testing.T, dir string, ops []Op, n int, env []string, extra ...string) error {
	t.Helper()
	port, stop, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	udp, stopUDP, err := listenUDP()
	if err != nil {
		t.Fatal(err)
	}
	defer stopUDP()
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Fatalf("the exec ops need /bin/true: %v", err)
	}
	iters := make([]string, len(ops))
	for i := range iters {
		iters[i] = fmt.Sprint(n)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-mode", "micro", "-ops", joinOps(ops), "-iters", strings.Join(iters, ","),
		"-dir", dir, "-port", fmt.Sprint(port), "-udp-port", fmt.Sprint(udp), "-exec", "/bin/true"}, extra...)...)
	cmd.Env = append(append(os.Environ(), testWorkerEnv+"=1"), env...)
	cmd.Stdin = strings.NewReader("go\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("worker: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r WorkerResult
	if len(lines) != 2 || lines[0] != "ready" || json.Unmarshal([]byte(lines[1]), &r) != nil {
		t.Fatalf("worker printed %q, want ready and its result", out)
	}
	for _, op := range ops {
		if _, ok := r.NsPerOp[op]; !ok {
			t.Errorf("%s: no result", op)
		}
	}
	return nil
}

// TestLandlockRootedAtTheWorkspace: (e1)'s ruleset (rooted at the
// workspace, read and execute elsewhere) lets every operation the
// benchmark runs do its work, and so does (e2)'s, (c2)'s twin, on what it
// runs; both deny a write outside the workspace (the ruleset is rooted
// there, not at /), with EACCES, and the file is not there.
func TestLandlockRootedAtTheWorkspace(t *testing.T) {
	abi, _ := llsys.LandlockGetABIVersion()
	if abi < 1 {
		vmtest.Skip(t, "this kernel has no Landlock")
	}
	ws := t.TempDir()
	dir := filepath.Join(ws, "1", "2")
	if err := runTestWorkerIn(t, dir, MicroOps, 3, nil, "-landlock", llAllow, "-landlock-root", ws); err != nil {
		t.Errorf("(e1): %v", err)
	}
	e2, _ := landlockTwinOps(typicalOps(MicroOps), abi)
	if err := runTestWorkerIn(t, dir, e2, 3, nil, "-landlock", llTypical, "-landlock-root", ws); err != nil {
		t.Errorf("(e2): %v", err)
	}
	// Outside the workspace: the worker's setup (before Landlock) makes
	// its files, then create_unlink's first creation is denied.
	outside := t.TempDir()
	for _, mode := range []string{llAllow, llTypical} {
		err := runTestWorkerIn(t, outside, []Op{OpCreateWrite}, 3, nil, "-landlock", mode, "-landlock-root", ws)
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("-landlock %s: create_unlink outside the workspace: %v, want permission denied (EACCES)", mode, err)
		}
	}
	ents, _ := os.ReadDir(outside)
	for _, e := range ents {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("%s left outside the workspace", e.Name())
		}
	}
}
