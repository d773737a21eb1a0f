package enforcer_test

// Kernel enforcement tests of the write and network ceilings. They need BPF
// LSM programs, so they run inside the scripts/vmtest guest (make vmtest
// KERNEL=6.12|6.1) and skip with the reason on hosts that refuse LSM
// programs. The harness (test/kerneltest) runs each case tri-state; the
// probes' operations are in ops_*_test.go.

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
)

// kt is this binary's harness: inside the VM it shares the boot's pins.
var kt = kerneltest.New(kerneltest.Config{Name: "enforcer-test"})

func TestMain(m *testing.M) { kt.Main(m) }

var (
	writeDeny   = policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
	networkDeny = policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	bothDeny    = policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}
)

// runCases runs cases under ceiling, each probe placed at at.
func runCases(t *testing.T, cases []kerneltest.Case, ceiling policy.KernelCeiling, at kerneltest.Where) {
	t.Helper()
	cs := append([]kerneltest.Case(nil), cases...)
	for i := range cs {
		cs[i].Ceiling, cs[i].At = ceiling, at
	}
	kt.Run(t, cs)
}

// pick returns copies of the named cases.
func pick(cases []kerneltest.Case, names ...string) []kerneltest.Case {
	var out []kerneltest.Case
	for _, n := range names {
		found := false
		for _, c := range cases {
			if c.Name == n {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			panic("no case " + n)
		}
	}
	return out
}

// privateEnforcer is the one prologue of the tests that load the programs
// into pins of their own (not the boot's shared ones): a cgroup of the
// test's own, /enforcerd-NAME-test-PID (the cgroup-BPF programs attach
// there, never at the host's root), and the programs pinned at
// /sys/fs/bpf/enforcerd-NAME-test-PID. Both go when the test ends (the
// programs uninstalled first). No cgroup2 skips the test; programs that
// cannot load skip it on a host and fail it in the VM.
func privateEnforcer(t *testing.T, name string) (enf *enforcer.Enforcer, mount string, own cgroup.Cgroup, pin string) {
	t.Helper()
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Skipf("no cgroup2: %v", err)
	}
	own, err = cgroup.Create(mount, fmt.Sprintf("/enforcerd-%s-test-%d", name, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Remove(5 * time.Second) })
	pin = fmt.Sprintf("/sys/fs/bpf/enforcerd-%s-test-%d", name, os.Getpid())
	enf, err = enforcer.Open(enforcer.Options{PinDir: pin, CgroupMount: mount, CgroupAttach: own.Path()})
	if err != nil {
		vmtest.Skip(t, fmt.Sprintf("cannot load programs here: %v", err))
	}
	t.Cleanup(func() { enf.Uninstall() })
	return enf, mount, own, pin
}

// requireCgroupLayer skips (host) or fails (VM) a test of enf's cgroup-BPF
// programs when they could not attach.
func requireCgroupLayer(t *testing.T, enf *enforcer.Enforcer) {
	t.Helper()
	if err := enf.LayerError(coverage.LayerCgroup); err != nil {
		vmtest.Skip(t, fmt.Sprintf("cgroup-BPF programs cannot attach here: %v", err))
	}
}
