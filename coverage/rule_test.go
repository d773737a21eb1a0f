package coverage

import (
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"
)

// TestCoverageOfRule: the one fail-closed decision, by host kind and
// ceiling: which gaps are missing (always refused), which partial
// (refused without the opt-in), and the mechanisms named.
func TestCoverageOfRule(t *testing.T) {
	noLSM, noCg := errors.New("no bpf lsm"), errors.New("no cgroup-bpf")
	host := func(abi int, seccomp bool) *ProcessLayer {
		h := HostMechanisms{LandlockABI: abi, MemfdNoexec: -1, IOURingDisabled: -1, LegacyTIOCSTI: -1}
		if abi == 0 {
			h.LandlockError = "built but not enabled (EOPNOTSUPP)"
		}
		if !seccomp {
			h.SeccompError = "seccomp actions missing: errno"
		}
		return &ProcessLayer{Host: h}
	}
	tcp, err := endpoint.Parse("tcp:10.0.0.1:443")
	if err != nil {
		t.Fatal(err)
	}
	k := func(net, write bool, shell policy.Shell) policy.KernelCeiling {
		return policy.KernelCeiling{Network: net, Write: write, Shell: shell}
	}
	cases := []struct {
		name           string
		en             Subject
		lsm, cg        error
		missing, parts []string
		mech           map[string][]string
	}{
		{name: "unrestricted", en: Subject{Ceiling: k(true, true, policy.ShellFull)}, lsm: noLSM, cg: noCg},
		{name: "bpf lsm: full", en: Subject{Ceiling: k(false, false, policy.ShellNone), Process: host(6, true)},
			mech: map[string][]string{"network": {MechBPFLSM, MechCgroupBPF}, "write": {MechBPFLSM}, "shell": {MechBPFLSM}, "tamper": {MechBPFLSM}}},
		{name: "container without bpf lsm", en: Subject{Ceiling: k(false, false, policy.ShellNone)}, lsm: noLSM,
			missing: []string{GapWrite, GapShell}, parts: []string{GapNetworkNonInet, GapTamper},
			mech: map[string][]string{"network": {MechCgroupBPF}}},
		{name: "run, abi 6", en: Subject{Ceiling: k(false, false, policy.ShellNone), Process: host(6, true)}, lsm: noLSM,
			parts: []string{GapNetworkUnix, GapWriteInheritedFDs, GapShellCodeMapping, GapTamper},
			mech: map[string][]string{"network": {MechSeccomp, MechCgroupBPF}, "write": {"landlock-abi6", MechSeccomp},
				"shell": {"landlock-abi6", MechSeccomp}, "tamper": {"no_new_privs"}}},
		{name: "run, abi 2: truncation", en: Subject{Ceiling: k(true, false, policy.ShellFull), Process: host(2, true)}, lsm: noLSM,
			parts: []string{GapWriteInheritedFDs, GapWriteTruncate, GapTamper},
			mech:  map[string][]string{"write": {"landlock-abi2", MechSeccomp}, "tamper": {"no_new_privs"}}},
		{name: "run, read_only with write=false", en: Subject{Ceiling: k(true, false, policy.ShellReadOnly), Process: host(6, true)}, lsm: noLSM,
			parts: []string{GapWriteInheritedFDs, GapTamper},
			mech: map[string][]string{"write": {"landlock-abi6", MechSeccomp}, "shell": {"landlock-abi6", MechSeccomp},
				"tamper": {"no_new_privs"}}},
		{name: "run, read_only with write allowed", en: Subject{Ceiling: k(true, true, policy.ShellReadOnly), Process: host(6, true)}, lsm: noLSM,
			parts: []string{GapShellReadOnly, GapTamper}, mech: map[string][]string{"tamper": {"no_new_privs"}}},
		{name: "run, no landlock", en: Subject{Ceiling: k(false, false, policy.ShellNone), Process: host(0, true)}, lsm: noLSM,
			missing: []string{GapWrite, GapShell}, parts: []string{GapNetworkUnix, GapTamper},
			mech: map[string][]string{"network": {MechSeccomp, MechCgroupBPF}, "tamper": {"no_new_privs"}}},
		{name: "run, no seccomp", en: Subject{Ceiling: k(false, false, policy.ShellFull), Process: host(6, false)}, lsm: noLSM,
			missing: []string{GapWrite}, parts: []string{GapNetworkNonInet, GapTamper},
			mech: map[string][]string{"network": {MechCgroupBPF}, "tamper": {"no_new_privs"}}},
		{name: "run, tcp endpoint", en: Subject{Ceiling: k(false, true, policy.ShellFull), AllowConnect: []endpoint.Endpoint{tcp}, Process: host(6, true)}, lsm: noLSM,
			parts: []string{GapNetworkUnix, GapNetworkEndpoints, GapTamper},
			mech:  map[string][]string{"network": {MechSeccomp, MechCgroupBPF, "landlock-abi6"}, "tamper": {"no_new_privs"}}},
		{name: "run, tcp endpoint without cgroup-bpf", en: Subject{Ceiling: k(false, true, policy.ShellFull), AllowConnect: []endpoint.Endpoint{tcp}, Process: host(6, true)}, lsm: noLSM, cg: noCg,
			missing: []string{GapNetwork}, parts: []string{GapTamper}, mech: map[string][]string{"tamper": {"no_new_privs"}}},
		{name: "run, no cgroup-bpf", en: Subject{Ceiling: k(false, true, policy.ShellFull), Process: host(6, true)}, lsm: noLSM, cg: noCg,
			parts: []string{GapNetworkUnix, GapTamper}, mech: map[string][]string{"network": {MechSeccomp}, "tamper": {"no_new_privs"}}},
		{name: "nothing", en: Subject{Ceiling: k(false, true, policy.ShellFull)}, lsm: noLSM, cg: noCg,
			missing: []string{GapNetwork}, parts: []string{GapTamper}},
	}
	codes := func(gs []Gap) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Code)
		}
		return out
	}
	for _, c := range cases {
		cov := Of(c.en, Layers{LSM: c.lsm, Cgroup: c.cg})
		if got := codes(cov.Missing); !reflect.DeepEqual(got, c.missing) {
			t.Errorf("%s: missing %v, want %v", c.name, got, c.missing)
		}
		if got := codes(cov.Partial); !reflect.DeepEqual(got, c.parts) {
			t.Errorf("%s: partial %v, want %v", c.name, got, c.parts)
		}
		mech := cov.Mechanisms
		if len(mech) == 0 {
			mech = nil
		}
		if !reflect.DeepEqual(mech, c.mech) {
			t.Errorf("%s: mechanisms %v, want %v", c.name, mech, c.mech)
		}
		// Err: missing always refuses, partial only without the opt-in.
		if (len(c.missing) > 0) != (cov.Err(false, true) != nil) {
			t.Errorf("%s: Err with allowPartial: %v", c.name, cov.Err(false, true))
		}
		if (len(c.missing)+len(c.parts) > 0) != (cov.Err(false, false) != nil) {
			t.Errorf("%s: Err without allowPartial: %v", c.name, cov.Err(false, false))
		}
		if cov.Err(true, false) != nil {
			t.Errorf("%s: audit-only refused", c.name)
		}
	}
}

// TestGapCodesAreUnique: every gap code names one gap.
func TestGapCodesAreUnique(t *testing.T) {
	all := []string{GapNetwork, GapNetworkNonInet, GapWrite, GapShell, GapTamper, GapNetworkEndpoints,
		GapNetworkUnix, GapWriteInheritedFDs, GapWriteTruncate, GapShellCodeMapping, GapShellReadOnly}
	sort.Strings(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Errorf("gap code %q defined twice", all[i])
		}
	}
}
