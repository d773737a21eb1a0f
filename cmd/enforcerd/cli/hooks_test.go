package cli

import (
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
)

// An optional program is "not on this kernel" only when the kernel lacks
// its hook; one that failed to attach for another reason is counted under
// that reason, so a layer refused whole reads as one reason.
func TestGroupHooksOptional(t *testing.T) {
	const eperm = "operation not permitted"
	lsm := string(coverage.LayerLSM)
	cases := []struct {
		name  string
		hooks []api.HookStatus
		want  string
	}{
		{"refused whole", []api.HookStatus{
			{Layer: lsm, Hook: "file_open", Error: eperm},
			{Layer: lsm, Hook: "file_truncate", Optional: true, Error: eperm},
		}, "bpf-lsm: 0/2 hooks attached: " + eperm},
		{"absent optional", []api.HookStatus{
			{Layer: lsm, Hook: "file_open", Attached: true},
			{Layer: lsm, Hook: "file_truncate", Optional: true, Error: coverage.ErrHookNotInKernel},
		}, "bpf-lsm: 1/2 hooks attached (1 optional not on this kernel)"},
		{"both", []api.HookStatus{
			{Layer: lsm, Hook: "file_open", Error: eperm},
			{Layer: lsm, Hook: "file_ioctl_compat", Optional: true, Error: eperm},
			{Layer: lsm, Hook: "file_truncate", Optional: true, Error: coverage.ErrHookNotInKernel},
		}, "bpf-lsm: 0/3 hooks attached; 2 not: " + eperm + " (1 optional not on this kernel)"},
	}
	for _, c := range cases {
		g := GroupHooks(c.hooks)
		if len(g) != 1 {
			t.Fatalf("%s: %d layers, want 1", c.name, len(g))
		}
		if got := g[0].String(); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
