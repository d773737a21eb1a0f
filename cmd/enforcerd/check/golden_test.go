package check

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/coverage"
)

var updateGolden = flag.Bool("update-golden", false, "write the check --json coverage golden file of this host")

// goldenField is the structure of one coverage row of `check --json`:
// state, mechanisms and gap codes (details carry error text that varies).
type goldenField struct {
	Field      string   `json:"field"`
	State      string   `json:"state"`
	Mechanisms []string `json:"mechanisms"`
	Gaps       []string `json:"gaps"`
}

// goldenName names the golden file of a host: testdata/check-coverage/
// bpf-lsm.json with the BPF LSM layer, else
// no-bpf-lsm-landlock-abiN.json.
func goldenName(lsm bool, abi int) string {
	if lsm {
		return "bpf-lsm.json"
	}
	return fmt.Sprintf("no-bpf-lsm-landlock-abi%d.json", abi)
}

// TestNoBPFLSMCheckCoverageGolden: the coverage `check --json` reports per
// entry (run, containers) and field (network, write, shell=none,
// shell=read_only, tamper), by structure (state, mechanisms, gap codes),
// equals the golden file of this kind of host: with BPF LSM; without it at
// Landlock ABI 2 (vmtest 6.1), 6 (vmtest 6.12), 7 (a development host).
// A host of another kind has no golden file: the test fails in the VM and
// is skipped elsewhere (-update-golden writes it).
func TestNoBPFLSMCheckCoverageGolden(t *testing.T) {
	vmtest.RequireRoot(t)
	r := clitest.Run(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Layers   map[string]struct{ OK bool }
		Host     coverage.HostMechanisms
		Coverage map[string][]coverage.Field
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("check --json: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	got := map[string][]goldenField{}
	for entry, fcs := range rep.Coverage {
		for _, fc := range fcs {
			g := goldenField{Field: fc.Field, State: fc.State, Mechanisms: fc.Mechanisms, Gaps: []string{}}
			if g.Mechanisms == nil {
				g.Mechanisms = []string{}
			}
			for _, gap := range fc.Gaps {
				g.Gaps = append(g.Gaps, gap.Code)
			}
			sort.Strings(g.Gaps)
			got[entry] = append(got[entry], g)
		}
	}
	b, _ := json.MarshalIndent(got, "", "  ")
	b = append(b, '\n')
	name := filepath.Join("testdata", "check-coverage", goldenName(rep.Layers["bpf-lsm"].OK, rep.Host.LandlockABI))
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantb, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		vmtest.Skip(t, fmt.Sprintf("no golden file %s for this host; its coverage:\n%s", name, b))
	}
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]goldenField
	if err := json.Unmarshal(wantb, &want); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("check --json coverage differs from %s:\ngot:\n%s\nwant:\n%s", name, b, wantb)
	}
	if vmtest.NoBPFLSM() && rep.Layers["bpf-lsm"].OK {
		t.Errorf("boot without bpf in lsm=, yet the bpf-lsm layer is ok")
	}
}
