// Package run is "enforcerd run": one command tree under a ceiling, through
// package sandbox, registered through the daemon when one reads the same
// pins (daemon.go). It imports the library packages and cmd/enforcerd/cli,
// no other command's package.
package run

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/devallow"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/policy"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/entry"
)

const runUsage = `Usage: enforcerd run [flags] -- CMD [ARG...]

Run CMD in a fresh cgroup whose ceiling is enforced in the kernel by eBPF
(BPF LSM hooks, and cgroup-BPF socket hooks). Every process CMD starts, and
every sub-cgroup it creates, is held to the same ceiling. The ceiling takes
effect at enforcerd's exec of CMD, before CMD's first instruction. CMD runs
with RLIMIT_CORE 1 (soft and hard): the kernel then never runs a core_pattern
pipe helper for it.

Each denied operation is printed to stderr as it happens (unless a daemon
using the same pins records it in its audit log, or -q):
  enforcerd: denied <operation> <object> (<hook>, rule <rule>)[ by the ceiling of GROUP (id N)] pid=N comm=NAME
where a file object reads "PATH (dev M:N ino I)", <rule> is the ceiling's
rule that denied it (network, write, shell, ...), and the by-part names an
outer registered cgroup whose ceiling decided; with --audit-only the verb is
"audit: would deny".

Flags:
  --role ROLE            start from the role's requested ceiling (general,
                         explore, planner, reviewer, implement, test, advisor,
                         custom, a legacy alias or an org-chart title; ASCII
                         case-insensitive). Any other name, empty included,
                         is a usage error listing the valid names: CMD never
                         runs. Default: no restriction.
  --network allow|deny   network ceiling (also true|false)
  --write allow|deny     write ceiling (also true|false)
` + writeRootsUsage + allowDeviceUsage + `  --shell none|read_only|full
                         shell ceiling. none: CMD and the --exec-allow
                         files are the only programs that may be
                         executed; run refuses (exit 125) when one of them
                         is a shell, a multi-call binary (BusyBox, toybox,
                         a single-binary coreutils) or the dynamic loader,
                         recognised by content, not name: each runs every
                         other program without an exec. A script (#!) is
                         judged by its interpreter, which must itself be
                         an --exec-allow file (the kernel denies it
                         otherwise); an ELF's program interpreter must be
                         a dynamic loader
  --exec-allow PATH      with --shell=none: another binary CMD may exec
                         (repeatable; matched by device and inode). An
                         interpreter allowed here (python, node, perl)
                         runs whatever code it is given: allow one only if
                         that is intended
  --allow-connect ADDR   with --network=deny: an endpoint CMD may still
                         reach (repeatable, at most 16). ADDR is
                           tcp:IP:PORT, tcp:[IPv6]:PORT   a TCP peer
                           udp:IP:PORT, udp:[IPv6]:PORT   a UDP peer
                           unix:/PATH                     a bound unix socket
                         IP is a literal address (an IPv4-mapped IPv6
                         address is the IPv4 address), PORT 1-65535. A
                         tcp/udp endpoint allows creating a socket of that
                         kind, connecting it or sending to the endpoint,
                         and reading and writing that connection; nothing
                         else: no bind, listen or accept, no other address,
                         port or protocol (a tcp endpoint does not open UDP
                         to the same port), no socket options or control
                         messages that route packets elsewhere. A UDP socket
                         receives only once connected to a listed endpoint.
                         unix:/PATH names the socket file at PATH when run
                         starts (device and inode): a socket re-created at
                         that path later stays denied; PATH must exist and
                         be a socket. Abstract unix sockets are never an
                         endpoint. Inside a registered cgroup only what
                         every enclosing ceiling also lists is reachable.
  --deny-console-egress  with --network=deny: CMD's own terminals that leave
                         the machine (the system console, a serial line: on
                         a cloud VM the provider's serial log, or a
                         hypervisor console) are refused like a network
                         (no write, no ioctl but the read-only ones); off
                         by default, so run from a serial login keeps its
                         terminal. The daemon's deny_console_egress turns
                         it on for runs registered through it
  --audit-only           do not deny: run CMD and report would-be denials
  --allow-partial        accept a ceiling this host enforces only in part
                         (without BPF LSM CMD restricts itself with
                         Landlock and seccomp before its exec: unix sockets,
                         descriptors opened before run, code mapped with
                         mmap, truncation before Landlock ABI 3 and a root
                         CMD leaving its cgroup are not covered, and
                         shell=read_only needs write=deny; "enforcerd
                         check" lists the gaps of this host). Without
                         it such a ceiling is refused (exit 125) and the
                         message names what would not be enforced. The
                         enforcerd daemon's configuration caps this flag:
                         it records allow_partial in the pin directory at
                         start, and with allow_partial: false there,
                         --allow-partial is refused too (also when the
                         daemon is stopped, or --socket names another
                         path).
  --cgroup-parent GROUP  cgroup v2 path to create the transient cgroup under
                         (default: enforcerd's own cgroup)
  --pin-dir DIR          bpffs directory of the pinned programs and maps
                         (default /sys/fs/bpf/enforcerd)
  --socket PATH          the enforcerd daemon's API socket (default
                         /run/enforcerd/enforcerd.sock). When a daemon
                         using the same --pin-dir answers there, run
                         registers its cgroup through it (POST
                         /v1/containers, id enforcerd-run-<pid>-<cgroup
                         id>: listed by "enforcerd ctl list" while CMD
                         runs, removed after; CMD starts as an enforcerd
                         process inside the cgroup that execs CMD only once
                         the daemon accepted); a refusal of the daemon is
                         exit 125, naming its error code, and so is an
                         answer wider than asked (ceiling or exec allow
                         list). With more than 16 --exec-allow files, or
                         when CMD restricts itself (no BPF LSM), run
                         registers directly, as without a daemon. The daemon reads the denial records into
                         its audit log (a record has one reader), and run
                         prints this run's records from the daemon's stream
                         (GET /v1/denials?cgroup_id=ID) instead.
  --linux-audit          also send each denial record run reads itself (no
                         daemon on the pins) to the Linux audit trail as an
                         AUDIT_USER_AVC message (ausearch -m USER_AVC;
                         container=enforcerd-run-PID-CGROUPID), also with
                         -q. Needs CAP_AUDIT_WRITE in the initial user
                         namespace: without it run says so once and runs
                         CMD all the same. With a daemon reading the
                         records, its audit.linux_audit decides instead.
                         Without BPF LSM (CMD restricts itself with
                         Landlock and seccomp) there are no records to send:
                         the seccomp filter's denials are the kernel's own
                         AUDIT_SECCOMP records, which a running daemon
                         also reads into its audit log; Landlock's are not
                         recorded
  -q, --quiet            print neither denials nor the banners of what
                         the flags chose (what --allow-partial or
                         --audit-only leave unenforced or unseen, the
                         process layer); errors are still printed

--role and the explicit flags clamp together: the result is never wider than
either. When --cgroup-parent (or enforcerd's own cgroup) lies inside a
registered cgroup, that ceiling also applies to CMD (the meet of both, the
narrowest of each field); run then says which fields it narrows, and prints
the denials it decides for CMD's processes as well.

Fail closed: a field this host cannot enforce at all (write=deny or a shell
ceiling without BPF LSM, and without Landlock and seccomp) is always
refused with exit 125; a field it enforces only in part is refused unless
--allow-partial is given (see "enforcerd check"). CMD never runs when
enforcerd exits 125. Without BPF LSM, CMD is started through a helper (the
enforcerd binary itself) that sets no_new_privs, applies a Landlock ruleset
and a seccomp filter, then execs CMD.

Exit status:
  CMD's own status (128+N when killed by signal N)
  2    usage error (bad flag or value, missing --, an --exec-allow
       or --write-root path that does not exist, an --allow-device path
       that is not a device node)
  125  enforcerd could not enforce the ceiling (also: under shell=none,
       CMD or an --exec-allow file runs other programs without exec);
       CMD never ran
  126  CMD is not executable (no permission, exec format error, denied)
  127  CMD was not found
`

// runOptions is a parsed run command line.
type runOptions struct {
	ceiling      policy.KernelCeiling
	auditOnly    bool
	allowPartial bool
	quiet        bool
	linuxAudit   bool // --linux-audit
	execAllow    []string
	allowConnect []endpoint.Endpoint // resolved
	writeRoots   []string            // --write-root, as given
	writeRootIDs []entry.FileID      // their identities (writeRootIDs)
	allowDevices []devallow.Device   // --allow-device, resolved
	denyConsole  bool                // --deny-console-egress
	cgroupParent string
	pinDir       string
	socket       string
	argv         []string // CMD [ARG...], after "--"
}

// runFlags are run's flags as given.
type runFlags struct {
	role           string
	network, write cli.CeilingBool
	shell          cli.ShellFlag
	allowConnect   []string
	allowDevices   []string
	o              runOptions
}

// newRunCmd builds "enforcerd run"; do runs the parsed command line and
// returns the exit status (runSandboxed; tests substitute it).
func NewCommand(s cli.Streams, do func(runOptions, cli.Streams) int) *cobra.Command {
	var f runFlags
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "run",
		Summary: "run one command tree under a ceiling, enforced in the kernel",
		Help:    runUsage,
		Args:    cobra.ArbitraryArgs, // CMD after "--": runFlags.options checks
		Run: func(c *cobra.Command, args []string) error {
			o, err := f.options(c, args)
			if err != nil {
				return err
			}
			if err := cli.NeedsRoot("loading, pinning and attaching eBPF programs"); err != nil {
				fmt.Fprintf(s.Err, "enforcerd run: %v\n", err)
				return cli.ExitCode(cli.ExitCannotEnforce)
			}
			return cli.ExitCode(do(o, s))
		},
	})
	fs := c.Flags()
	cli.RoleFlag(fs, &f.role)
	fs.Var(&f.network, "network", "network ceiling")
	fs.Var(&f.write, "write", "write ceiling")
	fs.Var(&f.shell, "shell", "shell ceiling")
	fs.StringArrayVar(&f.o.execAllow, "exec-allow", nil, "with --shell=none: another binary CMD may exec (repeatable)")
	fs.StringArrayVar(&f.allowConnect, "allow-connect", nil, "with --network=deny: an endpoint CMD may still reach: tcp:IP:PORT, udp:IP:PORT, unix:/PATH (repeatable, at most 16)")
	fs.StringArrayVar(&f.o.writeRoots, "write-root", nil, "with --write=deny: a directory beneath which writes stay allowed (repeatable)")
	fs.StringArrayVar(&f.allowDevices, "allow-device", nil, "a device node CMD may use: c MAJOR:MINOR, b MAJOR:MINOR or /dev/PATH (repeatable, at most 16)")
	fs.BoolVar(&f.o.denyConsole, "deny-console-egress", false, "with --network=deny: refuse writes to an own terminal that leaves the machine (console, serial line)")
	fs.BoolVar(&f.o.auditOnly, "audit-only", false, "do not deny: report would-be denials")
	fs.BoolVar(&f.o.allowPartial, "allow-partial", false, "accept a ceiling this host enforces only in part")
	fs.StringVar(&f.o.cgroupParent, "cgroup-parent", "", "cgroup v2 path to create the transient cgroup under")
	cli.PinDirFlag(fs, &f.o.pinDir)
	cli.SocketFlag(fs, &f.o.socket)
	fs.BoolVarP(&f.o.quiet, "quiet", "q", false, "do not print denials")
	fs.BoolVar(&f.o.linuxAudit, "linux-audit", false, "also send each denial run reads to the Linux audit trail (AUDIT_USER_AVC; needs CAP_AUDIT_WRITE)")
	return c
}

// options checks run's positional arguments (CMD must follow "--"; nothing
// before it) and computes the ceiling: the role's requested ceiling (or no
// restriction) clamped by --network, --write and --shell, so that a flag
// can only narrow. Errors are usage errors.
func (f *runFlags) options(c *cobra.Command, args []string) (runOptions, error) {
	o := f.o
	dash := c.ArgsLenAtDash()
	before := args
	if dash >= 0 {
		before = args[:dash]
	}
	if len(before) > 0 {
		return o, cli.UsageErrorf("unexpected argument %q before --", before[0])
	}
	if dash < 0 {
		return o, cli.UsageError{Err: errors.New("missing -- before the command (enforcerd run [flags] -- CMD [ARG...])")}
	}
	o.argv = args[dash:]
	if len(o.argv) == 0 {
		return o, cli.UsageError{Err: errors.New("missing command after --")}
	}
	ceiling := policy.DefaultSession()
	if c.Flags().Changed("role") {
		res, err := policy.LookupRole(f.role)
		if err != nil {
			return o, cli.UsageErrorf("--role: %w", err)
		}
		ceiling = policy.RequestedCeiling(res.Role, policy.DefaultSession())
	}
	k := ceiling.Kernel()
	if c.Flags().Changed("network") {
		k = k.Clamp(policy.KernelCeiling{Network: f.network.Val, Write: true, Shell: policy.ShellFull})
	}
	if c.Flags().Changed("write") {
		k = k.Clamp(policy.KernelCeiling{Network: true, Write: f.write.Val, Shell: policy.ShellFull})
	}
	if c.Flags().Changed("shell") {
		k = k.Clamp(policy.KernelCeiling{Network: true, Write: true, Shell: f.shell.Val})
	}
	if len(o.execAllow) > 0 && k.Shell != policy.ShellNone {
		return o, cli.UsageError{Err: fmt.Errorf("--exec-allow needs --shell=none (the ceiling's shell is %s)", k.Shell)}
	}
	if len(f.allowConnect) > 0 {
		if k.Network {
			return o, cli.UsageError{Err: errors.New("--allow-connect needs --network=deny (network is allowed: the list would mislead)")}
		}
		eps, err := endpoint.ParseList(f.allowConnect)
		if err != nil {
			return o, cli.UsageErrorf("--allow-connect: %w", err)
		}
		if o.allowConnect, err = endpoint.Resolve(eps, "/"); err != nil {
			return o, cli.UsageErrorf("--allow-connect: %w", err)
		}
	}
	ids, err := writeRootIDs(o.writeRoots, k)
	if err != nil {
		return o, err
	}
	if o.allowDevices, err = allowDevices(f.allowDevices); err != nil {
		return o, err
	}
	if o.denyConsole && k.Network {
		return o, cli.UsageError{Err: errors.New("--deny-console-egress needs --network=deny (network is allowed: the console would be the least of it)")}
	}
	o.writeRootIDs = ids
	o.ceiling = k
	return o, nil
}
