package check

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// TestNoBPFLSMCheckReportsWrite: `enforcerd check` says whether write is
// enforceable and, when not, why; it exits non-zero when any field is not.
func TestNoBPFLSMCheckReportsWrite(t *testing.T) {
	vmtest.RequireRoot(t)
	r := clitest.Run(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Fields map[string]struct {
			Enforceable bool
			By, Detail  string
		}
		BPFLSMActive bool `json:"bpf_lsm_active"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("check --json: exit %d, %v\nstdout: %s\nstderr: %s", r.Code, err, r.Stdout, r.Stderr)
	}
	w, ok := rep.Fields["write"]
	if !ok {
		t.Fatalf("check --json has no write field: %s", r.Stdout)
	}
	lsmWorks := vmtest.InVM() && !vmtest.NoBPFLSM()
	if lsmWorks {
		if !w.Enforceable {
			t.Errorf("with BPF LSM: write not enforceable: %s", w.Detail)
		}
		return
	}
	if w.Enforceable {
		if vmtest.NoBPFLSM() {
			t.Fatalf("without bpf in lsm=: check says write is enforceable (%s)", w.By)
		}
		return // a host where BPF LSM works
	}
	if r.Code == 0 {
		t.Errorf("write not enforceable but check exited 0")
	}
	if w.Detail == "" {
		t.Errorf("write not enforceable, and check does not say why")
	}
	if vmtest.NoBPFLSM() && (rep.BPFLSMActive || !strings.Contains(w.Detail, "bpf")) {
		t.Errorf(`without bpf in lsm=: want bpf_lsm_active=false and a reason naming "bpf", got %v, %q`, rep.BPFLSMActive, w.Detail)
	}
	human := clitest.Run(t, nil, "check", "--pin-dir", testPinDir)
	if !strings.Contains(human.Stdout, "write:") || !strings.Contains(human.Stdout, "NOT enforceable") {
		t.Errorf("check's report does not say write is NOT enforceable:\n%s", human.Stdout)
	}
	t.Logf("write: %s (exit %s)", w.Detail, strconv.Itoa(r.Code))
}
