package coverage

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/policy"
)

// TestCoverageOfSpecLayer: what a container's spec layer credits on a
// host without BPF LSM, and that it changes nothing with BPF LSM.
func TestCoverageOfSpecLayer(t *testing.T) {
	noLSM, noCg := errors.New("no bpf lsm"), errors.New("no cgroup-bpf")
	k := func(net, write bool, shell policy.Shell) policy.KernelCeiling {
		return policy.KernelCeiling{Network: net, Write: write, Shell: shell}
	}
	both := &SpecLayer{Write: true, Network: true}
	none := &SpecLayer{WriteMissing: "root-readonly: root.readonly is not true", NetworkMissing: "seccomp: linux.seccomp is absent"}
	cases := []struct {
		name           string
		en             Subject
		lsm, cg        error
		missing, parts []string
		mech           map[string][]string
		detail         string // in some gap's detail
	}{
		{"bpf lsm: spec ignored", Subject{Ceiling: k(false, false, policy.ShellFull), Spec: none}, nil, nil, nil, nil,
			map[string][]string{"network": {MechBPFLSM, MechCgroupBPF}, "write": {MechBPFLSM}, "tamper": {MechBPFLSM}}, ""},
		{"write by spec", Subject{Ceiling: k(true, false, policy.ShellFull), Spec: both}, noLSM, nil, nil,
			[]string{GapWriteInheritedFDs, GapTamper}, map[string][]string{"write": {MechContainerSpec}}, "read-only"},
		{"write not by spec", Subject{Ceiling: k(true, false, policy.ShellFull), Spec: none}, noLSM, nil,
			[]string{GapWrite}, []string{GapTamper}, map[string][]string{}, "root-readonly: root.readonly is not true"},
		{"write without a spec layer", Subject{Ceiling: k(true, false, policy.ShellFull)}, noLSM, nil,
			[]string{GapWrite}, []string{GapTamper}, map[string][]string{}, ""},
		{"network by spec and cgroup-bpf", Subject{Ceiling: k(false, true, policy.ShellFull), Spec: both}, noLSM, nil, nil,
			[]string{GapNetworkUnix, GapTamper}, map[string][]string{"network": {MechContainerSpec, MechCgroupBPF}}, "AF_UNIX"},
		{"network by spec alone", Subject{Ceiling: k(false, true, policy.ShellFull), Spec: both}, noLSM, noCg, nil,
			[]string{GapNetworkUnix, GapTamper}, map[string][]string{"network": {MechContainerSpec}}, ""},
		{"network not by spec: cgroup-bpf as before", Subject{Ceiling: k(false, true, policy.ShellFull), Spec: none}, noLSM, nil, nil,
			[]string{GapNetworkNonInet, GapTamper}, map[string][]string{"network": {MechCgroupBPF}}, "seccomp: linux.seccomp is absent"},
		{"network not by spec, no cgroup-bpf", Subject{Ceiling: k(false, true, policy.ShellFull), Spec: none}, noLSM, noCg,
			[]string{GapNetwork}, []string{GapTamper}, map[string][]string{}, "seccomp: linux.seccomp is absent"},
		{"read_only under a read-only container", Subject{Ceiling: k(true, false, policy.ShellReadOnly), Spec: both}, noLSM, nil, nil,
			[]string{GapWriteInheritedFDs, GapTamper}, map[string][]string{"write": {MechContainerSpec}, "shell": {MechContainerSpec}}, ""},
		{"read_only with a writable mount", Subject{Ceiling: k(true, false, policy.ShellReadOnly), Spec: &SpecLayer{Write: true, WritableMounts: []string{"/work"}}}, noLSM, nil,
			[]string{GapShell}, []string{GapWriteInheritedFDs, GapTamper}, map[string][]string{"write": {MechContainerSpec}}, "/work"},
		{"read_only with write allowed", Subject{Ceiling: k(true, true, policy.ShellReadOnly), Spec: both}, noLSM, nil,
			[]string{GapShell}, []string{GapTamper}, map[string][]string{}, ""},
		{"shell=none: nothing from a spec", Subject{Ceiling: k(true, false, policy.ShellNone), Spec: both}, noLSM, nil,
			[]string{GapShell}, []string{GapWriteInheritedFDs, GapTamper}, map[string][]string{"write": {MechContainerSpec}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cov := Of(tc.en, Layers{LSM: tc.lsm, Cgroup: tc.cg})
			codes := func(gs []Gap) []string {
				var out []string
				for _, g := range gs {
					out = append(out, g.Code)
				}
				return out
			}
			if got := codes(cov.Missing); !reflect.DeepEqual(got, tc.missing) {
				t.Errorf("missing %v, want %v", got, tc.missing)
			}
			if got := codes(cov.Partial); !reflect.DeepEqual(got, tc.parts) {
				t.Errorf("partial %v, want %v", got, tc.parts)
			}
			if !reflect.DeepEqual(cov.Mechanisms, tc.mech) {
				t.Errorf("mechanisms %v, want %v", cov.Mechanisms, tc.mech)
			}
			if tc.detail != "" {
				found := false
				for _, g := range cov.Gaps() {
					found = found || strings.Contains(g.Detail, tc.detail)
				}
				if !found {
					t.Errorf("no gap detail has %q: %v", tc.detail, cov.Gaps())
				}
			}
			// A spec-credited write=false is never refused as missing.
			if tc.en.Spec != nil && tc.en.Spec.Write && !tc.en.Ceiling.Write && containsGap(cov.Missing, GapWrite) {
				t.Errorf("write credited but missing")
			}
		})
	}
}
