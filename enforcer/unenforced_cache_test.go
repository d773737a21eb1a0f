package enforcer_test

// resolve()'s caches (bpf/walk.h: the per-cgroup LRU and each CPU's two
// answers in front of it) hold "not enforced" for a cgroup. A process that
// got that answer and then comes under a ceiling without exec'ing (its
// cgroup registered while it runs; moved by a host tool writing
// cgroup.procs, as `runc exec` does; a child a host parent clones straight
// into a registered cgroup) must be denied at once: the caches are keyed
// by the exact cgroup id and a generation every registration replaces.
// Tri-state: the same steps without the ceiling leave the second socket()
// allowed.

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// socket-wait-socket: socket(AF_INET) a few times (must work: the
		// caches learn "not enforced"), one byte to fd 4, wait for one
		// byte on fd 3, then the socket() whose outcome is the result.
		"socket-wait-socket": func(r *probe.Result, a []string) {
			for range 20 {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if !r.Require(err, "first socket (before the ceiling)") {
					return
				}
				unix.Close(fd)
			}
			if _, err := unix.Write(probe.InheritedFD+1, []byte{1}); !r.Require(err, "ready") {
				return
			}
			var b [1]byte
			if _, err := unix.Read(probe.InheritedFD, b[:]); !r.Require(err, "wait") {
				return
			}
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if r.Check(err, "socket") {
				unix.Close(fd)
			}
		},
	})
}

var networkDenyEntry = entry.Entry{Ceiling: networkDeny}

// warmThenChange runs socket-wait-socket in run, calls change once the
// probe's first sockets worked, then lets it try again.
func warmThenChange(t *testing.T, run *kerneltest.Sandbox, change func(pid int)) probe.Result {
	t.Helper()
	goR, goW, err := os.Pipe()
	must(t, err)
	readyR, readyW, err := os.Pipe()
	must(t, err)
	defer goW.Close()
	defer readyR.Close()
	done := make(chan probe.Result, 1)
	go func() { done <- run.ProbeFiles(t, []*os.File{goR, readyW}, "socket-wait-socket") }()
	var b [1]byte
	if _, err := readyR.Read(b[:]); err != nil {
		r := <-done
		t.Fatalf("probe never got ready: %v (%v)", err, r)
	}
	change(onlyPid(t, run))
	if _, err := goW.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("probe did not finish")
	}
	return probe.Result{}
}

// onlyPid: the one process in the sandbox's cgroup.
func onlyPid(t *testing.T, sb *kerneltest.Sandbox) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sb.Cg.Path(), "cgroup.procs"))
	must(t, err)
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("%s holds %d processes (%q), want the probe alone", sb.Cg.Group, len(f), f)
	}
	pid, err := strconv.Atoi(f[0])
	must(t, err)
	return pid
}

func TestUnenforcedAnswerNeverOutlivesCeiling(t *testing.T) {
	kt.Enforcer(t)
	for _, ceiling := range []bool{false, true} {
		want := func(t *testing.T, name string, r probe.Result) {
			t.Helper()
			if r.Setup != "" {
				t.Fatalf("%s: %v", name, r)
			}
			if !ceiling && r.Errno != 0 {
				t.Fatalf("control %s (no ceiling): %v, want success", name, r)
			}
			if ceiling && !r.Denied() {
				t.Errorf("BYPASS %s: socket() after coming under network=false: %v, want EPERM", name, r)
			}
		}
		suffix := "/control"
		if ceiling {
			suffix = "/ceiling"
		}
		t.Run("cgroup-registered-while-running"+suffix, func(t *testing.T) {
			sb := kt.Sandbox(t, "reg-live")
			r := warmThenChange(t, sb, func(int) {
				if ceiling {
					sb.Register(t, networkDenyEntry)
				}
			})
			want(t, "registered while running", r)
		})
		t.Run("moved-by-cgroup-procs"+suffix, func(t *testing.T) {
			// The target registered first: moving changes no generation,
			// only the task's cgroup id.
			x := kt.Sandbox(t, "procs-x")
			if ceiling {
				x.Register(t, networkDenyEntry)
			}
			u := kt.Sandbox(t, "procs-u")
			r := warmThenChange(t, u, func(pid int) {
				must(t, os.WriteFile(filepath.Join(x.Cg.Path(), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644))
			})
			want(t, "moved by a write to cgroup.procs", r)
		})
		t.Run("cloned-into-cgroup"+suffix, func(t *testing.T) {
			// This thread (outside every sandbox) gets "not enforced" on
			// its CPU, then clones a child straight into the registered
			// cgroup from the same thread, on the same CPU.
			x := kt.Sandbox(t, "clone-x")
			if ceiling {
				x.Register(t, networkDenyEntry)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set unix.CPUSet
			must(t, unix.SchedGetaffinity(0, &set))
			var one unix.CPUSet
			for c := 0; c < 1024; c++ {
				if set.IsSet(c) {
					one.Set(c)
					break
				}
			}
			must(t, unix.SchedSetaffinity(0, &one))
			defer func() { _ = unix.SchedSetaffinity(0, &set) }()
			for range 20 {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				must(t, err)
				unix.Close(fd)
			}
			want(t, "cloned into the cgroup", x.Probe(t, "socket", sockArgs(unix.AF_INET, unix.SOCK_STREAM, 0)...))
		})
	}
}
