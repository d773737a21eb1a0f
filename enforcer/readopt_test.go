package enforcer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/enforcerd/enforcerd/bpf"
	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// linkProgramIDs returns, per pinned link, the id of the program it runs.
func linkProgramIDs(t *testing.T, pinDir string) map[string]ebpf.ProgramID {
	t.Helper()
	entries, err := os.ReadDir(enforcer.LinkPinDir(pinDir))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]ebpf.ProgramID{}
	for _, ent := range entries {
		l, err := link.LoadPinnedLink(filepath.Join(enforcer.LinkPinDir(pinDir), ent.Name()), nil)
		if err != nil {
			t.Fatalf("pinned link %s: %v", ent.Name(), err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids[ent.Name()] = info.Program
	}
	return ids
}

// cachesGeneration reads the generation that validates resolve()'s cached
// answers (bpf/maps.h, struct enforcerd_config) from the pinned map.
func cachesGeneration(t *testing.T, pinDir string) uint64 {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(pinDir, bpf.SharedMapEnforcerdConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var c bpf.SharedEnforcerdConfig
	if err := m.Lookup(uint32(0), &c); err != nil {
		t.Fatal(err)
	}
	return c.Generation
}

// TestNativeOpenReadoptsOrReplacesPins: Open re-adopts the pins of its own build
// and replaces those of another build: a restarted enforcerd keeps the very
// programs that are pinned (no window, nothing wiped), and an upgraded one
// swaps each link for its own (and removes the pins of the maps it
// retired, and gives the caches a new generation). Here "another build" is this one with its
// pinned build id changed; TestNoBPFLSMUpgradeInPlace upgrades from a real
// previous build in the VM.
func TestNativeOpenReadoptsOrReplacesPins(t *testing.T) {
	// Native only: the replacement logic does not depend on the layer;
	// natively it runs on the cgroup-BPF and tp_btf links, and in the VM
	// TestNoBPFLSMUpgradeInPlace replaces every layer's links.
	vmtest.NativeOnly(t)
	vmtest.RequireRoot(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skipf("no cgroup2: %v", err)
	}
	// The cgroup-BPF programs attach below a cgroup of the test's own.
	own, err := cgroup.Create(mount, fmt.Sprintf("/enforcerd-upgrade-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Remove(5 * time.Second)
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-upgrade-test-%d", os.Getpid())
	opts := enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: own.Path()}
	enf, err := enforcer.Open(opts)
	if err != nil {
		vmtest.Skip(t, fmt.Sprintf("cannot load programs here: %v", err))
	}
	defer func() {
		if e, err := enforcer.Open(opts); err == nil {
			e.Uninstall()
		}
	}()
	if err := enf.LayerError(coverage.LayerCgroup); err != nil {
		enf.Close()
		vmtest.Skip(t, fmt.Sprintf("cgroup-BPF programs cannot attach here: %v", err))
	}
	enf.Close()
	first := linkProgramIDs(t, pin)
	if len(first) == 0 {
		t.Fatal("no pinned links after Open")
	}

	// Same build: every link is re-adopted as it is.
	enf, err = enforcer.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range enf.Hooks() {
		if h.Attached && !h.Adopted {
			t.Errorf("hook %s (%s) was re-attached, want re-adopted", h.Name, h.Program)
		}
	}
	enf.Close()
	if again := linkProgramIDs(t, pin); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("re-open changed the pinned programs: %v -> %v", first, again)
	}

	// Another build's pins: each link is replaced by this build's program.
	m, err := ebpf.LoadPinnedMap(enforcer.MapPinPath(pin, enforcer.BuildIDPin), nil)
	if err != nil {
		t.Fatal(err)
	}
	var other [32]byte
	other[0] = 0xff
	if err := m.Update(uint32(0), other, ebpf.UpdateAny); err != nil {
		t.Fatal(err)
	}
	m.Close()
	// The other build's one-slot answer cache (bpf/walk.h: resolve_last,
	// retired): its pin goes with the upgrade.
	retired, err := ebpf.NewMap(&ebpf.MapSpec{Name: "resolve_last", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 144, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	retiredPin := enforcer.MapPinPath(pin, "resolve_last")
	if err := retired.Pin(retiredPin); err != nil {
		t.Fatal(err)
	}
	retired.Close()
	// The caches' generation: answers the other build kept must not be
	// taken for this build's.
	before := cachesGeneration(t, pin)
	enf, err = enforcer.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	enf.Close()
	if _, err := os.Stat(retiredPin); !os.IsNotExist(err) {
		t.Errorf("the retired map's pin %s is still there after the upgrade (stat: %v)", retiredPin, err)
	}
	if after := cachesGeneration(t, pin); after == before {
		t.Errorf("the caches' generation is still %#x after the upgrade: the other build's cached answers stay current", after)
	}
	upgraded := linkProgramIDs(t, pin)
	if len(upgraded) != len(first) {
		t.Fatalf("pins after upgrade: %v, before: %v", upgraded, first)
	}
	for name, id := range upgraded {
		if id == first[name] {
			t.Errorf("link %s still runs program %d of the other build", name, id)
		}
	}
	// And the old programs are gone (nothing holds them any more; the
	// kernel frees tracing links from a workqueue, so allow it a moment).
	for name, id := range first {
		gone := false
		for i := 0; i < 100 && !gone; i++ {
			p, err := ebpf.NewProgramFromID(id)
			if err != nil {
				gone = true
				break
			}
			p.Close()
			time.Sleep(20 * time.Millisecond)
		}
		if !gone {
			t.Errorf("program %d of the replaced link %s is still loaded", id, name)
		}
	}
}
