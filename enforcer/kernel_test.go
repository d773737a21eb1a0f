package enforcer_test

// Kernel enforcement tests of the write and network ceilings. They need BPF
// LSM programs, so they run inside the scripts/vmtest guest (make vmtest
// KERNEL=6.12|6.1) and skip with the reason on hosts that refuse LSM
// programs. The harness (internal/testing/kerneltest) runs each case tri-state; the
// probes' operations are in ops_*_test.go.

import (
	"testing"

	"github.com/enforcerd/enforcerd/internal/testing/kerneltest"
	"github.com/enforcerd/enforcerd/policy"
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
