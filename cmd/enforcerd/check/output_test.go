package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/api"
)

// failedLSMReport is the report of a host whose BPF LSM programs all fail
// to load for one reason (EPERM on every hook), the reason repeated in
// each field's detail and gap, as the coverage rule writes them.
func failedLSMReport() CheckReport {
	const eperm = "load program: operation not permitted (lockdown=confidentiality, or MEMLOCK too low: check dmesg)"
	lsmErr := "bpf-lsm: " + eperm
	gap := func(code, field string) coverage.Gap {
		return coverage.Gap{Code: code, Field: field, Detail: "needs the BPF LSM layer: " + lsmErr}
	}
	r := CheckReport{Kernel: "6.12.0", Cgroup2: "/sys/fs/cgroup", BTF: true, ActiveLSMs: []string{"lockdown", "capability", "bpf"}, BPFLSMActive: true,
		Layers: map[string]checkLayer{"bpf-lsm": {Error: lsmErr}, "cgroup-bpf": {OK: true}, "lifecycle": {OK: true}},
		Fields: map[string]checkField{
			"network": {By: "cgroup-bpf socket hooks", Detail: "enforced only in part", Unenforced: []coverage.Gap{gap(coverage.GapNetworkNonInet, "network")}},
			"write":   {Detail: gap("write", "write").Detail},
			"shell":   {Detail: gap("shell", "shell").Detail},
		},
		Host:               coverage.HostMechanisms{LandlockABI: 6, SeccompActions: []string{"kill_process", "errno"}, MemfdNoexec: 0, IOURingDisabled: 0, LegacyTIOCSTI: -1},
		Coverage:           map[string][]coverage.Field{"containers": {{Field: "write", State: coverage.StateNone, Gaps: []coverage.Gap{gap("write", "write"), gap(coverage.GapTamper, "tamper")}}}},
		ContainerSpecRules: map[string][]string{"write": {"readonly-rootfs"}, "network": nil},
		LeftBehind:         "nothing",
	}
	for i := range 73 {
		r.Hooks = append(r.Hooks, api.HookStatus{Program: fmt.Sprintf("lsm_%02d", i), Hook: fmt.Sprintf("hook_%02d", i), Layer: "bpf-lsm", Error: eperm})
	}
	r.Hooks = append(r.Hooks, api.HookStatus{Program: "connect4", Hook: "cgroup/connect4", Layer: "cgroup-bpf", Attached: true},
		api.HookStatus{Program: "exec_tp", Hook: "sched_process_exec", Layer: "lifecycle", Attached: true})
	return r
}

// goldenText compares got with testdata/name (-update-golden writes it).
func goldenText(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update-golden writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update-golden rewrites it):\n%s", p, got)
	}
}

// TestCheckTextGolden: with the BPF LSM layer failing for one reason, the
// text report prints the reason once (the layer line), the hooks as one
// line with their count, and refers to it in each detail; --verbose adds
// the per-hook table.
func TestCheckTextGolden(t *testing.T) {
	for name, verbose := range map[string]bool{"check-failed-lsm.golden": false, "check-failed-lsm-verbose.golden": true} {
		var b bytes.Buffer
		printCheckReport(&b, failedLSMReport(), verbose)
		goldenText(t, name, b.String())
		if n := bytes.Count(b.Bytes(), []byte("operation not permitted")); n != 1+73*btoi(verbose) {
			t.Errorf("%s: the reason is printed %d times", name, n)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCheckJSONShape: in check --json every field has the same keys
// (unenforced a list, also when empty), every coverage row the same keys
// (mechanisms and gaps lists), and no list is null.
func TestCheckJSONShape(t *testing.T) {
	r := failedLSMReport()
	r.Hooks, r.ActiveLSMs = nil, nil
	b, err := json.MarshalIndent(jsonShape(r), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("null")) {
		t.Errorf("check --json has a null:\n%s", b)
	}
	var got struct {
		Fields   map[string]map[string]json.RawMessage
		Coverage map[string][]map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		sort.Strings(k)
		return k
	}
	for name, f := range got.Fields {
		if want := []string{"by", "detail", "enforceable", "unenforced"}; !reflect.DeepEqual(keys(f), want) || f["unenforced"][0] != '[' {
			t.Errorf("fields.%s: keys %v, unenforced %s", name, keys(f), f["unenforced"])
		}
	}
	for _, row := range got.Coverage["containers"] {
		if want := []string{"by", "field", "gaps", "mechanisms", "state"}; !reflect.DeepEqual(keys(row), want) {
			t.Errorf("coverage row keys %v, want %v", keys(row), want)
		}
	}
	goldenText(t, "check-failed-lsm.json.golden", string(b)+"\n")
}
