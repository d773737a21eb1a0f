// Command vmtest-verdict is the host side of scripts/vmtest after QEMU has
// exited: it reads the guest's console log and decides the run's verdict
// (package test/vmtest/verdict holds the rules).
//
//	vmtest-verdict report [flags] CONSOLE_LOG
//	vmtest-verdict selftest -status N OUTPUT
//
// report, in -mode test, prints the per-package table and "vmtest: PASS
// (...)" or the reasons for failing, and exits 0 or 1; in -mode run or
// shell it exits with the guest's status (1 without one). selftest checks
// the output and exit status of a `scripts/vmtest --selftest-guest` run and
// exits 1 unless the harness failed the way it must.
//
// Layering (docs/design.md): a tool's main; it may import anything, and
// nothing imports it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/enforcerd/enforcerd/test/vmtest/verdict"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: vmtest-verdict report [flags] CONSOLE_LOG | selftest -status N OUTPUT (-h for flags)")
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "report":
		return report(args[1:], stdout, stderr)
	case "selftest":
		return selftest(args[1:], stderr)
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		usage(stderr)
		return 2
	}
}

func report(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "test", "the guest's mode: test, run or shell")
	qemuStatus := fs.Int("qemu-status", -1, "exit status of `timeout ... qemu-system-x86_64` (required)")
	timeout := fs.Int("timeout", 0, "the VM's wall-clock limit in seconds (for the timeout message)")
	kernel := fs.String("kernel", "", "kernel release the guest booted (summary and PASS line)")
	lsm := fs.String("lsm", "", "the guest's lsm= (without \"bpf\": only NoBPFLSM tests ran)")
	packages := fs.String("packages", "", "file listing the test packages the guest was to run, one a line")
	total := fs.Int("total-seconds", 0, "wall time of the whole run")
	vm := fs.Int("vm-seconds", 0, "wall time of the VM")
	conv := fs.String("test2json", strings.Join(verdict.Test2JSON, " "), "test2json command (reads -test.v=test2json on stdin, takes -p PKG)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *qemuStatus < 0 {
		fmt.Fprintln(stderr, "vmtest-verdict report: want -qemu-status N and one CONSOLE_LOG")
		return 2
	}
	log, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "vmtest: error: %v\n", err)
		return 1
	}
	console, err := verdict.ParseConsole(bytes.NewReader(log))
	if err != nil {
		fmt.Fprintf(stderr, "vmtest: error: %v\n", err)
		return 1
	}
	exit := verdict.DecodeExit(*qemuStatus, *timeout)
	if !exit.HasVerdict {
		fmt.Fprintf(stderr, "vmtest: FAIL: %s\n", exit.Problem)
	}

	if *mode != "test" {
		if !exit.HasVerdict {
			return 1
		}
		// The byte caps the status at 127; /init printed the full one.
		status := exit.Verdict
		if status == 127 && console.GuestStatus >= 0 {
			status = console.GuestStatus
		}
		fmt.Fprintf(stderr, "vmtest: guest exited with status %d (%ds in the VM)\n", status, *vm)
		return status
	}

	r := verdict.Run{Exit: exit, BPF: hasBPF(*lsm)}
	if *packages != "" {
		b, err := os.ReadFile(*packages)
		if err != nil {
			fmt.Fprintf(stderr, "vmtest: error: %v\n", err)
			return 1
		}
		r.Expected = strings.Fields(string(b))
	}
	argv := strings.Fields(*conv)
	for _, s := range console.Sections {
		evs, err := verdict.Convert(context.Background(), argv, s.Package, s.Output)
		if err != nil {
			fmt.Fprintf(stderr, "vmtest: error: %v\n", err)
			return 1
		}
		r.Packages = append(r.Packages, verdict.Summarize(s, evs))
	}
	rep := verdict.Decide(r)
	rep.Print(stdout, verdict.Header{Kernel: *kernel, LSM: *lsm, TotalSeconds: *total, VMSeconds: *vm})
	if !rep.OK() {
		return 1
	}
	return 0
}

// hasBPF reports whether "bpf" is an element of the comma-separated lsm=.
func hasBPF(lsm string) bool {
	for _, l := range strings.Split(lsm, ",") {
		if l == "bpf" {
			return true
		}
	}
	return false
}

func selftest(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	status := fs.Int("status", -1, "exit status of the `scripts/vmtest --selftest-guest` run (required)")
	conv := fs.String("test2json", strings.Join(verdict.Test2JSON, " "), "test2json command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *status < 0 {
		fmt.Fprintln(stderr, "vmtest-verdict selftest: want -status N and one OUTPUT file")
		return 2
	}
	out, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "vmtest: error: %v\n", err)
		return 1
	}
	argv := strings.Fields(*conv)
	problems := verdict.CheckSelftest(out, *status, func(s verdict.Section) ([]verdict.Event, error) {
		return verdict.Convert(context.Background(), argv, s.Package, s.Output)
	})
	for _, p := range problems {
		fmt.Fprintf(stderr, "vmtest: SELFTEST FAILED: %s\n", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}
