package enforcer_test

// More outside attacks on the two caches added for speed (see
// attack_cache_race_test.go): renames the roots decision cache must see
// that are not a plain rename(2) (RENAME_EXCHANGE of the cached directory
// or of an ancestor with a directory outside, io_uring's
// IORING_OP_RENAMEAT), and resolve()'s per-CPU last answer under
// interleaving: a sandboxed process and a process outside every sandbox
// calling socket() on one CPU, and a sandboxed process moving itself
// between its own sub-cgroups between the calls.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// pinThreadTo locks the calling goroutine to its thread and that thread
// to cpu (the caller unlocks it, if ever).
func pinThreadTo(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

// pinProbeToCPU is pinThreadTo for a probe; false (r's setup failed) when
// it cannot.
func pinProbeToCPU(r *probe.Result, cpu int) bool {
	return r.Require(pinThreadTo(cpu), "affinity")
}

// moveProbeTo moves the probe's thread into the cgroup directory dir (its
// cgroup.procs); false (r's setup failed) when it cannot.
func moveProbeTo(r *probe.Result, dir string) bool {
	p := filepath.Join(dir, "cgroup.procs")
	return r.Require(os.WriteFile(p, []byte(strconv.Itoa(unix.Gettid())), 0o644), "move to "+dir)
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// socket-loop COUNT CPU [SUB-A SUB-B]: pinned to CPU, COUNT times
		// socket(AF_INET, SOCK_DGRAM) (closed again); with SUB-A and
		// SUB-B (cgroup directories), the process moves itself to one of
		// them, alternating, before each call. Out: how many succeeded;
		// Errno 0 when any did, else the last errno.
		"socket-loop": func(r *probe.Result, a []string) {
			n, err := strconv.Atoi(a[0])
			if !r.Require(err, "count") {
				return
			}
			cpu, err := strconv.Atoi(a[1])
			if !r.Require(err, "cpu") {
				return
			}
			if !pinProbeToCPU(r, cpu) {
				return
			}
			subs := a[2:]
			ok := 0
			var last error
			for i := 0; i < n; i++ {
				if len(subs) == 2 && !moveProbeTo(r, subs[i%2]) {
					return
				}
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				if err == nil {
					ok++
					unix.Close(fd)
					continue
				}
				last = err
			}
			r.Out = fmt.Sprintf("succeeded=%d of %d", ok, n)
			if ok == 0 {
				r.Check(last, "socket")
			}
		},
	})
}

// hostSocketLoop: until stop, socket()/close on cpu from a thread outside
// every sandbox (the per-CPU slot keeps its "not enforced" answer).
func hostSocketLoop(t *testing.T, cpu int, stop *atomic.Bool) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer runtime.UnlockOSThread()
		if err := pinThreadTo(cpu); err != nil {
			t.Errorf("affinity: %v", err)
			return
		}
		for !stop.Load() {
			if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		}
	}()
	return done
}

// TestAttackResolveLastInterleave: every socket() of a network=false
// sandbox pinned to the CPU a host process hammers with its own socket()
// calls is refused (the two take turns in the CPU's two answers,
// resolve_recent's slots), also while the sandbox moves itself
// between its own sub-cgroups before each call (three cgroups through two
// slots: each answer is replaced in turn); without the ceiling every one
// works.
func TestAttackResolveLastInterleave(t *testing.T) {
	kt.Enforcer(t)
	const n = 3000
	for _, migrate := range []bool{false, true} {
		name := "same-cpu-as-host"
		if migrate {
			name = "same-cpu-migrating-between-own-subcgroups"
		}
		t.Run(name, func(t *testing.T) {
			for _, ceiling := range []bool{false, true} {
				sb := kt.Sandbox(t, "last-interleave")
				if ceiling {
					sb.Register(t, networkDenyEntry)
				}
				args := []string{strconv.Itoa(n), "0"}
				if migrate {
					for _, s := range []string{"a", "b"} {
						p := filepath.Join(sb.Cg.Path(), s)
						must(t, os.Mkdir(p, 0o755))
						args = append(args, p)
					}
				}
				var stop atomic.Bool
				done := hostSocketLoop(t, 0, &stop)
				r := sb.Probe(t, "socket-loop", args...)
				stop.Store(true)
				<-done
				t.Logf("ceiling=%v: %v", ceiling, r)
				if r.Setup != "" {
					t.Fatalf("could not attempt: %v", r)
				}
				want := fmt.Sprintf("succeeded=%d of %d", n, n)
				if !ceiling && (r.Errno != 0 || r.Out != want) {
					t.Fatalf("control (no ceiling): %v, want %s", r, want)
				}
				if ceiling && (!r.Denied() || r.Out != fmt.Sprintf("succeeded=0 of %d", n)) {
					t.Errorf("BYPASS %s: a socket() under network=false was allowed: %v", name, r)
				}
			}
		})
	}
}

// exchangeSub and exchangeAncestor swap R/a/sub (or R/a) with T1/e, a
// directory outside the root (RENAME_EXCHANGE); uringMoveSub moves R/a/sub
// to T1/sub with io_uring's IORING_OP_RENAMEAT (no rename(2) syscall).
func exchangeSub(t *testing.T, fx outsideFx) {
	must(t, os.MkdirAll(fx.path("T1/e"), 0o755))
	must(t, unix.Renameat2(unix.AT_FDCWD, fx.path("R/a/sub"), unix.AT_FDCWD, fx.path("T1/e"), unix.RENAME_EXCHANGE))
}

func exchangeAncestor(t *testing.T, fx outsideFx) {
	must(t, os.MkdirAll(fx.path("T1/e"), 0o755))
	must(t, unix.Renameat2(unix.AT_FDCWD, fx.path("R/a"), unix.AT_FDCWD, fx.path("T1/e"), unix.RENAME_EXCHANGE))
}

// atFdcwdU32 is AT_FDCWD as the SQE's len field carries it (newdirfd).
var atFdcwdU32 = func() uint32 { v := int32(unix.AT_FDCWD); return uint32(v) }()

// uringRename renames o to n with io_uring's IORING_OP_RENAMEAT (no
// rename(2) system call).
func uringRename(o, n string) error {
	ring, err := probe.NewRing()
	if err != nil {
		return err
	}
	defer ring.Close()
	ob, nb := append([]byte(o), 0), append([]byte(n), 0)
	const opRenameat = 35 // IORING_OP_RENAMEAT
	_, err = ring.Do(probe.SQE{Op: opRenameat, FD: unix.AT_FDCWD, Addr: probe.Ptr(ob), Off: probe.Ptr(nb), Len: atFdcwdU32})
	runtime.KeepAlive(ob)
	runtime.KeepAlive(nb)
	return err
}

func uringMoveSub(t *testing.T, fx outsideFx) {
	must(t, uringRename(fx.path("R/a/sub"), fx.path("T1/sub")))
	if _, err := os.Stat(fx.path("T1/sub/f")); err != nil {
		t.Fatalf("io_uring renameat did not move R/a/sub: %v", err)
	}
}

// TestAttackRootsCacheOtherRenames: the cache holds "allowed" for R/a/sub;
// the directory (or its ancestor) then leaves the root by RENAME_EXCHANGE
// or by an io_uring rename: the next write is refused at once.
func TestAttackRootsCacheOtherRenames(t *testing.T) {
	kt.Enforcer(t)
	var cases []cacheCase
	for _, m := range []struct {
		name   string
		change func(t *testing.T, fx outsideFx)
		dir    string
	}{{"exchanged-out", exchangeSub, "T1/e"}, {"ancestor-exchanged-out", exchangeAncestor, "T1/e/sub"}, {"io-uring-renameat-out", uringMoveSub, "T1/sub"}} {
		cases = append(cases,
			cacheCase{name: m.name + "/create", change: m.change, op: "create", args: []string{m.dir + "/new"}, watch: m.dir},
			cacheCase{name: m.name + "/append", change: m.change, op: "append", args: []string{m.dir + "/f"}, watch: m.dir},
			cacheCase{name: m.name + "/write-held-descriptor", change: m.change, op: "write-fd", fd: "R/a/sub/f", watch: m.dir},
		)
	}
	runCacheCases(t, cases)
}

// moveFileOut, exchangeFileOut and uringMoveFileOut move the file R/a/sub/f
// (not its directory) out of the root, to T1/f, by rename(2), by
// RENAME_EXCHANGE with the file T1/g, and by io_uring's IORING_OP_RENAMEAT.
// None of them moves a directory, so none moves names_generation
// (bpf/roots.h rename_moves_directory): the cache still holds "allowed"
// for R/a/sub afterwards, and the decision must come from the file's new
// parent.
func moveFileOut(t *testing.T, fx outsideFx) {
	must(t, os.Rename(fx.path("R/a/sub/f"), fx.path("T1/f")))
}

func exchangeFileOut(t *testing.T, fx outsideFx) {
	must(t, os.WriteFile(fx.path("T1/g"), []byte("other"), 0o644))
	must(t, unix.Renameat2(unix.AT_FDCWD, fx.path("R/a/sub/f"), unix.AT_FDCWD, fx.path("T1/g"), unix.RENAME_EXCHANGE))
}

func uringMoveFileOut(t *testing.T, fx outsideFx) {
	must(t, uringRename(fx.path("R/a/sub/f"), fx.path("T1/f")))
}

// TestAttackRootsCacheFileMovedOut: the cache holds "allowed" for R/a/sub;
// the host then moves the file R/a/sub/f out of the root (a rename that
// moves no directory and leaves the cache's entries alone). A write to it
// by its new name or through a descriptor opened beneath the root before
// the move is refused at once.
func TestAttackRootsCacheFileMovedOut(t *testing.T) {
	kt.Enforcer(t)
	var cases []cacheCase
	for _, m := range []struct {
		name   string
		change func(t *testing.T, fx outsideFx)
		file   string
	}{{"file-moved-out", moveFileOut, "T1/f"}, {"file-exchanged-out", exchangeFileOut, "T1/g"}, {"file-io-uring-renameat-out", uringMoveFileOut, "T1/f"}} {
		cases = append(cases,
			cacheCase{name: m.name + "/append", change: m.change, op: "append", args: []string{m.file}, watch: "T1"},
			cacheCase{name: m.name + "/chmod", change: m.change, op: "chmod", args: []string{m.file}, watch: "T1"},
			cacheCase{name: m.name + "/write-held-descriptor", change: m.change, op: "write-fd", fd: "R/a/sub/f", watch: "T1"},
		)
	}
	runCacheCases(t, cases)
}
