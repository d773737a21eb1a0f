package registry

import (
	"errors"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/policy"
)

// TestSpecMountsInRoots: a spec-credited write=false holds only while
// every read-write mount it allowed is beneath an effective writable root.
func TestSpecMountsInRoots(t *testing.T) {
	credited := coverage.Coverage{Mechanisms: map[string][]string{"write": {coverage.MechContainerSpec}}}
	byLSM := coverage.Coverage{Mechanisms: map[string][]string{"write": {coverage.MechBPFLSM}}}
	wf := policy.KernelCeiling{Network: true, Write: false, Shell: policy.ShellFull}
	roots := func(ps ...string) []state.WriteRoot {
		var out []state.WriteRoot
		for _, p := range ps {
			out = append(out, state.WriteRoot{Path: p})
		}
		return out
	}
	spec := &coverage.SpecLayer{Write: true, WritableMounts: []string{"/work/out"}}
	cases := []struct {
		name string
		c    state.Container
		cov  coverage.Coverage
		ok   bool
	}{
		{"beneath a root", state.Container{Kernel: wf, Spec: spec, WriteRoots: roots("/work")}, credited, true},
		{"the root itself", state.Container{Kernel: wf, Spec: spec, WriteRoots: roots("/work/out/")}, credited, true},
		{"roots narrowed by a parent", state.Container{Kernel: wf, Spec: spec, WriteRoots: roots("/work/out/sub")}, credited, false},
		{"no roots left", state.Container{Kernel: wf, Spec: spec}, credited, false},
		{"beside a root", state.Container{Kernel: wf, Spec: spec, WriteRoots: roots("/work/o")}, credited, false},
		{"bpf lsm: the spec is not relied on", state.Container{Kernel: wf, Spec: spec}, byLSM, true},
		{"no spec layer", state.Container{Kernel: wf}, credited, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := specMountsInRoots(tc.c, tc.cov)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %t", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrCannotEnforce) {
				t.Fatalf("err = %v, want ErrCannotEnforce", err)
			}
		})
	}
}
