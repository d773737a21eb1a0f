package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/progcheck"
	"github.com/enforcerd/enforcerd/policy"
)

func init() {
	register(subcommand{name: "run", summary: "run one command tree under a ceiling, enforced in the kernel", run: runRun})
}

const runUsage = `Usage: enforcerd run [flags] -- CMD [ARG...]

Run CMD in a fresh cgroup whose ceiling is enforced in the kernel by eBPF
(BPF LSM hooks, and cgroup-BPF socket hooks). Every process CMD starts, and
every sub-cgroup it creates, is held to the same ceiling. The ceiling takes
effect at enforcerd's exec of CMD, before CMD's first instruction. CMD runs
with RLIMIT_CORE 1 (soft and hard): the kernel then never runs a core_pattern
pipe helper for it.

Each denied operation is printed to stderr as it happens:
  enforcerd: denied <operation> <object> (<hook>)

Flags:
  --role ROLE            start from the role's requested ceiling (general,
                         explore, planner, reviewer, implement, test, advisor,
                         custom, a legacy alias or an org-chart title; ASCII
                         case-insensitive). Any other name, empty included,
                         is a usage error listing the valid names: CMD never
                         runs. Default: no restriction.
  --network allow|deny   network ceiling (also true|false)
  --write allow|deny     write ceiling (also true|false)
  --shell none|read_only|full
                         shell ceiling. none: CMD and the --exec-allow
                         files are the only programs that may be
                         executed; run refuses (exit 125) when one of them
                         is a shell, a multi-call binary (BusyBox, toybox,
                         a single-binary coreutils) or the dynamic loader,
                         recognised by content, not name: each runs every
                         other program without an exec
  --exec-allow PATH      with --shell=none: another binary CMD may exec
                         (repeatable; matched by device and inode). An
                         interpreter allowed here (python, node, perl)
                         runs whatever code it is given: allow one only if
                         that is intended
  --audit-only           do not deny: run CMD and report would-be denials
  --allow-partial        accept a ceiling this host enforces only in part
                         (without BPF LSM: network=deny covers only the
                         AF_INET/AF_INET6 sockets CMD creates, and nothing
                         stops a root CMD from leaving its cgroup). Without
                         it such a ceiling is refused (exit 125) and the
                         message names what would not be enforced. While
                         the enforcerd daemon runs, its configuration caps
                         this flag: with allow_partial: false there,
                         --allow-partial is refused too.
  --cgroup-parent GROUP  cgroup v2 path to create the transient cgroup under
                         (default: enforcerd's own cgroup)
  --pin-dir DIR          bpffs directory of the pinned programs and maps
                         (default /sys/fs/bpf/enforcerd)
  --socket PATH          the enforcerd daemon's API socket (default
                         /run/enforcerd/enforcerd.sock). When a daemon
                         answers there it reads the denial records into its
                         audit log, and run does not print them (a record
                         has one reader).
  -q, --quiet            do not print denials

--role and the explicit flags clamp together: the result is never wider than
either. When --cgroup-parent (or enforcerd's own cgroup) lies inside a
registered cgroup, that ceiling also applies to CMD (the meet of both, the
narrowest of each field); run then says which fields it narrows, and prints
the denials it decides for CMD's processes as well.

Fail closed: a field this host cannot enforce at all (write=deny or a shell
ceiling without BPF LSM) is always refused with exit 125; a field it
enforces only in part is refused unless --allow-partial is given (see
"enforcerd check"). CMD never runs when enforcerd exits 125.

Exit status:
  CMD's own status (128+N when killed by signal N)
  2    usage error (bad flag or value, missing --)
  125  enforcerd could not enforce the ceiling (also: under shell=none,
       CMD or an --exec-allow file runs other programs without exec);
       CMD never ran
  126  CMD is not executable (no permission, exec format error, denied)
  127  CMD was not found
`

// boolFlag is an allow|deny flag that remembers whether it was given.
type boolFlag struct {
	set bool
	val bool
}

func (b *boolFlag) String() string {
	if !b.set {
		return ""
	}
	return fmt.Sprint(b.val)
}

func (b *boolFlag) Set(s string) error {
	v, err := policy.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.val = true, v
	return nil
}

type shellFlag struct {
	set bool
	val policy.Shell
}

func (s *shellFlag) String() string { return string(s.val) }

func (s *shellFlag) Set(v string) error {
	sh, err := policy.ParseShell(v)
	if err != nil {
		return err
	}
	s.set, s.val = true, sh
	return nil
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type runOptions struct {
	ceiling      policy.KernelCeiling
	auditOnly    bool
	allowPartial bool
	quiet        bool
	execAllow    []string
	cgroupParent string
	pinDir       string
	socket       string
	argv         []string
}

// parseRunArgs parses run's flags; CMD must follow "--".
func parseRunArgs(args []string, stderr io.Writer) (runOptions, error) {
	var o runOptions
	dash := -1
	for i, a := range args {
		if a == "--" {
			dash = i
			break
		}
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	role := fs.String("role", "", "")
	var network, write boolFlag
	var shell shellFlag
	var execAllow listFlag
	fs.Var(&network, "network", "")
	fs.Var(&write, "write", "")
	fs.Var(&shell, "shell", "")
	fs.Var(&execAllow, "exec-allow", "")
	fs.BoolVar(&o.auditOnly, "audit-only", false, "")
	fs.BoolVar(&o.allowPartial, "allow-partial", false, "")
	fs.BoolVar(&o.quiet, "quiet", false, "")
	fs.BoolVar(&o.quiet, "q", false, "")
	fs.StringVar(&o.cgroupParent, "cgroup-parent", "", "")
	fs.StringVar(&o.pinDir, "pin-dir", enforcer.DefaultPinDir, "")
	fs.StringVar(&o.socket, "socket", api.DefaultSocket, "")
	flagArgs := args
	if dash >= 0 {
		flagArgs = args[:dash]
	}
	if err := fs.Parse(flagArgs); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q before --", fs.Arg(0))
	}
	if dash < 0 {
		return o, errors.New("missing -- before the command (enforcerd run [flags] -- CMD [ARG...])")
	}
	o.argv = args[dash+1:]
	if len(o.argv) == 0 {
		return o, errors.New("missing command after --")
	}
	c := policy.DefaultSession()
	if isFlagSet(fs, "role") {
		res, err := policy.LookupRole(*role)
		if err != nil {
			return o, fmt.Errorf("--role: %w", err)
		}
		c = policy.RequestedCeiling(res.Role, policy.DefaultSession())
	}
	k := c.Kernel()
	if network.set {
		k = k.Clamp(policy.KernelCeiling{Network: network.val, Write: true, Shell: policy.ShellFull})
	}
	if write.set {
		k = k.Clamp(policy.KernelCeiling{Network: true, Write: write.val, Shell: policy.ShellFull})
	}
	if shell.set {
		k = k.Clamp(policy.KernelCeiling{Network: true, Write: true, Shell: shell.val})
	}
	if len(execAllow) > 0 && k.Shell != policy.ShellNone {
		return o, fmt.Errorf("--exec-allow needs --shell=none (the ceiling's shell is %s)", k.Shell)
	}
	o.ceiling = k
	o.execAllow = execAllow
	return o, nil
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func runRun(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stdout, runUsage)
			return exitOK
		}
	}
	o, err := parseRunArgs(args, stderr)
	if err != nil {
		// The flag package names flags with one dash; the docs use two.
		err = errors.New(strings.ReplaceAll(err.Error(), "flag -", "flag --"))
		fmt.Fprintf(stderr, "enforcerd run: %v\nRun 'enforcerd run --help' for usage.\n", err)
		return exitUsage
	}
	if st, err := os.Stat(o.argv[0]); err == nil && st.IsDir() && strings.Contains(o.argv[0], "/") {
		fmt.Fprintf(stderr, "enforcerd run: %s: is a directory\n", o.argv[0])
		return exitNotExecutable
	}
	bin, err := exec.LookPath(o.argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "enforcerd run: %v\n", err)
		if errors.Is(err, os.ErrPermission) {
			return exitNotExecutable
		}
		return exitNotFound
	}
	return enforceAndRun(o, bin, stderr)
}

// enforceAndRun installs the ceiling and runs the command. Every failure
// before the command starts returns exitCannotEnforce: CMD never ran.
func enforceAndRun(o runOptions, bin string, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "enforcerd run: cannot enforce: "+format+"\n", a...)
		return exitCannotEnforce
	}
	if o.ceiling.Shell == policy.ShellNone {
		// Before anything is set up: an allowed program that runs every
		// other one without exec would empty the ceiling.
		if err := progcheck.CheckHost(append([]string{bin}, o.execAllow...)...); err != nil {
			return fail("shell=none: %v", err)
		}
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		return fail("%v", err)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: o.pinDir, CgroupMount: mount, VerifierLog: verifierLog(stderr)})
	if err != nil {
		return fail("%v", err)
	}
	defer enf.Close()
	cov := enf.Coverage(o.ceiling)
	if err := cov.Err(o.auditOnly, o.allowPartial); err != nil {
		if errors.Is(err, enforcer.ErrPartialCoverage) {
			return fail("%v (--allow-partial)", err)
		}
		return fail("%v", err)
	}
	if o.auditOnly && !cov.Full() {
		fmt.Fprintf(stderr, "enforcerd run: warning: audit-only, and some would-be denials cannot even be observed here: %s\n", strings.Join(gapLines(cov.Gaps()), "; "))
	} else if len(cov.Partial) > 0 {
		// Only reached with --allow-partial: the daemon, if one runs,
		// must allow partial coverage too (its operator's choice caps
		// this flag).
		if err := daemonAllowsPartial(o.socket); err != nil {
			return fail("--allow-partial: %v", err)
		}
		fmt.Fprintf(stderr, "enforcerd run: partial coverage (--allow-partial): NOT enforced: %s\n", strings.Join(gapLines(cov.Partial), "; "))
	}
	parent := o.cgroupParent
	if parent == "" {
		if parent, err = cgroup.PidGroup(os.Getpid()); err != nil {
			return fail("%v", err)
		}
	} else if _, err := cgroup.Open(mount, parent); err != nil {
		return fail("--cgroup-parent: %v", err)
	}
	cg, err := cgroup.Create(mount, path.Join(parent, fmt.Sprintf("enforcerd-run-%d", os.Getpid())))
	if err != nil {
		return fail("%v", err)
	}
	registered := false
	defer func() {
		// Kill what is left in the cgroup first, and only then lift the
		// ceiling: the other order would leave stragglers (daemonized
		// children) unenforced in between. If they cannot be killed, the
		// ceiling stays registered.
		if err := cg.Remove(5 * time.Second); err != nil {
			fmt.Fprintf(stderr, "enforcerd run: cleanup: %v (the ceiling stays registered)\n", err)
			return
		}
		if registered {
			if err := enf.Unregister(cg.ID); err != nil {
				fmt.Fprintf(stderr, "enforcerd run: cleanup: %v\n", err)
			}
		}
	}()
	outer, err := outerCeilings(enf, mount, parent)
	if err != nil {
		return fail("%v", err)
	}
	for _, oc := range outer {
		if meet := o.ceiling.Clamp(oc.entry.Ceiling); meet != o.ceiling {
			fmt.Fprintf(stderr, "enforcerd run: nested in registered cgroup %s, whose ceiling %s narrows this run's %s to %s\n", oc.cg, oc.entry.Ceiling, o.ceiling, meet)
		}
	}
	entry := enforcer.Entry{Ceiling: o.ceiling, AuditOnly: o.auditOnly, Pending: enf.CanActivateAtExec(),
		AllowPartial: len(cov.Partial) > 0}
	for _, p := range o.execAllow {
		id, err := enforcer.FileIDOf(p)
		if err != nil {
			return fail("--exec-allow: %v", err)
		}
		entry.ExecAllow = append(entry.ExecAllow, id)
	}
	if o.ceiling.Shell == policy.ShellNone && !entry.Pending {
		// Without activation at exec the entrypoint must be listed.
		id, err := enforcer.FileIDOf(bin)
		if err != nil {
			return fail("%v", err)
		}
		entry.ExecAllow = append(entry.ExecAllow, id)
	}
	// Before the registration: CMD inherits it from this process (Go
	// cannot set a limit between fork and exec), and a failure leaves
	// nothing registered.
	if err := limitCore(0); err != nil {
		return fail("%v", err)
	}
	if err := enf.Register(cg, entry); err != nil {
		return fail("%v", err)
	}
	registered = true

	done := make(chan struct{})
	var rd *enforcer.Reader
	switch {
	case o.quiet:
	case daemonRunning(o.socket):
		// The denial ring buffer has one reader in practice: taking
		// records here would remove them from the daemon's audit trail.
		fmt.Fprintf(stderr, "enforcerd run: the enforcerd daemon (%s) records the denials of cgroup id %d in its audit log; not printing them here\n", o.socket, cg.ID)
	default:
		if rd, err = enf.NewReader(); err != nil {
			return fail("%v", err)
		}
		go printDenials(rd, denialFilter(cg, outer), stderr, done)
	}
	lostBefore, _ := enf.LostRecords()

	dir, err := cg.OpenDir()
	if err != nil {
		return fail("%v", err)
	}
	cmd := exec.Command(bin, o.argv[1:]...)
	cmd.Args[0] = o.argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	err = cmd.Start()
	dir.Close()
	if err != nil {
		if rd != nil {
			rd.Close()
		}
		fmt.Fprintf(stderr, "enforcerd run: %v\n", err)
		return startExit(err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	werr := cmd.Wait()
	if rd != nil {
		// Hooks write records synchronously: all of CMD's are in the ring.
		_ = rd.Flush()
		<-done
		rd.Close()
		if lost, err := enf.LostRecords(); err == nil && lost > lostBefore {
			fmt.Fprintf(stderr, "enforcerd run: %d denial records were lost (ring buffer full); every one of those operations was still denied\n", lost-lostBefore)
		}
	}
	return exitStatus(cmd, werr, stderr)
}

func exitStatus(cmd *exec.Cmd, err error, stderr io.Writer) int {
	if cmd.ProcessState == nil {
		fmt.Fprintf(stderr, "enforcerd run: %v\n", err)
		return exitFailure
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// printable escapes control characters, backslashes and invalid UTF-8 (as
// strconv.Quote does, without the quotes) so untrusted names stay on one
// line and cannot inject terminal sequences.
func printable(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// daemonRunning reports whether something accepts connections on the
// daemon's socket.
func daemonRunning(socket string) bool {
	c, err := net.DialTimeout("unix", socket, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// printDenials prints each record keep accepts until the reader is closed
// or its deadline passes. by names the registered cgroup whose ceiling
// decided ("" when it is this run's own).
func printDenials(rd *enforcer.Reader, keep func(enforcer.Denial) (by string, ok bool), w io.Writer, done chan<- struct{}) {
	defer close(done)
	for {
		d, err := rd.Read()
		if err != nil {
			return
		}
		by, ok := keep(d)
		if !ok {
			continue
		}
		verb := "denied"
		if d.Audited {
			verb = "audit: would deny"
		}
		if by != "" {
			by = " by the ceiling of " + by
		}
		// Names come from the sandbox: escape them so that a file name
		// or comm cannot forge a line or drive the terminal.
		fmt.Fprintf(w, "enforcerd: %s %s %s (%s)%s pid=%d comm=%s\n", verb, d.Operation(), printable(d.Object.String()), d.Hook, by, d.TGID, printable(d.Comm))
	}
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

// gapLines renders coverage gaps for a message.
func gapLines(gs []enforcer.Gap) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.String()
	}
	return out
}

// daemonAllowsPartial returns nil when no daemon answers at socket or the
// one that answers allows partial coverage (allow_partial: true), else why
// not. A daemon that answers but whose status cannot be read refuses (fail
// closed).
func daemonAllowsPartial(socket string) error {
	if !daemonRunning(socket) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := api.NewClient(socket, 5*time.Second).Status(ctx)
	if err != nil {
		return fmt.Errorf("the enforcerd daemon at %s answers but its status cannot be read (%v): refusing partial coverage", socket, err)
	}
	if !st.AllowPartial {
		return fmt.Errorf("the enforcerd daemon at %s does not allow partial coverage (allow_partial is not true in its configuration), which caps this flag", socket)
	}
	return nil
}

// outerCeiling is a registered cgroup at or above the cgroup a run creates
// its own under.
type outerCeiling struct {
	cg    cgroup.Cgroup
	entry enforcer.Entry
}

// outerCeilings lists the registered cgroups from group up to the root of
// the cgroup2 hierarchy at mount, nearest first: their ceilings also apply
// to a cgroup created under group (the kernel takes the meet).
func outerCeilings(enf *enforcer.Enforcer, mount, group string) ([]outerCeiling, error) {
	var out []outerCeiling
	for g := path.Clean(group); g != "/" && g != "."; g = path.Dir(g) {
		cg, err := cgroup.Open(mount, g)
		if err != nil {
			return nil, err
		}
		en, err := enf.Lookup(cg.ID)
		if errors.Is(err, enforcer.ErrNotRegistered) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, outerCeiling{cg: cg, entry: en})
	}
	return out, nil
}

// denialFilter accepts the denials of run's own ceiling (cgroup cg), and
// those an outer registered ceiling decided for a process inside cg's
// subtree (attributed to that cgroup).
func denialFilter(cg cgroup.Cgroup, outer []outerCeiling) func(enforcer.Denial) (string, bool) {
	byID := map[uint64]string{}
	for _, oc := range outer {
		byID[oc.cg.ID] = oc.cg.String()
	}
	inside := map[uint64]bool{cg.ID: true}
	return func(d enforcer.Denial) (string, bool) {
		if d.CeilingCgroupID == cg.ID {
			return "", true
		}
		by, ok := byID[d.CeilingCgroupID]
		if !ok {
			return "", false
		}
		if known, seen := inside[d.CgroupID]; seen {
			return by, known
		}
		// A sub-cgroup CMD made: look for it under cg (cached).
		found := false
		_ = filepath.WalkDir(cg.Path(), func(p string, e fs.DirEntry, err error) error {
			if err != nil || found || !e.IsDir() {
				return nil
			}
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil && st.Ino == d.CgroupID {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		inside[d.CgroupID] = found
		return by, found
	}
}
