package verdict

import (
	"fmt"
	"io"
	"strings"
)

// Guest verdicts: the byte /init writes to I/O port 0xf4 (see
// scripts/vmtest-guest/init).
const (
	GuestPass         = 0
	GuestTestFailed   = 1
	GuestNoBPFLSM     = 2
	GuestControlFail  = 3
	GuestSetupFailed  = 4
	guestVerdictCount = 5
)

// guestVerdictText explains a guest verdict other than GuestPass.
var guestVerdictText = [guestVerdictCount]string{
	GuestTestFailed:  "a test binary exited non-zero",
	GuestNoBPFLSM:    "bpf is not in the active LSM list",
	GuestControlFail: "the BPF LSM positive control failed (BPF LSM does not enforce)",
	GuestSetupFailed: "guest setup (mounts, cgroup controllers, modules, /ext, config) failed",
}

// Exit is how the VM ended, decoded from QEMU's exit status (as
// `timeout qemu-system-x86_64 ...` returned it).
type Exit struct {
	// Verdict is the guest's verdict byte; valid when HasVerdict.
	Verdict    int
	HasVerdict bool
	// Problem says why there is no verdict ("" when there is one).
	Problem string
}

// DecodeExit decodes QEMU's exit status. isa-debug-exit makes QEMU exit
// with (v<<1)|1 for the byte v the guest writes; 0 means the guest died
// without writing one (a kernel panic with -no-reboot); 124 and 137 are
// timeout(1)'s statuses for a VM it stopped (TERM, then KILL);
// any other even status is QEMU's own failure.
func DecodeExit(qemuStatus, timeoutSeconds int) Exit {
	switch {
	case qemuStatus == 124 || qemuStatus == 137:
		return Exit{Problem: fmt.Sprintf("the VM timed out after %ds and was killed (no verdict)", timeoutSeconds)}
	case qemuStatus == 0:
		return Exit{Problem: "the guest gave no verdict (kernel panic, or /init died before writing port 0xf4)"}
	case qemuStatus%2 == 1:
		return Exit{Verdict: (qemuStatus - 1) / 2, HasVerdict: true}
	default:
		return Exit{Problem: fmt.Sprintf("QEMU itself failed (exit status %d)", qemuStatus)}
	}
}

// Run is everything the verdict of a test boot depends on.
type Run struct {
	Exit Exit
	// BPF is true when "bpf" was in the guest's lsm=. Without it only
	// TestNoBPFLSM... tests run, and none running is a warning, not a
	// failure (nothing checks the refusal then, which the warning says).
	BPF bool
	// Expected lists the packages the guest was told to run, in order.
	Expected []string
	Packages []Package
}

// Report is the decision over a Run.
type Report struct {
	Run
	Passed, Failed, Skipped int
	// Problems are the reasons the run failed, in the order printed; the
	// run passed when there are none.
	Problems []string
	// NoTestsWarning is set when a boot without BPF LSM ran no test.
	NoTestsWarning bool
}

// OK reports whether the run passed.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Decide applies the harness's rules: the guest must give verdict 0; every
// expected package must start, end with status 0, and have no failed,
// skipped (a skip inside the VM is a failure: the VM exists so that kernel
// tests never skip) or unfinished test and no panic; and with BPF LSM at
// least one test must pass.
func Decide(run Run) Report {
	r := Report{Run: run}
	switch {
	case !run.Exit.HasVerdict:
		r.Problems = append(r.Problems, "no verdict from the guest")
	case run.Exit.Verdict == GuestPass:
	case run.Exit.Verdict > 0 && run.Exit.Verdict < guestVerdictCount:
		r.Problems = append(r.Problems, fmt.Sprintf("guest verdict %d: %s", run.Exit.Verdict, guestVerdictText[run.Exit.Verdict]))
	default:
		r.Problems = append(r.Problems, fmt.Sprintf("guest verdict %d", run.Exit.Verdict))
	}
	seen := map[string]bool{}
	for _, p := range run.Packages {
		seen[p.Name] = true
		r.Passed += p.Passed
		r.Failed += p.Failed
		r.Skipped += p.Skipped
		if p.Failed > 0 {
			names := append([]string{}, p.FailedTests...)
			for _, t := range p.Unfinished {
				names = append(names, t+" (did not finish)")
			}
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %d test(s) failed: %s", p.Name, p.Failed, strings.Join(names, " ")))
		}
		if p.Skipped > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %d test(s) skipped (a skip inside the VM is a failure): %s", p.Name, p.Skipped, strings.Join(p.SkippedTests, " ")))
		}
		if p.Panicked {
			r.Problems = append(r.Problems, p.Name+": test binary panicked")
		}
		switch {
		case !p.Ended:
			r.Problems = append(r.Problems, p.Name+": test binary did not finish (no end marker)")
		case p.Status != 0:
			r.Problems = append(r.Problems, fmt.Sprintf("%s: test binary exit status %d", p.Name, p.Status))
		}
	}
	var missing []string
	for _, e := range run.Expected {
		if !seen[e] {
			missing = append(missing, e)
		}
	}
	if len(missing) > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("only %d of %d test packages started in the guest; never started: %s",
			len(run.Expected)-len(missing), len(run.Expected), strings.Join(missing, " ")))
	}
	if r.Passed == 0 {
		if run.BPF {
			r.Problems = append(r.Problems, "no test passed: the test binaries ran no tests")
		} else {
			r.NoTestsWarning = true
		}
	}
	return r
}

// Header names the boot in the summary's first line.
type Header struct {
	Kernel string // e.g. 6.12.117+deb12-amd64
	LSM    string // the guest's lsm=
	// TotalSeconds and VMSeconds are the wall times of the whole run and
	// of the VM alone.
	TotalSeconds, VMSeconds int
}

// Print writes the per-package table and the verdict, as scripts/vmtest
// prints them.
func (r Report) Print(w io.Writer, h Header) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "vmtest: summary (kernel %s, lsm=%s)\n", h.Kernel, h.LSM)
	fmt.Fprintf(w, "  %-44s %6s %6s %6s  %s\n", "PACKAGE", "PASSED", "FAILED", "SKIPPED", "STATUS")
	for _, p := range r.Packages {
		fmt.Fprintf(w, "  %-44s %6d %6d %6d  %s\n", p.Name, p.Passed, p.Failed, p.Skipped, p.StatusText())
	}
	fmt.Fprintf(w, "  %-44s %6d %6d %6d\n", fmt.Sprintf("TOTAL (%d packages)", len(r.Packages)), r.Passed, r.Failed, r.Skipped)
	fmt.Fprintf(w, "  wall time: %ds total, %ds in the VM\n", h.TotalSeconds, h.VMSeconds)
	if r.NoTestsWarning {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "vmtest: WARNING: ******************************************************************")
		fmt.Fprintln(w, "vmtest: WARNING: no TestNoBPFLSM... test ran in the boot without the BPF LSM.")
		fmt.Fprintln(w, "vmtest: WARNING: Nothing checks that enforcerd refuses when BPF LSM is missing.")
		fmt.Fprintln(w, "vmtest: WARNING: ******************************************************************")
	}
	if !r.OK() {
		r.printFailureOutput(w)
		fmt.Fprintln(w)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "vmtest: FAIL: %s\n", p)
		}
		return
	}
	fmt.Fprintf(w, "vmtest: PASS (%d tests in %d packages on %s)\n", r.Passed, len(r.Packages), h.Kernel)
	fmt.Fprintf(w, "vmtest: %d passed, 0 failed\n", r.Passed)
}

// printFailureOutput writes what each failed leaf test printed last (a
// parent test's own output is only its subtests' headers). It comes right
// before the FAIL lines: a log cut to its tail still shows why.
func (r Report) printFailureOutput(w io.Writer) {
	for _, p := range r.Packages {
		for _, t := range p.FailedTests {
			leaf := true
			for _, u := range p.FailedTests {
				if strings.HasPrefix(u, t+"/") {
					leaf = false
					break
				}
			}
			if !leaf {
				continue
			}
			fmt.Fprintf(w, "\nvmtest: output of failed test %s %s (last %d lines at most):\n", p.Name, t, FailureOutputLines)
			for _, l := range p.FailureOutput[t] {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
}
