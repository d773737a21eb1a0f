package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testdata = "../../test/vmtest/verdict/testdata/"

func TestReportExitStatus(t *testing.T) {
	pkgs := filepath.Join(t.TempDir(), "tests")
	if err := os.WriteFile(pkgs, []byte("enforcer\ndaemon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
		out  string // substring of stdout+stderr
	}{
		{[]string{"-qemu-status", "1", "-lsm", "bpf", "-kernel", "k", "-packages", pkgs, testdata + "pass.console"}, 0, "vmtest: PASS (16 tests in 2 packages on k)"},
		{[]string{"-qemu-status", "3", "-lsm", "bpf", "-packages", pkgs, testdata + "fail.console"}, 1, "vmtest: FAIL: enforcer: 2 test(s) failed"},
		{[]string{"-qemu-status", "124", "-timeout", "1200", "-lsm", "bpf", "-packages", pkgs, testdata + "pass.console"}, 1, "vmtest: FAIL: the VM timed out after 1200s"},
		// --run: the guest's status, the full one when the byte capped it.
		{[]string{"-mode", "run", "-qemu-status", "7", "-vm-seconds", "5", testdata + "pass.console"}, 3, "guest exited with status 3 (5s in the VM)"},
		{[]string{"-mode", "run", "-qemu-status", "255", testdata + "noverdict.console"}, 127, "guest exited with status 127"},
		{[]string{"-mode", "run", "-qemu-status", "0", testdata + "pass.console"}, 1, "the guest gave no verdict"},
		{[]string{testdata + "pass.console"}, 2, "want -qemu-status N"},
	} {
		var out bytes.Buffer
		if got := run(append([]string{"report"}, c.args...), &out, &out); got != c.want || !strings.Contains(out.String(), c.out) {
			t.Errorf("report %q: exit %d, want %d; output:\n%s", c.args, got, c.want, out.String())
		}
	}
}

func TestSelftestCommand(t *testing.T) {
	var out bytes.Buffer
	if got := run([]string{"selftest", "-status", "1", testdata + "selftest.console"}, &out, &out); got != 0 {
		t.Errorf("selftest over the recorded selftest run: exit %d\n%s", got, out.String())
	}
	out.Reset()
	if got := run([]string{"selftest", "-status", "1", testdata + "pass.console"}, &out, &out); got != 1 || !strings.Contains(out.String(), "vmtest: SELFTEST FAILED: ") {
		t.Errorf("selftest over a passing run: exit %d\n%s", got, out.String())
	}
}
