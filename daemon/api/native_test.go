package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/testroot"
)

// TestThousandContainersRealMap runs the load test against the real pinned
// BPF ceiling map and real cgroups. Maps and cgroup-BPF load natively on
// these hosts; network-only ceilings need no BPF LSM. The cgroup-BPF
// programs attach at the test's own cgroup, never at the host's root.
func TestThousandContainersRealMap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	testroot.Require(t, "BPF maps, cgroups")
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skip(err)
	}
	// Every cgroup of the test, and the attach point of the cgroup-BPF
	// programs, is below base: nothing outside it is held.
	base := fmt.Sprintf("/enforcerd-apitest-%d", os.Getpid())
	top, err := cgroup.Create(mount, base)
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]string, 1000)
	t.Cleanup(func() {
		for _, g := range groups {
			if g != "" {
				os.Remove(filepath.Join(mount, g))
			}
		}
		os.Remove(top.Path())
	})
	pin := fmt.Sprintf("/sys/fs/bpf/enforcerd-apitest-%d", os.Getpid())
	enf, err := enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: top.Path()})
	if err != nil {
		t.Skipf("enforcer: %v", err)
	}
	t.Cleanup(func() { enf.Uninstall() })
	if cov := enf.Coverage(policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}); len(cov.Missing) > 0 {
		t.Skipf("network=false not enforceable here: %v", cov.Missing)
	}
	for i := range groups {
		groups[i] = fmt.Sprintf("%s/c%d", base, i)
		if _, err := cgroup.Create(mount, groups[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Without BPF LSM network=false is enforced in part (inet sockets).
	ts := start(t, enf, registry.SystemCgroups{Mount: mount}, func(o *registry.Options) { o.AllowPartial = true })
	self, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ts.setCaller(self)
	mapLen := func() int {
		regs, err := enf.List()
		if err != nil {
			t.Fatal(err)
		}
		return len(regs)
	}
	concurrently(t, ts, groups, "network=false", mapLen)
}
