package check

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/oci/speccheck"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/coverage"
)

// TestCheckSpecRulesPrinted: the text report lists the coverage of a
// conforming container ("coverage of containers-spec") and the rules a
// container's spec must give per field, as speccheck exports them.
func TestCheckSpecRulesPrinted(t *testing.T) {
	r := CheckReport{Layers: map[string]checkLayer{}, Fields: map[string]checkField{},
		ContainerSpecRules: map[string][]string{"write": speccheck.WriteRules, "network": speccheck.NetworkRules},
		Coverage: map[string][]coverage.Field{"containers-spec": {{Field: "network", State: coverage.StatePartial,
			Mechanisms: []string{coverage.MechContainerSpec, coverage.MechCgroupBPF}, Gaps: []coverage.Gap{{Code: coverage.GapNetworkUnix, Field: "network", Detail: "d"}}}}}}
	var b bytes.Buffer
	printCheckReport(&b, r, false)
	out := b.String()
	for _, want := range []string{
		"coverage of containers-spec:",
		"network          partial  container-spec, cgroup-bpf",
		"gap network-unix: d",
		"write            " + strings.Join(speccheck.WriteRules, ", "),
		"network          " + strings.Join(speccheck.NetworkRules, ", "),
		speccheck.RulePIDNamespace,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report has no %q:\n%s", want, out)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"container_spec_rules":{"network":["network-namespace","pid-namespace",`) {
		t.Errorf("--json: no container_spec_rules with the network rules: %s", js)
	}
}

// TestNoBPFLSMCheckContainersSpec: `check --json` reports the coverage of
// a container whose spec gives every rule ("containers-spec") and the
// rules per field. Without BPF LSM the spec credits write and network
// (partial: write-inherited-fds, network-unix) where plain containers get
// none and network-non-inet; with it the two entries are the same.
func TestNoBPFLSMCheckContainersSpec(t *testing.T) {
	vmtest.RequireRoot(t)
	r := clitest.Run(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Layers             map[string]struct{ OK bool }
		Coverage           map[string][]coverage.Field
		ContainerSpecRules map[string][]string `json:"container_spec_rules"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("check --json: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if !slices.Equal(rep.ContainerSpecRules["write"], speccheck.WriteRules) || !slices.Equal(rep.ContainerSpecRules["network"], speccheck.NetworkRules) {
		t.Errorf("container_spec_rules %v, want write %v network %v", rep.ContainerSpecRules, speccheck.WriteRules, speccheck.NetworkRules)
	}
	spec, plain := rep.Coverage["containers-spec"], rep.Coverage["containers"]
	if len(spec) != len(plain) || len(spec) == 0 {
		t.Fatalf("containers-spec %v, containers %v", spec, plain)
	}
	row := func(fcs []coverage.Field, f string) coverage.Field {
		for _, fc := range fcs {
			if fc.Field == f {
				return fc
			}
		}
		t.Fatalf("no %s row in %v", f, fcs)
		return coverage.Field{}
	}
	codes := func(fc coverage.Field) []string {
		var out []string
		for _, g := range fc.Gaps {
			out = append(out, g.Code)
		}
		return out
	}
	if rep.Layers["bpf-lsm"].OK {
		for i := range spec {
			if spec[i].Field != plain[i].Field || spec[i].State != plain[i].State || !slices.Equal(spec[i].Mechanisms, plain[i].Mechanisms) {
				t.Errorf("BPF LSM: containers-spec %+v differs from containers %+v", spec[i], plain[i])
			}
		}
		return
	}
	for f, want := range map[string]string{"network": coverage.GapNetworkUnix, "write": coverage.GapWriteInheritedFDs} {
		fc := row(spec, f)
		if fc.State != coverage.StatePartial || !slices.Equal(codes(fc), []string{want}) || !slices.Contains(fc.Mechanisms, coverage.MechContainerSpec) {
			t.Errorf("no BPF LSM: containers-spec %s: %+v, want partial by container-spec with gap %s", f, fc, want)
		}
	}
	if fc := row(spec, "shell=none"); fc.State != coverage.StateNone {
		t.Errorf("no BPF LSM: containers-spec shell=none: %+v, want none (no spec element limits exec)", fc)
	}
}
