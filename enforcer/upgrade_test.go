package enforcer_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// pinnedBuildID reads the build id pinned under pinDir.
func pinnedBuildID(t *testing.T, pinDir string) [32]byte {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(pinDir, enforcer.BuildIDPin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var id [32]byte
	if err := m.Lookup(uint32(0), &id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNoBPFLSMUpgradeInPlace: an enforcerd of the previous build
// (testdata/previous-build; scripts/vmtest packs it as ENFORCERD_PREV_BIN)
// registers a ceiling with `enforcerd run` and runs a workload that
// attempts denied operations without pause. The previous build's process
// then dies, leaving its programs attached by their pins alone, and this
// build's Open replaces every pinned link. Tri-state: (a) the operations succeed with
// their effect outside the ceiling; (b) under it every attempt is denied
// before, during and after the upgrade: not one succeeds; (c) no effect is
// left. The registration is kept, and the previous build's programs are
// gone at the end. With BPF LSM it covers every layer (write, network and
// tamper hooks); booted without it, the cgroup-BPF and tp_btf links alone.
func TestNoBPFLSMUpgradeInPlace(t *testing.T) {
	vmtest.RequireRoot(t)
	prev := os.Getenv("ENFORCERD_PREV_BIN")
	if prev == "" {
		vmtest.Skip(t, "ENFORCERD_PREV_BIN is not set: scripts/vmtest builds the commit of testdata/previous-build")
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		vmtest.Skip(t, fmt.Sprintf("no cgroup2: %v", err))
	}
	lsm := vmtest.InVM() && !vmtest.NoBPFLSM()
	ops := []string{"socket"}
	flags := []string{"--network=deny", "--allow-partial"}
	want := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	if lsm {
		ops = []string{"create", "socket", "bpf"}
		flags = []string{"--network=deny", "--write=deny"}
		want.Write = false
	}
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-upgrade-%d", os.Getpid())
	scratch := t.TempDir()

	// (a) control: every operation succeeds here, with its effect.
	for _, n := range ops {
		if err := loopOps[n](scratch, -1); err != nil {
			t.Fatalf("control (no ceiling): %s: %v, want success", n, err)
		}
	}
	if lsm {
		if err := os.Remove(filepath.Join(scratch, "leak--1")); err != nil {
			t.Fatalf("control (no ceiling): create left no file: %v", err)
		}
	}

	// The previous build loads its programs, registers, runs the loop.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	stderr, err := os.CreateTemp(t.TempDir(), "prev-stderr")
	if err != nil {
		t.Fatal(err)
	}
	// When the previous build's process dies, the loop becomes this
	// process's child, to be reaped here: a zombie keeps its cgroup busy.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	args := append(append([]string{"run", "--pin-dir", pin, "--quiet"}, flags...), "--", self)
	old := exec.Command(prev, args...)
	old.Env = append(os.Environ(), probe.Env("upgrade-loop", scratch, strings.Join(ops, ","))...)
	old.Stdout, old.Stderr = wr, stderr
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	oldDone := false
	stop := func() { _ = os.WriteFile(filepath.Join(scratch, "stop"), nil, 0o644) }
	var enf *enforcer.Enforcer
	var loopCg cgroup.Cgroup
	loopPid := 0
	t.Cleanup(func() {
		stop()
		if !oldDone {
			_ = old.Process.Kill()
			_ = old.Wait()
		}
		if loopCg.ID != 0 {
			_ = loopCg.Kill()
			if loopPid != 0 {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(loopPid, &ws, 0, nil)
			}
			if err := loopCg.Remove(10 * time.Second); err != nil {
				t.Errorf("remove %s: %v", loopCg, err)
			}
		}
		if enf == nil {
			enf, _ = enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount})
		}
		if enf != nil {
			if err := enf.Uninstall(); err != nil {
				t.Error(err)
			}
		}
	})
	out := readLoop(rd)
	diag := func() string {
		b, _ := os.ReadFile(stderr.Name())
		return "previous build's stderr:\n" + string(b)
	}
	deniedAll := func(st loopStatus) bool {
		for _, n := range ops {
			if st.Denied[n] == 0 {
				return false
			}
		}
		return true
	}
	// Loading every program under TCG takes a while.
	before := out.wait(t, "the first denials under the previous build", 10*time.Minute, deniedAll, diag)
	loopPid = before.Pid
	if loopCg, err = cgroup.Open(mount, before.Cgroup); err != nil {
		t.Fatalf("the loop's cgroup %q: %v", before.Cgroup, err)
	}
	if pinnedBuildID(t, pin) == bpf.BuildID() {
		t.Fatalf("the previous build (%s) pinned this build's id: its eBPF objects are this build's, nothing to upgrade (record an older commit in testdata/previous-build)", prev)
	}
	first := linkProgramIDs(t, pin)
	if len(first) == 0 {
		t.Fatal("the previous build pinned no links")
	}

	// The previous build's process exits (as a daemon stopped for the
	// upgrade would): from now on its programs are attached by their pins
	// alone, and a link unpinned too early would leave its hook empty.
	_ = old.Process.Kill()
	_ = old.Wait()
	oldDone = true
	tExit := time.Now()
	atExit := out.iterAt(tExit)
	out.wait(t, "iterations under the pins alone", 5*time.Minute, func(st loopStatus) bool {
		return st.Time > tExit.UnixNano() && st.Iter >= atExit+20
	}, diag)

	// The upgrade: this build's Open, while the loop keeps trying.
	t0 := time.Now()
	enf, err = enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount})
	t1 := time.Now()
	if err != nil {
		t.Fatalf("Open over the previous build's pins: %v", err)
	}
	t.Logf("upgrade: Open took %v; %d links of the previous build", t1.Sub(t0).Round(time.Millisecond), len(first))
	layers := []coverage.Layer{coverage.LayerCgroup, coverage.LayerLifecycle}
	if lsm {
		layers = append(layers, coverage.LayerLSM)
	}
	for _, l := range layers {
		if err := enf.LayerError(l); err != nil {
			t.Errorf("after the upgrade, layer %s: %v", l, err)
		}
	}
	for _, h := range enf.Hooks() {
		if h.Adopted {
			t.Errorf("hook %s (%s): adopted the previous build's link, want it replaced", h.Name, h.Program)
		}
	}
	upgraded := linkProgramIDs(t, pin)
	for name, id := range first {
		switch nid, ok := upgraded[name]; {
		case !ok:
			t.Errorf("link pin %s of the previous build is gone, not replaced", name)
		case nid == id:
			t.Errorf("link %s still runs program %d of the previous build", name, id)
		}
	}
	if pinnedBuildID(t, pin) != bpf.BuildID() {
		t.Error("the pinned build id is not this build's after the upgrade")
	}
	if en, err := enf.Lookup(loopCg.ID); err != nil {
		t.Errorf("the previous build's registration of %s: %v", loopCg, err)
	} else if en.Ceiling != want || en.Pending {
		t.Errorf("registration of %s after the upgrade: %+v, want ceiling %v, active", loopCg, en, want)
	}

	// Nothing holds the previous build's links any more: its programs are
	// released, and only this build's enforce.
	for name, id := range first {
		gone := false
		for i := 0; i < 500 && !gone; i++ {
			p, err := ebpf.NewProgramFromID(id)
			if err != nil {
				gone = true
				break
			}
			p.Close()
			time.Sleep(20 * time.Millisecond)
		}
		if !gone {
			t.Fatalf("program %d of the previous build's link %s is still loaded", id, name)
		}
	}
	tGone := time.Now()
	atGone := out.iterAt(tGone)
	out.wait(t, "iterations after the previous build's programs are gone", 5*time.Minute, func(st loopStatus) bool {
		return st.Time > tGone.UnixNano() && st.Iter >= atGone+50
	}, diag)
	// The upgrade created the tally maps the previous build had not (its
	// pinned maps were kept), and this build's programs count the loop's
	// denials in them.
	tl, err := enf.Tally()
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Rotate(); err != nil {
		t.Fatalf("tally after the upgrade: %v", err)
	}
	var counted uint64
	for _, s := range tl.Collect() {
		if s.CeilingCgroupID == loopCg.ID {
			counted += s.Count
		}
	}
	t.Logf("the loop's denials counted in the tally after the upgrade: %d", counted)
	if counted == 0 {
		t.Error("after the upgrade no denial of the loop was counted in the tally")
	}
	stop()
	final := out.wait(t, "the loop's final status", 2*time.Minute, func(st loopStatus) bool { return st.Final }, diag)

	// (b) every attempt, in every phase, was denied.
	phase := func(ns int64) string {
		switch {
		case ns < tExit.UnixNano():
			return "before the upgrade, under the previous build's process"
		case ns < t0.UnixNano():
			return "before the upgrade, under the previous build's pins alone"
		case ns <= t1.UnixNano():
			return "during the upgrade (Open)"
		case ns <= tGone.UnixNano():
			return "after Open, before the previous build's programs were released"
		}
		return "after the previous build's programs were released"
	}
	for _, n := range ops {
		if k := final.Leaks[n]; k > 0 {
			t.Errorf("BYPASS: %s succeeded %d times under the ceiling; the first %s", n, k, phase(final.FirstLeak[n]))
		}
		if e := final.Other[n]; e != "" {
			t.Errorf("%s failed with %s, neither denied nor allowed: the loop proves nothing", n, e)
		}
		if final.Denied[n] == 0 {
			t.Errorf("%s was never denied", n)
		}
	}
	during, after := out.iterAt(t1)-out.iterAt(t0), final.Iter-atGone
	t.Logf("iterations: %d under the previous build's process, %d under its pins alone, %d during Open, %d after its programs were released (%d in all)",
		atExit, out.iterAt(t0)-atExit, during, after, final.Iter)
	if during == 0 {
		t.Error("no iteration completed during Open: the test did not watch the replacement")
	}
	// (c) no effect.
	if lsm {
		if leaked, _ := filepath.Glob(filepath.Join(scratch, "leak-*")); len(leaked) > 0 {
			t.Errorf("BYPASS: files created under write=false: %v", leaked)
		}
	}
}
