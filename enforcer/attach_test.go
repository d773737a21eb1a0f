package enforcer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestNativeOpenAttachesCgroupProgramsAtCgroupAttach: with Options.CgroupAttach
// the cgroup-BPF programs attach at that cgroup, not at the root: every
// pinned cgroup link names it, and (where they are the only network layer,
// without BPF LSM) they hold a registered cgroup below it and none beside
// it. Tri-state below it: an unregistered cgroup creates an inet socket, a
// network=false one is refused.
func TestNativeOpenAttachesCgroupProgramsAtCgroupAttach(t *testing.T) {
	// Native only: a private load of every program costs tens of seconds
	// under TCG, and the attach point does not depend on the kernel.
	vmtest.NativeOnly(t)
	vmtest.RequireRoot(t)
	enf, mount, own, pin := privateEnforcer(t, "attach")
	requireCgroupLayer(t, enf)
	base := own.Group
	var cgs []cgroup.Cgroup
	mk := func(group string) cgroup.Cgroup {
		cg, err := cgroup.Create(mount, group)
		if err != nil {
			t.Fatal(err)
		}
		cgs = append(cgs, cg)
		return cg
	}
	ctl, in := mk(base+"/control"), mk(base+"/in")
	beside := mk(base + "-beside")
	defer func() {
		for i := len(cgs) - 1; i >= 0; i-- {
			cgs[i].Remove(5 * time.Second)
		}
	}()

	n := 0
	dir := enforcer.LinkPinDir(pin)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		if !strings.HasPrefix(ent.Name(), "cgroup_") {
			continue
		}
		l, err := link.LoadPinnedLink(filepath.Join(dir, ent.Name()), nil)
		if err != nil {
			t.Fatal(err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if cg := info.Cgroup(); cg == nil || cg.CgroupId != own.ID {
			t.Errorf("link %s: attached at %+v, want cgroup %s", ent.Name(), cg, own)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no cgroup link pinned in %s", dir)
	}

	ceiling := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	for _, cg := range []cgroup.Cgroup{in, beside} {
		if err := enf.Register(cg, entry.Entry{Ceiling: ceiling, AllowPartial: true}); err != nil {
			t.Fatal(err)
		}
	}
	socket := func(cg cgroup.Cgroup) probe.Result {
		d, err := cg.OpenDir()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		r := probe.Run(t, d, probe.Cmd{Op: "socket", Args: sockArgs(unix.AF_INET, unix.SOCK_DGRAM, 0)})
		if r.Setup != "" {
			t.Fatalf("probe could not attempt the operation: %v", r)
		}
		return r
	}
	if r := socket(ctl); r.Errno != 0 {
		t.Fatalf("control (unregistered, below the attach point): %v, want success", r)
	}
	if r := socket(in); !r.Denied() {
		t.Errorf("BYPASS: network=false below the attach point: %v, want EPERM", r)
	}
	if enf.LayerError(coverage.LayerLSM) == nil {
		t.Log("BPF LSM is in force here: it denies beside the attach point too")
		return
	}
	if r := socket(beside); r.Errno != 0 {
		t.Errorf("a cgroup beside the attach point is held by the cgroup-BPF programs: %v, want success", r)
	}
}
