package main

// run's wiring of sandbox: what it prints at each stage, and its
// exit status.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/sandbox"
)

// forwardedSignals are the signals run passes on to CMD.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runSandboxed finds CMD, runs it in a sandbox and returns run's exit
// status: CMD's own; 126/127 when CMD is not executable / not found;
// exitCannotEnforce for every failure before CMD starts (it never ran).
func runSandboxed(o runOptions, s streams) int {
	stderr := s.err
	if st, err := os.Stat(o.argv[0]); err == nil && st.IsDir() && strings.Contains(o.argv[0], "/") {
		fmt.Fprintf(stderr, "enforcerd run: %s: is a directory\n", o.argv[0])
		return exitNotExecutable
	}
	for _, p := range o.execAllow {
		// A missing or non-regular file is a usage error, as a missing
		// --write-root is; what the file is, the program check says.
		if st, err := os.Stat(p); err != nil {
			fmt.Fprintf(stderr, "enforcerd run: --exec-allow: %v\n", err)
			return exitUsage
		} else if !st.Mode().IsRegular() {
			fmt.Fprintf(stderr, "enforcerd run: --exec-allow %s: not a regular file\n", p)
			return exitUsage
		}
	}
	bin, err := exec.LookPath(o.argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "enforcerd run: %v\n", err)
		if errors.Is(err, os.ErrPermission) {
			return exitNotExecutable
		}
		return exitNotFound
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "enforcerd run: cannot enforce: "+format+"\n", a...)
		return exitCannotEnforce
	}
	// CMD inherits run's stdio and controlling terminal: its own
	// terminals (ownterm).
	terms, err := ownTerminals()
	if err != nil {
		return fail("declaring CMD's own terminals: %v", err)
	}
	sb, err := sandbox.Open(sandbox.Config{
		Ceiling: o.ceiling, AuditOnly: o.auditOnly, AllowPartial: o.allowPartial,
		Entrypoint: bin, ExecAllow: o.execAllow, AllowConnect: o.allowConnect, CgroupParent: o.cgroupParent,
		WriteRoots: o.writeRootIDs, WriteRootPaths: o.writeRoots, Helper: "/proc/self/exe",
		AllowDevices: entryDevices(o.allowDevices), Terminals: terms, DenyConsoleEgress: o.denyConsole,
		PinDir: o.pinDir, VerifierLog: verifierLog(stderr),
	})
	if errors.Is(err, enforcer.ErrPartialCoverage) {
		return fail("%v\nenforcerd run: `enforcerd check` shows what this host enforces of each field and what a full coverage needs (for most gaps: BPF LSM, i.e. bpf in the kernel's lsm= list and a kernel that loads BPF LSM programs; its \"layer bpf-lsm\" line says which is missing here; docs/no-bpf-lsm.md)", err)
	}
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		if err := sb.Close(); err != nil {
			fmt.Fprintf(stderr, "enforcerd run: cleanup: %v\n", err)
		}
	}()
	if cov := sb.Coverage(); o.auditOnly && !cov.Full() {
		fmt.Fprintf(stderr, "enforcerd run: warning: audit-only, and some would-be denials cannot even be observed here: %s\n", strings.Join(gapLines(cov.Gaps()), "; "))
	} else if gaps := sb.PartialAccepted(); len(gaps) > 0 {
		// Only reached with --allow-partial: the daemon, if one runs,
		// must allow partial coverage too (its operator's choice caps
		// this flag).
		if err := daemonAllowsPartial(o.socket); err != nil {
			return fail("--allow-partial: %v", err)
		}
		fmt.Fprintf(stderr, "enforcerd run: partial coverage (--allow-partial): NOT enforced: %s\n", strings.Join(gapLines(gaps), "; "))
	}
	if p := sb.ProcessLayer(); p != nil && !o.quiet {
		fmt.Fprintf(stderr, "enforcerd run: no BPF LSM: CMD restricts itself before its exec (%s); what those refuse is not printed here (the kernel reports their denials to nobody)\n", processMechanisms(sb.Coverage()))
	}
	// A daemon reading these pins owns their registrations: the run's
	// cgroup is registered through it (run_daemon.go; CMD starts through
	// the exec gate, sandbox/gate.go). A run with more
	// --exec-allow files than the API takes (registry.MaxExecAllow), a
	// host without activation at exec, and one whose CMD restricts itself
	// (the process layer) install into the pins directly, as without a
	// daemon.
	daemonReads := sb.DaemonReadsRecords() || daemonReadsRecords(o.socket, o.pinDir)
	if daemonReads && len(o.execAllow) <= registry.MaxExecAllow {
		_ = sb.SetRegistrar(newDaemonRegistrar(o, bin)) // refused: stays direct
	}
	if err := sb.Register(); err != nil {
		return fail("%v", err)
	}
	for _, or := range sb.Orphans() {
		if !o.quiet {
			fmt.Fprintf(stderr, "enforcerd run: removed cgroup %s left by a killed enforcerd run (registered: %v)\n", or.Group, or.Registered)
		}
	}
	for _, oc := range sb.Outer() {
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
	stop := func() uint64 { return 0 }
	switch {
	case o.quiet:
	case daemonReads:
		// The denial ring buffer has one reader: the daemon's. Its API
		// streams this run's records back (filtered by cgroup id).
		if stop, err = followFromDaemon(o.socket, sb.Cgroup().ID, stderr); err != nil {
			fmt.Fprintf(stderr, "enforcerd run: the enforcerd daemon using %s records the denials of cgroup id %d in its audit log; streaming them here failed: %v\n", o.pinDir, sb.Cgroup().ID, err)
			stop = func() uint64 { return 0 }
		}
	default:
		if stop, err = sb.WatchDenials(func(d sandbox.Denial) { printDenial(stderr, d) }); err != nil {
			return fail("%v", err)
		}
	}

	cmd := exec.Command(bin, o.argv[1:]...)
	cmd.Args[0] = o.argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.in, s.out, s.err
	err = sb.Run(cmd, forwardedSignals...)
	if lost := stop(); lost > 0 {
		fmt.Fprintf(stderr, "enforcerd run: %d denial records were lost (ring buffer full); every one of those operations was still denied\n", lost)
	}
	if errors.Is(err, enforcer.ErrCannotEnforce) {
		// Before ProcessState: a refused registration through the daemon
		// ends the exec gate (it has a ProcessState), CMD never ran.
		return fail("%v", err)
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
		return exitNotFound
	}
	return exitNotExecutable
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
func processMechanisms(cov enforcer.Coverage) string {
	var out []string
	for _, f := range []string{"network", "write", "shell"} {
		if m := cov.Mechanisms[f]; len(m) > 0 {
			out = append(out, f+": "+strings.Join(m, "+"))
		}
	}
	return strings.Join(out, ", ")
}

// gapLines renders coverage gaps for a message.
func gapLines(gs []enforcer.Gap) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return out
}

// daemonStreamGrace is how long run keeps reading the daemon's stream after
// CMD ended: the daemon publishes a record once it read it from the kernel.
const daemonStreamGrace = 300 * time.Millisecond

// followFromDaemon prints the denial records of cgroup id cgid that the
// daemon on socket publishes, from the moment it returns (the daemon has
// subscribed) until the returned stop is called (then daemonStreamGrace
// more). stop returns 0: losses are the daemon's to count
// (enforcerd_ringbuf_lost_records_total). Errors: the stream could not be
// opened.
func followFromDaemon(socket string, cgid uint64, w io.Writer) (stop func() uint64, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan struct{})
	done := make(chan error, 1)
	client := api.NewClient(socket, 10*time.Second)
	go func() {
		done <- client.FollowDenialsSubscribed(ctx, api.DenialFilter{CgroupID: cgid}, func() { close(subscribed) },
			func(r audit.Record) error {
				// The stream also carries the daemon's own records of
				// the cgroup (registration, activation: run registers
				// through the daemon): only the kernel's denials are
				// printed, as without a daemon.
				if r.Type == audit.TypeDenial {
					printRecord(w, r)
				}
				return nil
			})
	}()
	select {
	case <-subscribed:
	case err := <-done:
		cancel()
		return nil, err
	case <-time.After(10 * time.Second):
		cancel()
		return nil, errors.New("no answer within 10s")
	}
	return func() uint64 {
		time.Sleep(daemonStreamGrace)
		cancel()
		<-done
		return 0
	}, nil
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
