package enforcer_test

// Attack on this CPU's two answers (bpf/walk.h resolve_recent) and the
// early returns that trust them (surely_unenforced in file_permission and
// socket_sendmsg): more cgroups than slots taking turns on one CPU. The
// sandbox (write=false, network=false) moves between three of its own
// sub-cgroups before every write to an inherited file and every sendto on
// an inherited UDP socket, pinned to CPU 0, while on the same CPU a host
// thread (the test's cgroup) and a second, unregistered sandbox moving
// between two sub-cgroups of its own do the same operations (their answers
// are "not enforced"): six cgroups through two slots. Also a host mover
// that moves the sandbox's probe between its sub-cgroups from outside
// (the way a host tool writes cgroup.procs) on the other CPU. Tri-state:
// without the ceiling every operation succeeds.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// bothDenyEntry: network=false and write=false.
var bothDenyEntry = entry.Entry{Ceiling: policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// slot-io-loop COUNT CPU MODE PORT [SUB...]: pinned to CPU,
		// COUNT times: move to SUB[i%n] (when given), then MODE once on
		// fd 3: "write" pwrite one byte at 0; "send" sendto
		// 127.0.0.1:PORT. Out: how many succeeded; Errno 0 when all
		// did, else the last errno.
		"slot-io-loop": func(r *probe.Result, a []string) {
			n, err := strconv.Atoi(a[0])
			if !r.Require(err, "count") {
				return
			}
			cpu, err := strconv.Atoi(a[1])
			if !r.Require(err, "cpu") {
				return
			}
			mode := a[2]
			port, err := strconv.Atoi(a[3])
			if !r.Require(err, "port") {
				return
			}
			subs := a[4:]
			if !pinProbeToCPU(r, cpu) {
				return
			}
			to := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
			ok := 0
			var last error
			for i := 0; i < n; i++ {
				if len(subs) > 0 && !moveProbeTo(r, subs[i%len(subs)]) {
					return
				}
				var err error
				switch mode {
				case "write":
					_, err = unix.Pwrite(probe.InheritedFD, []byte{'x'}, 0)
				case "send":
					err = unix.Sendto(probe.InheritedFD, []byte{'x'}, 0, to)
				default:
					r.Require(fmt.Errorf("mode %q", mode), "mode")
					return
				}
				if err == nil {
					ok++
					continue
				}
				last = err
			}
			r.Out = fmt.Sprintf("succeeded=%d of %d", ok, n)
			if ok < n {
				r.Check(last, mode)
			}
		},
	})
}

// slotFiles: fd 3 for mode (a file in a fresh fixture opened for write, or
// an unbound UDP socket) and the receiver's port (0 for write).
func slotFiles(t *testing.T, mode string) (*os.File, int) {
	t.Helper()
	if mode == "write" {
		fx := newFixture(t)
		f, err := os.OpenFile(filepath.Join(fx, "f"), os.O_WRONLY, 0)
		must(t, err)
		t.Cleanup(func() { f.Close() })
		return f, 0
	}
	rcv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	must(t, err)
	t.Cleanup(func() { rcv.Close() })
	go func() { // drain
		b := make([]byte, 64)
		for {
			if _, _, err := rcv.ReadFrom(b); err != nil {
				return
			}
		}
	}()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	f := os.NewFile(uintptr(fd), "udp")
	t.Cleanup(func() { f.Close() })
	return f, rcv.LocalAddr().(*net.UDPAddr).Port
}

// hostIOLoop: until stop, mode's operation on cpu from a thread of the
// test's own cgroup (outside every sandbox).
func hostIOLoop(t *testing.T, cpu int, mode string, stop *atomic.Bool) chan struct{} {
	f, port := slotFiles(t, mode)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer runtime.UnlockOSThread()
		if err := pinThreadTo(cpu); err != nil {
			t.Errorf("affinity: %v", err)
			return
		}
		to := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
		for !stop.Load() {
			if mode == "write" {
				_, _ = unix.Pwrite(int(f.Fd()), []byte{'h'}, 0)
			} else {
				_ = unix.Sendto(int(f.Fd()), []byte{'h'}, 0, to)
			}
			if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
		}
	}()
	return done
}

func mkSubs(t *testing.T, root string, names ...string) []string {
	t.Helper()
	var out []string
	for _, s := range names {
		p := filepath.Join(root, s)
		must(t, os.MkdirAll(p, 0o755))
		out = append(out, p)
	}
	return out
}

// TestAttackSlotsManyCgroupsOneCPU: see the file comment. Three probes of
// the sandbox, one in each of its sub-cgroups a, b, c (send: each also
// moves itself round-robin between them before every call; write=false
// forbids the sandbox writing cgroup.procs, so there they stay), and two
// of an unregistered sandbox (moving between its a and b), and a host
// thread, all pinned to CPU 0.
func TestAttackSlotsManyCgroupsOneCPU(t *testing.T) {
	kt.Enforcer(t)
	for _, mode := range []string{"send", "write"} {
		t.Run(mode, func(t *testing.T) {
			// every move waits for the cgroup migration lock: fewer calls
			// where the probes move before each (a probe's time is bounded)
			n := 1500
			if mode == "send" {
				n = 250
			}
			en := networkDenyEntry
			if mode == "write" {
				en = entry.Entry{Ceiling: writeDeny}
			}
			for _, ceiling := range []bool{false, true} {
				sb := kt.Sandbox(t, "slots3-"+mode)
				if ceiling {
					sb.Register(t, en)
				}
				var subs []*kerneltest.Sandbox
				var subPaths []string
				for _, s := range []string{"a", "b", "c"} {
					c := kt.SandboxAt(t, sb.Cg.Group+"/"+s)
					subs = append(subs, c)
					subPaths = append(subPaths, c.Cg.Path())
				}
				other := kt.Sandbox(t, "slots3-other")
				osubs := mkSubs(t, other.Cg.Path(), "a", "b")

				var stop atomic.Bool
				done := hostIOLoop(t, 0, mode, &stop)
				var wg sync.WaitGroup
				ros := make([]probe.Result, 2)
				for i := range ros {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						f, port := slotFiles(t, mode)
						ros[i] = other.ProbeFiles(t, []*os.File{f}, "slot-io-loop", append([]string{strconv.Itoa(2 * n), "0", mode, strconv.Itoa(port)}, osubs...)...)
					}(i)
				}
				rs := make([]probe.Result, len(subs))
				var swg sync.WaitGroup
				for i, c := range subs {
					swg.Add(1)
					go func(i int, c *kerneltest.Sandbox) {
						defer swg.Done()
						f, port := slotFiles(t, mode)
						args := []string{strconv.Itoa(n), "0", mode, strconv.Itoa(port)}
						if mode == "send" {
							// start at its own, then round-robin
							args = append(args, subPaths[i:]...)
							args = append(args, subPaths[:i]...)
						}
						rs[i] = c.ProbeFiles(t, []*os.File{f}, "slot-io-loop", args...)
					}(i, c)
				}
				swg.Wait()
				stop.Store(true)
				<-done
				wg.Wait()
				t.Logf("ceiling=%v: sandbox %v; other %v", ceiling, rs, ros)
				for _, ro := range ros {
					if ro.Setup != "" || ro.Errno != 0 {
						t.Fatalf("unregistered sandbox: %v", ro)
					}
				}
				for i, r := range rs {
					if r.Setup != "" {
						t.Fatalf("could not attempt (%d): %v", i, r)
					}
					want := fmt.Sprintf("succeeded=%d of %d", n, n)
					if !ceiling && (r.Errno != 0 || r.Out != want) {
						t.Fatalf("control (no ceiling): %v, want %s", r, want)
					}
					if ceiling && (!r.Denied() || r.Out != fmt.Sprintf("succeeded=0 of %d", n)) {
						t.Errorf("BYPASS %s: allowed under the ceiling while six cgroups took turns on CPU 0 (probe %d): %v", mode, i, r)
					}
				}
			}
		})
	}
}

// TestAttackSlotsHostMover: a host thread on CPU 1 moves the probe (on
// CPU 0, no moves of its own) round-robin between the sandbox's own
// cgroup and three sub-cgroups as fast as it can, while a host thread on
// CPU 0 keeps the slots busy with "not enforced" answers.
func TestAttackSlotsHostMover(t *testing.T) {
	kt.Enforcer(t)
	if runtime.NumCPU() < 2 {
		vmtest.Skip(t, "needs two CPUs (the VM has two)")
	}
	const n = 20000
	for _, mode := range []string{"send", "write"} {
		t.Run(mode, func(t *testing.T) {
			for _, ceiling := range []bool{false, true} {
				sb := kt.Sandbox(t, "slots-mover-"+mode)
				if ceiling {
					sb.Register(t, bothDenyEntry)
				}
				targets := append([]string{sb.Cg.Path()}, mkSubs(t, sb.Cg.Path(), "a", "b", "c/d/e")...)
				var stop atomic.Bool
				done := hostIOLoop(t, 0, mode, &stop)
				moved := make(chan int)
				go func() {
					defer runtime.UnlockOSThread()
					if err := pinThreadTo(1); err != nil {
						t.Errorf("mover's affinity: %v", err)
					}
					k := 0
					for !stop.Load() {
						// every task of the sandbox's subtree to the next target
						for _, from := range targets {
							b, err := os.ReadFile(filepath.Join(from, "cgroup.procs"))
							if err != nil {
								continue
							}
							for _, l := range strings.Fields(string(b)) {
								to := targets[(k+1)%len(targets)]
								if os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(l), 0o644) == nil {
									k++
								}
							}
						}
					}
					moved <- k
				}()
				f, port := slotFiles(t, mode)
				r := sb.ProbeFiles(t, []*os.File{f}, "slot-io-loop", strconv.Itoa(n), "0", mode, strconv.Itoa(port))
				stop.Store(true)
				<-done
				k := <-moved
				t.Logf("ceiling=%v: %v (%d moves)", ceiling, r, k)
				if r.Setup != "" {
					t.Fatalf("could not attempt: %v", r)
				}
				want := fmt.Sprintf("succeeded=%d of %d", n, n)
				if !ceiling && (r.Errno != 0 || r.Out != want) {
					t.Fatalf("control (no ceiling): %v, want %s", r, want)
				}
				if ceiling && (!r.Denied() || r.Out != fmt.Sprintf("succeeded=0 of %d", n)) {
					t.Errorf("BYPASS %s: allowed while a host tool moved the sandbox between its cgroups: %v", mode, r)
				}
			}
		})
	}
}
