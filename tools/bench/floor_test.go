package bench

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestFloorSpec: every program of every embedded object gets a floor twin
// of the same type, attach type, target, section and license whose body
// only allows (1 for cgroup-BPF, 0 for LSM and tracing).
func TestFloorSpec(t *testing.T) {
	n, cg := 0, 0
	for _, load := range objectSpecs {
		cs, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for name, ps := range cs.Programs {
			fs := floorSpec(ps)
			n++
			if fs.Type != ps.Type || fs.AttachType != ps.AttachType || fs.AttachTo != ps.AttachTo ||
				fs.SectionName != ps.SectionName || fs.License != ps.License {
				t.Errorf("%s: floor %v/%v/%q/%q/%q, program %v/%v/%q/%q/%q", name,
					fs.Type, fs.AttachType, fs.AttachTo, fs.SectionName, fs.License,
					ps.Type, ps.AttachType, ps.AttachTo, ps.SectionName, ps.License)
			}
			want := int64(0)
			switch ps.Type {
			case ebpf.CGroupSock, ebpf.CGroupSockAddr, ebpf.CGroupSockopt, ebpf.CGroupSKB, ebpf.CGroupSysctl, ebpf.CGroupDevice:
				want = 1
				cg++
			}
			if len(fs.Instructions) != 2 || fs.Instructions[0].Constant != want || fs.Instructions[0].Dst != asm.R0 ||
				fs.Instructions[1].OpCode != asm.Return().OpCode {
				t.Errorf("%s (%v): floor body %v, want r0 = %d; exit", name, ps.Type, fs.Instructions, want)
			}
			if len(ps.Instructions) <= 2 {
				t.Errorf("%s: the original lost its body (%d instructions)", name, len(ps.Instructions))
			}
		}
	}
	if n == 0 || cg == 0 {
		t.Fatalf("%d programs, %d cgroup-BPF: the objects were not read", n, cg)
	}
}

// floorChildEnv makes the test binary a child that creates one AF_INET
// socket and exits (TestMain).
const floorChildEnv = "ENFORCERD_BENCH_FLOOR_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(floorChildEnv) == "1" {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor child: socket:", err)
			os.Exit(1)
		}
		unix.Close(fd)
		os.Exit(0)
	}
	if os.Getenv(testWorkerEnv) == "1" {
		if err := Worker(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestNativeAttachFloorRunsBelowItsCgroup: the cgroup-BPF floor programs attach
// at the cgroup given, run for a socket created below it (their run count
// grows) and allow it (the child's socket succeeds), and do not run for a
// socket created beside it.
func TestNativeAttachFloorRunsBelowItsCgroup(t *testing.T) {
	// Native only: the floor is a phase of the benchmark's native part.
	vmtest.NativeOnly(t)
	vmtest.RequireRoot(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skipf("no cgroup2: %v", err)
	}
	base := fmt.Sprintf("/enforcerd-floor-test-%d", os.Getpid())
	var cgs []cgroup.Cgroup
	mk := func(group string) cgroup.Cgroup {
		cg, err := cgroup.Create(mount, group)
		if err != nil {
			t.Fatal(err)
		}
		cgs = append(cgs, cg)
		return cg
	}
	mk(base)
	att, flr := mk(base+"/att"), mk(base+"/flr")
	in, beside := mk(base+"/flr/f"), mk(base+"/beside")
	defer func() {
		for i := len(cgs) - 1; i >= 0; i-- {
			_ = cgs[i].Remove(5 * time.Second)
		}
	}()
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-floor-test-%d", os.Getpid())
	enf, err := enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: att.Path()})
	if err != nil {
		vmtest.Skip(t, fmt.Sprintf("cannot load programs here: %v", err))
	}
	defer func() { _ = enf.Uninstall() }()
	if err := enf.LayerError(coverage.LayerCgroup); err != nil {
		vmtest.Skip(t, fmt.Sprintf("cgroup-BPF programs cannot attach here: %v", err))
	}
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatalf("enable BPF stats: %v", err)
	}
	defer st.Close()
	f, err := attachFloor(enf, flr.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	// Only the cgroup-BPF twins are scoped to the cgroup; tracing twins
	// (tp_btf sched_process_exec runs for the child's exec) run anywhere.
	runs := func() uint64 {
		var n uint64
		for _, p := range f.progs {
			switch p.Type() {
			case ebpf.CGroupSock, ebpf.CGroupSockAddr:
			default:
				continue
			}
			s, err := p.Stats()
			if err != nil {
				t.Fatal(err)
			}
			n += s.RunCount
		}
		return n
	}
	child := func(cg cgroup.Cgroup) {
		t.Helper()
		dir, err := cg.OpenDir()
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), floorChildEnv+"=1")
		cmd.SysProcAttr = cgroup.SysProcAttr(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child in %s: %v: %s", cg, err, out)
		}
	}
	n0 := runs()
	child(beside)
	if n := runs(); n != n0 {
		t.Errorf("floor programs ran %d times for a socket beside their cgroup", n-n0)
	}
	child(in)
	if n := runs(); n <= n0 {
		t.Errorf("floor programs did not run for a socket below their cgroup (%d runs before and after)", n)
	}
}
