package run

// run's wiring of sandbox: what it prints at each stage, and its
// exit status.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/sandbox"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/coverage"
)

// forwardedSignals are the signals run passes on to CMD.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runSandboxed finds CMD, runs it in a sandbox and returns run's exit
// status: CMD's own; 126/127 when CMD is not executable / not found;
// exitCannotEnforce for every failure before CMD starts (it never ran).
// The steps: find CMD, open the sandbox, report its coverage, register
// (through the daemon when one reads the pins), report the enclosing
// ceilings, follow the denials, run CMD. Every question to the daemon on
// --socket goes through one session (daemonSession).
func RunSandboxed(o runOptions, s cli.Streams) int {
	bin, code := findCommand(o, s.Err)
	if code != cli.ExitOK {
		return code
	}
	r := &sandboxRun{o: o, s: s, bin: bin, daemon: newDaemonSession(o.socket)}
	sb, err := r.open()
	if err != nil {
		return r.fail(err)
	}
	defer func() {
		if err := sb.Close(); err != nil {
			fmt.Fprintf(s.Err, "enforcerd run: cleanup: %v\n", err)
		}
	}()
	if err := r.reportCoverage(sb); err != nil {
		return r.fail(err)
	}
	daemonReads, err := r.register(sb)
	if err != nil {
		return r.fail(err)
	}
	r.reportNesting(sb)
	stop, err := r.followDenials(sb, daemonReads)
	if err != nil {
		return r.fail(err)
	}
	return r.runCommand(sb, stop)
}

// findCommand checks CMD and the --exec-allow files and returns CMD's
// program as exec.LookPath finds it, or run's exit status when there is
// none: 126 for a directory or a file without execute permission, 127
// for a program not found, exitUsage for a missing or non-regular
// --exec-allow file (as for a missing --write-root; what the file is,
// the program check says).
func findCommand(o runOptions, stderr io.Writer) (bin string, code int) {
	if st, err := os.Stat(o.argv[0]); err == nil && st.IsDir() && strings.Contains(o.argv[0], "/") {
		fmt.Fprintf(stderr, "enforcerd run: %s: is a directory\n", o.argv[0])
		return "", cli.ExitNotExecutable
	}
	for _, p := range o.execAllow {
		if st, err := os.Stat(p); err != nil {
			fmt.Fprintf(stderr, "enforcerd run: --exec-allow: %v\n", err)
			return "", cli.ExitUsage
		} else if !st.Mode().IsRegular() {
			fmt.Fprintf(stderr, "enforcerd run: --exec-allow %s: not a regular file\n", p)
			return "", cli.ExitUsage
		}
	}
	bin, err := exec.LookPath(o.argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "enforcerd run: %v\n", err)
		if errors.Is(err, os.ErrPermission) {
			return "", cli.ExitNotExecutable
		}
		return "", cli.ExitNotFound
	}
	return bin, cli.ExitOK
}

// sandboxRun is one run of CMD (bin, as exec.LookPath found it) in a
// sandbox, between its steps.
type sandboxRun struct {
	o      runOptions
	s      cli.Streams
	bin    string
	daemon *daemonSession
}

// fail prints why run cannot enforce the ceiling and returns
// exitCannotEnforce (CMD never ran).
func (r *sandboxRun) fail(err error) int {
	fmt.Fprintf(r.s.Err, "enforcerd run: cannot enforce: %v\n", err)
	return cli.ExitCannotEnforce
}

// open opens the sandbox for CMD. CMD inherits run's stdio and
// controlling terminal: its own terminals (ownterm). Errors: partial
// coverage (with a pointer to `enforcerd check`) and every other reason
// sandbox.Open gives.
func (r *sandboxRun) open() (*sandbox.Sandbox, error) {
	o := r.o
	terms, err := ownTerminals()
	if err != nil {
		return nil, fmt.Errorf("declaring CMD's own terminals: %v", err)
	}
	sb, err := sandbox.Open(sandbox.Config{
		Ceiling: o.ceiling, AuditOnly: o.auditOnly, AllowPartial: o.allowPartial,
		Entrypoint: r.bin, ExecAllow: o.execAllow, AllowConnect: o.allowConnect, CgroupParent: o.cgroupParent,
		WriteRoots: o.writeRootIDs, WriteRootPaths: o.writeRoots, Helper: "/proc/self/exe",
		AllowDevices: entryDevices(o.allowDevices), Terminals: terms, DenyConsoleEgress: o.denyConsole,
		PinDir: o.pinDir, VerifierLog: cli.VerifierLog(r.s.Err),
	})
	if errors.Is(err, coverage.ErrPartial) {
		return nil, fmt.Errorf("%v\nenforcerd run: `enforcerd check` shows what this host enforces of each field and what a full coverage needs (for most gaps: BPF LSM, i.e. bpf in the kernel's lsm= list and a kernel that loads BPF LSM programs; its \"layer bpf-lsm\" line says which is missing here; docs/no-bpf-lsm.md)", err)
	}
	return sb, err
}

// reportCoverage warns of what the sandbox does not enforce or observe:
// gaps under --audit-only, gaps --allow-partial accepted, the process
// layer; nothing with --quiet. Errors: partial coverage the daemon, if
// one runs, does not allow (its operator's choice caps --allow-partial).
func (r *sandboxRun) reportCoverage(sb *sandbox.Sandbox) error {
	stderr := r.s.Err
	if r.o.quiet { // the banners below only report what the flags chose
		stderr = io.Discard
	}
	if cov := sb.Coverage(); r.o.auditOnly && !cov.Full() {
		fmt.Fprintf(stderr, "enforcerd run: warning: audit-only, and some would-be denials cannot even be observed here: %s\n", strings.Join(gapLines(cov.Gaps()), "; "))
	} else if gaps := sb.PartialAccepted(); len(gaps) > 0 {
		// Only reached with --allow-partial.
		if err := r.daemon.allowsPartial(); err != nil {
			return fmt.Errorf("--allow-partial: %v", err)
		}
		fmt.Fprintf(stderr, "enforcerd run: partial coverage (--allow-partial): NOT enforced: %s\n", strings.Join(gapLines(gaps), "; "))
	}
	if p := sb.ProcessLayer(); p != nil {
		fmt.Fprintf(stderr, "enforcerd run: no BPF LSM: CMD restricts itself before its exec (%s); what those refuse is not printed here (seccomp's denials go to the kernel's audit trail, which a running daemon reads into its log; Landlock's are not recorded)\n", processMechanisms(sb.Coverage()))
	}
	return nil
}

// register registers the sandbox's cgroup and reports whether a daemon
// reads its denial records. A daemon reading these pins owns their
// registrations: the run's cgroup is registered through it
// (daemon.go; CMD starts through the exec gate, sandbox/gate.go). A
// run with more --exec-allow files than the API takes
// (registry.MaxExecAllow), a host without activation at exec, and one
// whose CMD restricts itself (the process layer) install into the pins
// directly, as without a daemon.
func (r *sandboxRun) register(sb *sandbox.Sandbox) (daemonReads bool, err error) {
	daemonReads = sb.DaemonReadsRecords() || r.daemon.readsRecords(r.o.pinDir)
	if daemonReads && len(r.o.execAllow) <= registry.MaxExecAllow {
		_ = sb.SetRegistrar(r.daemon.registrar(r.o, r.bin)) // refused: stays direct
	}
	return daemonReads, sb.Register()
}

// reportNesting prints the cgroups of killed runs the sandbox removed
// and how each registered enclosing cgroup narrows this run.
func (r *sandboxRun) reportNesting(sb *sandbox.Sandbox) {
	for _, or := range sb.Orphans() {
		if !r.o.quiet {
			fmt.Fprintf(r.s.Err, "enforcerd run: removed cgroup %s left by a killed enforcerd run (registered: %v)\n", or.Group, or.Registered)
		}
	}
	for _, oc := range sb.Outer() {
		reportOuter(r.s.Err, r.o, oc)
	}
}

// reportOuter prints how the registered enclosing cgroup oc narrows the
// run o: its ceiling, its endpoints, its devices, its gaps.
func reportOuter(stderr io.Writer, o runOptions, oc sandbox.Outer) {
	if meet := o.ceiling.Clamp(oc.Entry.Ceiling); meet != o.ceiling {
		fmt.Fprintf(stderr, "enforcerd run: nested in registered cgroup %s, whose ceiling %s narrows this run's %s to %s\n", oc.Cgroup, oc.Entry.Ceiling, o.ceiling, meet)
	}
	if !oc.Entry.Ceiling.Network && len(o.allowConnect) > 0 {
		// The kernel reaches only endpoints every network=false
		// ancestor lists too (bpf/endpoints.h).
		if meet := endpoint.Intersect(o.allowConnect, oc.Entry.AllowConnect); len(meet) != len(o.allowConnect) {
			fmt.Fprintf(stderr, "enforcerd run: nested in registered cgroup %s, which lists %d allowed endpoint(s): --allow-connect reaches only %q\n", oc.Cgroup, len(oc.Entry.AllowConnect), endpoint.Strings(meet))
		}
	}
	if len(o.allowDevices) > 0 {
		// The kernel lets CMD use only devices every registered
		// ancestor lists too.
		outer := make([]devallow.Device, len(oc.Entry.AllowDevices))
		for i, d := range oc.Entry.AllowDevices {
			outer[i] = devallow.Device{Block: d.Block, Major: d.Dev >> 20, Minor: d.Dev & devallow.MaxMinor}
		}
		if meet := devallow.Intersect(o.allowDevices, outer); len(meet) != len(o.allowDevices) {
			fmt.Fprintf(stderr, "enforcerd run: nested in registered cgroup %s, which lists %d allowed device(s): --allow-device reaches only %q\n", oc.Cgroup, len(outer), devallow.Strings(meet))
		}
	}
	if len(oc.Unenforced) > 0 {
		fmt.Fprintf(stderr, "enforcerd run: the ceiling %s of registered cgroup %s is enforced only in part here: NOT enforced: %s\n", oc.Entry.Ceiling, oc.Cgroup, strings.Join(gapLines(oc.Unenforced), "; "))
	}
}

// followDenials starts printing the sandbox's denial records (none with
// --quiet) and returns the function that stops it and counts the records
// lost. The denial ring buffer has one reader: when it is the daemon's
// (daemonReads), its API streams this run's records back (filtered by
// cgroup id), and a stream that cannot be opened is only reported.
// Errors: watching the ring buffer failed.
func (r *sandboxRun) followDenials(sb *sandbox.Sandbox, daemonReads bool) (stop func() uint64, err error) {
	stderr := r.s.Err
	none := func() uint64 { return 0 }
	if r.o.linuxAudit && daemonReads {
		fmt.Fprintf(stderr, "enforcerd run: --linux-audit: the enforcerd daemon using %s reads the denial records; its audit.linux_audit decides whether they reach the Linux audit trail\n", r.o.pinDir)
	}
	switch {
	case daemonReads && r.o.quiet:
		return none, nil
	case daemonReads:
		if stop, err = r.daemon.followDenials(sb.Cgroup().ID, stderr); err != nil {
			fmt.Fprintf(stderr, "enforcerd run: the enforcerd daemon using %s records the denials of cgroup id %d in its audit log; streaming them here failed: %v\n", r.o.pinDir, sb.Cgroup().ID, err)
			return none, nil
		}
		return stop, nil
	case r.o.linuxAudit:
		return r.watchToAuditTrail(sb)
	case r.o.quiet:
		return none, nil
	default:
		return sb.WatchDenials(func(d sandbox.Denial) { printDenial(stderr, d) })
	}
}

// watchToAuditTrail reads the sandbox's denial records (run is their
// reader) into the Linux audit trail (--linux-audit), printing them too
// unless --quiet; the returned stop also sends what is queued.
func (r *sandboxRun) watchToAuditTrail(sb *sandbox.Sandbox) (stop func() uint64, err error) {
	trail := newRunAuditTrail(r.s.Err, fmt.Sprintf("enforcerd-run-%d-%d", os.Getpid(), sb.Cgroup().ID))
	watch, err := sb.WatchDenials(func(d sandbox.Denial) {
		if !r.o.quiet {
			printDenial(r.s.Err, d)
		}
		if trail != nil {
			trail.record(d)
		}
	})
	if err != nil || trail == nil {
		return watch, err
	}
	return func() uint64 {
		lost := watch()
		trail.close()
		return lost
	}, nil
}

// runCommand runs CMD in the sandbox with run's stdio, stops following
// the denials when it ended, and returns run's exit status.
func (r *sandboxRun) runCommand(sb *sandbox.Sandbox, stop func() uint64) int {
	stderr := r.s.Err
	cmd := exec.Command(r.bin, r.o.argv[1:]...)
	cmd.Args[0] = r.o.argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.s.In, r.s.Out, r.s.Err
	err := sb.Run(cmd, forwardedSignals...)
	if lost := stop(); lost > 0 {
		fmt.Fprintf(stderr, "enforcerd run: %d denial records were lost (ring buffer full); every one of those operations was still denied\n", lost)
	}
	if errors.Is(err, coverage.ErrCannotEnforce) {
		// Before ProcessState: a refused registration through the daemon
		// ends the exec gate (it has a ProcessState), CMD never ran.
		return r.fail(err)
	}
	if cmd.ProcessState == nil {
		fmt.Fprintf(stderr, "enforcerd run: %v\n", err)
		return startExit(err)
	}
	return exitStatus(cmd)
}

// exitStatus is run's status for CMD's end: its exit status, or 128+N
// when signal N killed it.
func exitStatus(cmd *exec.Cmd) int {
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// startExit is run's exit status when CMD could not be started: 127 when
// it does not exist, else 126 (no permission, an exec format error such as
// a script without "#!", an exec the kernel refused), as shells do.
func startExit(err error) int {
	if errors.Is(err, os.ErrNotExist) {
		return cli.ExitNotFound
	}
	return cli.ExitNotExecutable
}

// printDenial prints one denial record on a line. Names come from the
// sandbox: they are escaped so that a file name or comm cannot forge a
// line or drive the terminal.
func printDenial(w io.Writer, d sandbox.Denial) {
	verb := "denied"
	if d.Audited {
		verb = "audit: would deny"
	}
	by := ""
	if d.Outer != nil {
		by = " by the ceiling of " + d.Outer.Cgroup.String()
	}
	fmt.Fprintf(w, "enforcerd: %s %s %s (%s, rule %s)%s pid=%d comm=%s\n", verb, d.Operation(), printable(d.Object.String()), d.Hook, d.Rule, by, d.TGID, printable(d.Comm))
}

// printable escapes control characters, backslashes and invalid UTF-8 (as
// strconv.Quote does, without the quotes) so untrusted names stay on one
// line and cannot inject terminal sequences.
func printable(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// processMechanisms lists the mechanisms of cov by field: "network:
// seccomp+cgroup-bpf, write: landlock-abi6+seccomp".
func processMechanisms(cov coverage.Coverage) string {
	var out []string
	for _, f := range []string{"network", "write", "shell"} {
		if m := cov.Mechanisms[f]; len(m) > 0 {
			out = append(out, f+": "+strings.Join(m, "+"))
		}
	}
	return strings.Join(out, ", ")
}

// gapLines renders coverage gaps for a message.
func gapLines(gs []coverage.Gap) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return out
}

// printRecord prints an audit record from the daemon as printDenial prints
// one read from the kernel.
func printRecord(w io.Writer, r audit.Record) {
	verb := "denied"
	if r.Decision == "audited" {
		verb = "audit: would deny"
	}
	fmt.Fprintf(w, "enforcerd: %s %s %s (%s) pid=%d comm=%s\n", verb, r.Operation, printable(r.Object), r.Hook, r.PID, printable(r.Comm))
}
