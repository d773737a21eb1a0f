package verdict

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "re-record testdata/*.console from testdata/sample and scripts/vmtest-guest/selftest")

// sample is a recorded console log and what the harness must make of it.
type sample struct {
	file       string
	qemuStatus int
	bpf        bool
	expected   []string
	// want: the table's rows ("name passed failed skipped status") and
	// whether the run passes.
	rows []string
	ok   bool
	// problems that must be among the report's (substrings).
	problems []string
	warning  bool
}

var samples = []sample{
	{
		file: "pass.console", qemuStatus: 1, bpf: true, expected: []string{"enforcer", "daemon"},
		rows: []string{"enforcer 8 0 0 ok", "daemon 8 0 0 ok"}, ok: true,
	},
	{
		file: "fail.console", qemuStatus: 3, bpf: true, expected: []string{"enforcer", "daemon"},
		rows: []string{"enforcer 6 2 0 exit 1", "daemon 8 0 0 ok"},
		problems: []string{
			"guest verdict 1: a test binary exited non-zero",
			"enforcer: 2 test(s) failed: TestSubtests/second TestSubtests",
			"enforcer: test binary exit status 1",
		},
	},
	{
		file: "skip.console", qemuStatus: 1, bpf: true, expected: []string{"enforcer"},
		rows:     []string{"enforcer 7 0 1 ok"},
		problems: []string{"enforcer: 1 test(s) skipped (a skip inside the VM is a failure): TestMaySkip"},
	},
	{
		file: "panic.console", qemuStatus: 3, bpf: true, expected: []string{"enforcer"},
		rows: []string{"enforcer 2 2 0 exit 2"},
		problems: []string{
			"enforcer: 2 test(s) failed: TestSubtests/second TestSubtests (did not finish)",
			"enforcer: test binary panicked",
			"enforcer: test binary exit status 2",
		},
	},
	{
		file: "timeout.console", qemuStatus: 3, bpf: true, expected: []string{"enforcer"},
		rows: []string{"enforcer 6 1 0 exit 2"},
		problems: []string{
			"enforcer: 1 test(s) failed: TestMayHang (did not finish)",
			"enforcer: test binary panicked",
		},
	},
	{
		file: "noverdict.console", qemuStatus: 0, bpf: true, expected: []string{"enforcer", "daemon", "oci"},
		rows: []string{"enforcer 8 0 0 ok", "daemon 1 1 0 crashed"},
		problems: []string{
			"no verdict from the guest",
			"daemon: 1 test(s) failed: TestSubtests (did not finish)",
			"daemon: test binary did not finish (no end marker)",
			"only 2 of 3 test packages started in the guest; never started: oci",
		},
	},
	{
		file: "nobpf.console", qemuStatus: 1, expected: []string{"enforcer", "daemon"},
		rows: []string{"enforcer 1 0 0 ok", "daemon 0 0 0 ok"}, ok: true,
	},
	{
		file: "nobpf-none.console", qemuStatus: 1, expected: []string{"enforcer"},
		rows: []string{"enforcer 0 0 0 ok"}, ok: true, warning: true,
	},
	{
		file: "nobpf-none.console", qemuStatus: 1, bpf: true, expected: []string{"enforcer"},
		rows:     []string{"enforcer 0 0 0 ok"},
		problems: []string{"no test passed: the test binaries ran no tests"},
	},
}

func convert(t *testing.T) func(Section) ([]Event, error) {
	return func(s Section) ([]Event, error) {
		return Convert(context.Background(), nil, s.Package, s.Output)
	}
}

func decideSample(t *testing.T, s sample) Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", s.file))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConsole(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	run := Run{Exit: DecodeExit(s.qemuStatus, 60), BPF: s.bpf, Expected: s.expected}
	for _, sec := range c.Sections {
		evs, err := convert(t)(sec)
		if err != nil {
			t.Fatal(err)
		}
		run.Packages = append(run.Packages, Summarize(sec, evs))
	}
	return Decide(run)
}

func TestRecordedSamples(t *testing.T) {
	for _, s := range samples {
		t.Run(fmt.Sprintf("%s/bpf=%v", s.file, s.bpf), func(t *testing.T) {
			r := decideSample(t, s)
			var rows []string
			for _, p := range r.Packages {
				rows = append(rows, fmt.Sprintf("%s %d %d %d %s", p.Name, p.Passed, p.Failed, p.Skipped, p.StatusText()))
			}
			if !slices.Equal(rows, s.rows) {
				t.Errorf("rows:\n got %q\nwant %q", rows, s.rows)
			}
			if r.OK() != s.ok {
				t.Errorf("OK() = %v, want %v (problems %q)", r.OK(), s.ok, r.Problems)
			}
			for _, want := range s.problems {
				if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
					t.Errorf("no problem %q among %q", want, r.Problems)
				}
			}
			if r.NoTestsWarning != s.warning {
				t.Errorf("NoTestsWarning = %v, want %v", r.NoTestsWarning, s.warning)
			}
		})
	}
}

// TestEveryFailureFailsTheRun: a run that any sample's single fault touches
// never passes, whatever else went right.
func TestEveryFailureFailsTheRun(t *testing.T) {
	good := Package{Name: "p", Passed: 3, PassedTests: []string{"A", "B", "C"}, Ended: true}
	base := Run{Exit: Exit{HasVerdict: true}, BPF: true, Expected: []string{"p"}, Packages: []Package{good}}
	if r := Decide(base); !r.OK() {
		t.Fatalf("the good run fails: %q", r.Problems)
	}
	faults := map[string]func(*Run){
		"no verdict":         func(r *Run) { r.Exit = Exit{Problem: "x"} },
		"guest verdict 1":    func(r *Run) { r.Exit.Verdict = 1 },
		"guest verdict 4":    func(r *Run) { r.Exit.Verdict = 4 },
		"unknown verdict":    func(r *Run) { r.Exit.Verdict = 77 },
		"failed test":        func(r *Run) { r.Packages[0].Failed = 1 },
		"skipped test":       func(r *Run) { r.Packages[0].Skipped = 1 },
		"panic":              func(r *Run) { r.Packages[0].Panicked = true },
		"exit status":        func(r *Run) { r.Packages[0].Status = 1 },
		"no end marker":      func(r *Run) { r.Packages[0].Ended = false },
		"missing package":    func(r *Run) { r.Expected = append(r.Expected, "q") },
		"no package at all":  func(r *Run) { r.Packages = nil },
		"no test passed":     func(r *Run) { r.Packages[0].Passed = 0 },
		"status with passes": func(r *Run) { r.Packages[0].Status = 2 },
	}
	for name, f := range faults {
		run := base
		run.Packages = slices.Clone(base.Packages)
		f(&run)
		if r := Decide(run); r.OK() {
			t.Errorf("%s: the run passed", name)
		}
	}
}

func TestDecodeExit(t *testing.T) {
	for _, c := range []struct {
		status  int
		verdict int
		has     bool
		problem string
	}{
		{1, 0, true, ""},
		{3, 1, true, ""},
		{9, 4, true, ""},
		{255, 127, true, ""},
		{0, 0, false, "no verdict"},
		{124, 0, false, "timed out after 60s"},
		{137, 0, false, "timed out"},
		{2, 0, false, "QEMU itself failed (exit status 2)"},
	} {
		e := DecodeExit(c.status, 60)
		if e.HasVerdict != c.has || e.Verdict != c.verdict || !strings.Contains(e.Problem, c.problem) {
			t.Errorf("DecodeExit(%d) = %+v", c.status, e)
		}
	}
}

func TestParseConsoleEndMarkerAfterPartialLine(t *testing.T) {
	log := "boot\r\n=== VMTEST BEGIN a\r\nx\r\ntail=== VMTEST END a status=3\r\n=== VMTEST BEGIN b\r\n" +
		"=== VMTEST BEGIN c\r\nyy\r\n=== VMTEST END b status=0\r\nVMTEST-VERDICT 200\r\n"
	c, err := ParseConsole(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []Section{
		{Package: "a", Output: []byte("x\ntail\n"), Ended: true, Status: 3},
		{Package: "b", Output: []byte{}},
		// An end marker naming another package does not end c.
		{Package: "c", Output: []byte("yy\n")},
	}
	if len(c.Sections) != len(want) {
		t.Fatalf("sections %+v", c.Sections)
	}
	for i, w := range want {
		g := c.Sections[i]
		if g.Package != w.Package || !bytes.Equal(g.Output, w.Output) || g.Ended != w.Ended || g.Status != w.Status {
			t.Errorf("section %d = %+v %q, want %+v %q", i, g, g.Output, w, w.Output)
		}
	}
	if c.GuestStatus != 200 {
		t.Errorf("GuestStatus = %d", c.GuestStatus)
	}
}

func TestPrintPass(t *testing.T) {
	r := decideSample(t, samples[0])
	var b bytes.Buffer
	r.Print(&b, Header{Kernel: "6.12.117+deb12-amd64", LSM: "lockdown,capability,landlock,yama,bpf", TotalSeconds: 300, VMSeconds: 250})
	want := `
vmtest: summary (kernel 6.12.117+deb12-amd64, lsm=lockdown,capability,landlock,yama,bpf)
  PACKAGE                                      PASSED FAILED SKIPPED  STATUS
  enforcer                                          8      0      0  ok
  daemon                                            8      0      0  ok
  TOTAL (2 packages)                               16      0      0
  wall time: 300s total, 250s in the VM
vmtest: PASS (16 tests in 2 packages on 6.12.117+deb12-amd64)
vmtest: 16 passed, 0 failed
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestPrintWarningAndFail(t *testing.T) {
	var b bytes.Buffer
	decideSample(t, samples[len(samples)-2]).Print(&b, Header{Kernel: "k", LSM: "yama"})
	if !strings.Contains(b.String(), "vmtest: WARNING: no TestNoBPFLSM... test ran") || !strings.Contains(b.String(), "vmtest: PASS (0 tests in 1 packages on k)") {
		t.Errorf("no-BPF-LSM boot without tests:\n%s", b.String())
	}
	b.Reset()
	decideSample(t, samples[1]).Print(&b, Header{Kernel: "k", LSM: "bpf"})
	if !strings.Contains(b.String(), "\nvmtest: FAIL: enforcer: 2 test(s) failed: TestSubtests/second TestSubtests\n") || strings.Contains(b.String(), "vmtest: PASS") {
		t.Errorf("failing run:\n%s", b.String())
	}
	// What the failed leaf test printed comes before the FAIL lines; its
	// parent, whose own output is only headers, is not repeated.
	out := b.String()
	i := strings.Index(out, "vmtest: output of failed test enforcer TestSubtests/second ")
	j := strings.Index(out, "    sample_test.go:23: deliberate failure\n")
	k := strings.Index(out, "vmtest: FAIL:")
	if i < 0 || j < i || k < j || strings.Contains(out, "output of failed test enforcer TestSubtests ") {
		t.Errorf("failure output missing, misplaced or repeated for the parent:\n%s", out)
	}
}

func TestCheckSelftest(t *testing.T) {
	b, err := os.ReadFile("testdata/selftest.console")
	if err != nil {
		t.Fatal(err)
	}
	if p := CheckSelftest(b, 1, convert(t)); len(p) != 0 {
		t.Errorf("recorded selftest run: %q", p)
	}
	if p := CheckSelftest(b, 0, convert(t)); !slices.Contains(p, "scripts/vmtest exited 0 on a failing guest") {
		t.Errorf("exit 0 accepted: %q", p)
	}
	// A harness that stops naming the failed test, or a guest whose
	// selftest tests all pass, fails the selftest.
	renamed := bytes.ReplaceAll(b, []byte("vmtest: FAIL: selftest: 1 test(s) failed"), []byte("vmtest: FAIL: selftest: something"))
	if p := CheckSelftest(renamed, 1, convert(t)); len(p) == 0 {
		t.Error("a report that does not name the failed test passed the selftest")
	}
	pass, err := os.ReadFile("testdata/pass.console")
	if err != nil {
		t.Fatal(err)
	}
	if p := CheckSelftest(pass, 1, convert(t)); len(p) < 3 {
		t.Errorf("a guest without the selftest package: %q", p)
	}
}

// TestRecordSamples re-records testdata/*.console (go test -run
// TestRecordSamples -update): it builds testdata/sample and the vmtest
// selftest package as test binaries, runs them as the guest's /init does
// (-test.v=test2json, output and stderr together) and wraps their output in
// the guest's markers and console line endings.
func TestRecordSamples(t *testing.T) {
	if !*update {
		t.Skip("re-records the samples with -update")
	}
	dir := t.TempDir()
	build := func(srcDir, out string) string {
		bin := filepath.Join(dir, out)
		cmd := exec.Command("go", "test", "-c", "-o", bin, ".")
		cmd.Dir = srcDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", srcDir, err, b)
		}
		return bin
	}
	sampleBin := build("testdata/sample", "sample.test")
	selftestBin := build("../../../scripts/vmtest-guest/selftest", "selftest.test")

	// binary runs bin like /init does and returns the section text.
	binary := func(pkg, bin string, env []string, args ...string) string {
		cmd := exec.Command(bin, append([]string{"-test.v=test2json", "-test.count=1"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.CombinedOutput()
		status := cmd.ProcessState.ExitCode()
		return fmt.Sprintf("=== VMTEST BEGIN %s\n%s\n=== VMTEST END %s status=%d\n", pkg, strings.TrimSuffix(string(out), "\n"), pkg, status)
	}
	boot := "SeaBIOS (version 1.16.2-debian-1.16.2-1)\nBooting from ROM..vmtest-init: cgroup controllers cpu io memory pids, 22 modules, /ext ready in 5.06s\n" +
		"vmtest-init: kernel 6.12.117+deb12-amd64\nvmtest-init: active LSMs: lockdown,capability,landlock,yama,bpf,ima,evm\nvmtest-init: bpf LSM is active\n" +
		"vmtest-control: PASS: BPF LSM denied socket_create for its own tgid and allowed it after detach\n"
	nobpfBoot := "vmtest-init: kernel 6.12.117+deb12-amd64\nvmtest-init: active LSMs: lockdown,capability,landlock,yama\n" +
		"vmtest-init: booted without bpf in lsm=: skipping the bpf check and positive control; only NoBPFLSM tests run\n"
	mode := func(m string) []string { return []string{"VERDICT_SAMPLE=" + m} }
	// write records the guest's console (serial line endings) and what the
	// host printed after it.
	write := func(name, console string, host ...string) {
		text := strings.ReplaceAll(console, "\n", "\r\n") + strings.Join(host, "")
		if err := os.WriteFile(filepath.Join("testdata", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pass.console", boot+binary("enforcer", sampleBin, mode("pass"))+binary("daemon", sampleBin, mode("pass"))+"VMTEST-VERDICT 0\n")
	write("fail.console", boot+binary("enforcer", sampleBin, mode("fail"))+binary("daemon", sampleBin, mode("pass"))+"VMTEST-VERDICT 1\n")
	write("skip.console", boot+binary("enforcer", sampleBin, mode("skip"))+"VMTEST-VERDICT 0\n")
	write("panic.console", boot+binary("enforcer", sampleBin, mode("panic"))+"VMTEST-VERDICT 1\n")
	write("timeout.console", boot+binary("enforcer", sampleBin, mode("timeout"), "-test.timeout=2s")+"VMTEST-VERDICT 1\n")
	// The guest dies in the middle of the second binary: its output stops
	// after TestSubtests started, the kernel panics, no end marker, no verdict.
	second := binary("daemon", sampleBin, mode("pass"))
	second = second[:strings.Index(second, "\x16=== RUN   TestSubtests/first")]
	write("noverdict.console", boot+binary("enforcer", sampleBin, mode("pass"))+second+
		"[  301.000000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009\n[  301.000001] ---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009 ]---\n")
	write("nobpf.console", nobpfBoot+binary("enforcer", sampleBin, mode("pass"), "-test.run", "NoBPFLSM")+
		binary("daemon", sampleBin, mode("pass"), "-test.run", "NoBPFLSMNothingHere")+"VMTEST-VERDICT 0\n")
	write("nobpf-none.console", nobpfBoot+binary("enforcer", sampleBin, mode("pass"), "-test.run", "NoSuchTest")+"VMTEST-VERDICT 0\n")

	// The selftest: the guest's console, then the host's report on it.
	guest := boot + binary(SelftestPackage, selftestBin, []string{"ENFORCERD_VMTEST=1", "ENFORCERD_VMTEST_SELFTEST=1"}) + "VMTEST-VERDICT 1\n"
	c, err := ParseConsole(strings.NewReader(guest))
	if err != nil {
		t.Fatal(err)
	}
	run := Run{Exit: DecodeExit(3, 1200), BPF: true, Expected: []string{SelftestPackage}}
	for _, s := range c.Sections {
		evs, err := convert(t)(s)
		if err != nil {
			t.Fatal(err)
		}
		run.Packages = append(run.Packages, Summarize(s, evs))
	}
	var rep bytes.Buffer
	Decide(run).Print(&rep, Header{Kernel: "6.12.117+deb12-amd64", LSM: "lockdown,capability,landlock,yama,bpf", TotalSeconds: 12, VMSeconds: 6})
	write("selftest.console", guest, rep.String())
}
