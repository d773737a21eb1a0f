// Package nspawn is "enforcerd nspawn": a systemd-nspawn machine registered
// pending with the daemon before nspawn starts, one-off or as ExecStartPre.
// It imports the library packages and cmd/enforcerd/cli, no other command's
// package.
package nspawn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/oci"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const nspawnUsage = `Usage: enforcerd nspawn [flags] -- SYSTEMD-NSPAWN-ARG...
       enforcerd nspawn --prestart MACHINE [flags]

Confines a systemd-nspawn machine from its first instruction. systemd-nspawn
runs no OCI hooks; it forks an inner child (the machine's future PID 1),
moves it into the payload cgroup <machine>/payload beside its own
<machine>/supervisor, and the inner child sets the machine up there
(mounts, loopback, capabilities) before it execs the machine's command.
enforcerd registers <machine>/payload with the daemon before nspawn starts,
pending until the first exec in it: the ceiling is in force from the
command's first instruction, nspawn itself (the supervisor) stays outside
it. The registration names systemd-nspawn as its setup program: while it
is pending, a process in the payload that still runs the systemd-nspawn
binary (device + inode: it has not exec'd) and descends from one running
it outside the payload but inside <machine> is expected; any other process
there puts the ceiling in force at once.

<machine> is enforcerd's own cgroup (a trailing /supervisor or /.control
removed, as nspawn and systemd name them); it must not be the root. The
payload cgroup is created if missing, and reused as nspawn reuses it.

enforcerd nspawn [flags] -- SYSTEMD-NSPAWN-ARG...
    A one-off machine. Registers, then execs systemd-nspawn --keep-unit
    with the arguments (nspawn keeps the cgroup enforcerd runs in). Run it
    in a delegated cgroup of its own, e.g.
      systemd-run --scope -p Delegate=yes enforcerd nspawn --ceiling network=false -- -D /srv/agent /usr/bin/agent
    The arguments must give -D DIR and the machine's command (what the
    daemon resolves: the command under shell=none, --write-root and
    --exec-allow paths, all inside DIR). Refused: -b/--boot (a booting
    init mounts, which every ceiling denies), --oci-bundle (nspawn never
    runs its hooks), -i/--image, -x/--ephemeral, --template. The
    registration stays after the machine ends until the daemon drops it
    with its cgroup, or enforcerd ctl unregister ID. systemd-nspawn runs
    with SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 unless that is set (the
    machine stays on the host's cgroup2 hierarchy even when its tree has
    no systemd; the drop-in sets it for the unit).

enforcerd nspawn --prestart MACHINE
    For ExecStartPre= of systemd-nspawn@MACHINE.service (deploy/nspawn):
    registers the unit's payload cgroup and exits; the unit's ExecStart
    then starts nspawn. The stock unit boots the machine (--boot with
    --settings=override, under which a .nspawn file's settings win): the
    first of /etc/systemd/nspawn/MACHINE.nspawn and
    /run/systemd/nspawn/MACHINE.nspawn must say Boot=no in [Exec], and
    Parameters= gives the machine's command (its first word is the
    program the first exec runs). Without that file or with Boot= other
    than no, the start is refused before anything is registered. The
    drop-in gives --ceiling and further flags from the machine's
    /etc/enforcerd/nspawn/MACHINE.env (ENFORCERD_CEILING,
    ENFORCERD_NSPAWN_FLAGS).

Flags:
  --id ID              the registration's id (default nspawn-MACHINE; the
                       machine name is --machine's, else -D's base name)
  --role NAME          role (see enforcerd hook --help, enforcerd.io/role)
  --ceiling TEXT       ceiling text, e.g. network=false,write=false,shell=none
  --write-root PATH    with write=false: a directory inside the machine
                       (its path as the machine sees it) beneath which
                       writes stay allowed (repeatable, at most 16)
  --exec-allow PATH    with shell=none: another file inside the machine
                       its processes may execute (repeatable, at most 16)
  --allow-connect EP   with network=false: an endpoint the machine may
                       still reach (tcp:IP:PORT, udp:IP:PORT; repeatable)
  --audit-only         record would-be denials, do not deny
  --prestart MACHINE   the unit mode above
  --directory DIR      with --prestart: the machine's root directory
                       (default /var/lib/machines/MACHINE)
  --nspawn PATH        the systemd-nspawn binary (default: systemd-nspawn
                       in PATH; the unit's ExecStart must run the same file)
  --socket PATH        daemon socket (default /run/enforcerd/enforcerd.sock)
  --timeout DURATION   limit for the daemon's answer (default 8s), the wait
                       for a restarting daemon included
  -h, --help           this help

Exit status:
  0    --prestart: registered (the one-off mode execs systemd-nspawn, whose
       status is the machine's)
  1    the daemon refused the registration (a conflict, a bad request) or
       another failure; nspawn was not started
  2    usage error: bad flags, a refused or malformed systemd-nspawn
       argument, a missing or booting .nspawn file
  125  the ceiling cannot be enforced or the daemon is unreachable; nspawn
       was not started
`

// nspawnFlags are enforcerd nspawn's flags as given.
type nspawnFlags struct {
	id, role, ceiling   string
	writeRoots          []string
	execAllow           []string
	allowConnect        []string
	auditOnly           bool
	prestart, directory string
	nspawn              string
	socket              string
	timeout             time.Duration
}

// nspawnMachine is one machine to register.
type nspawnMachine struct {
	name, directory string
	command         []string
	envPath, cwd    string
}

// nspawnExec replaces the process with systemd-nspawn (tests substitute it).
var nspawnExec = unix.Exec

// nspawnSelfGroup is enforcerd's own cgroup and nspawnCgroupMount the
// cgroup2 mount (tests substitute them).
var (
	nspawnSelfGroup   = func() (string, error) { return cgroup.PidGroup(os.Getpid()) }
	nspawnCgroupMount = cgroup.Mountpoint
)

// nspawnSettingsDirs are where --prestart looks for MACHINE.nspawn, in
// systemd-nspawn's order for trusted files (tests substitute them).
var nspawnSettingsDirs = []string{"/etc/systemd/nspawn", "/run/systemd/nspawn"}

func NewCommand(s cli.Streams) *cobra.Command {
	var f nspawnFlags
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:    "nspawn",
		Summary: "confine a systemd-nspawn machine from its first instruction (one-off, or ExecStartPre of systemd-nspawn@.service)",
		Help:    nspawnUsage,
		Args:    cobra.ArbitraryArgs,
		Run: func(c *cobra.Command, args []string) error {
			// An empty --ceiling (the drop-in's ENFORCERD_CEILING= set to
			// nothing) would register the default session: no ceiling.
			if c.Flags().Changed("ceiling") && strings.TrimSpace(f.ceiling) == "" {
				return cli.UsageErrorf("--ceiling is empty: give a ceiling such as network=false (an empty one would leave the machine unconfined)")
			}
			return cli.ExitCode(runNspawn(f, c.ArgsLenAtDash(), args, s))
		},
	})
	fs := c.Flags()
	fs.StringVar(&f.id, "id", "", "registration id (default nspawn-MACHINE)")
	cli.RoleFlag(fs, &f.role)
	fs.StringVar(&f.ceiling, "ceiling", "", "ceiling text, e.g. network=false,write=false")
	fs.StringArrayVar(&f.writeRoots, "write-root", nil, "with write=false: a directory inside the machine beneath which writes stay allowed (repeatable)")
	fs.StringArrayVar(&f.execAllow, "exec-allow", nil, "with shell=none: another file inside the machine it may execute (repeatable)")
	fs.StringArrayVar(&f.allowConnect, "allow-connect", nil, "with network=false: an endpoint the machine may still reach (repeatable)")
	fs.BoolVar(&f.auditOnly, "audit-only", false, "do not deny: report would-be denials")
	fs.StringVar(&f.prestart, "prestart", "", "register systemd-nspawn@MACHINE.service's payload and exit (ExecStartPre=)")
	fs.StringVar(&f.directory, "directory", "", "with --prestart: the machine's root directory (default /var/lib/machines/MACHINE)")
	fs.StringVar(&f.nspawn, "nspawn", "", "the systemd-nspawn binary (default: systemd-nspawn in PATH)")
	cli.SocketFlag(fs, &f.socket)
	fs.DurationVar(&f.timeout, "timeout", api.DefaultHookTimeout, "limit for the daemon's answer")
	return c
}

// runNspawn runs enforcerd nspawn and returns its exit status (the
// one-off mode only returns when it could not exec systemd-nspawn).
func runNspawn(f nspawnFlags, dash int, args []string, s cli.Streams) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(s.Err, "enforcerd nspawn: "+format+"\n", a...)
		return code
	}
	m, nspawnArgv, err := f.machine(dash, args)
	if err != nil {
		if f.prestart == "" {
			return fail(cli.ExitUsage, "%v\nRun 'enforcerd nspawn --help' for usage.", err)
		}
		return fail(cli.ExitUsage, "%v", err)
	}
	bin := f.nspawn
	if bin == "" {
		if bin, err = exec.LookPath("systemd-nspawn"); err != nil {
			return fail(cli.ExitUsage, "systemd-nspawn: %v (give --nspawn PATH)", err)
		}
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return fail(cli.ExitUsage, "--nspawn: %v", err)
	}
	id := f.id
	if id == "" {
		id = "nspawn-" + m.name
	}
	if !oci.ValidID(id) {
		return fail(cli.ExitUsage, "registration id %q is not [A-Za-z0-9][A-Za-z0-9_.+:-]{0,255} (give --id)", id)
	}
	payload, created, err := nspawnPayload()
	if err != nil {
		return fail(cli.ExitCannotEnforce, "%v", err)
	}
	removePayload := func() {
		if created != "" {
			_ = os.Remove(created) // empty: nothing entered it
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	client := cli.NewHookClient(f.socket, f.timeout)
	c, err := client.C.Register(ctx, api.RegisterRequest{
		ID: id, Cgroup: payload, Role: f.role, Ceiling: f.ceiling, AuditOnly: f.auditOnly,
		Activate: api.ActivateExec, SetupProgram: bin,
		Entrypoint:   &api.Entrypoint{Path: m.command[0], Root: m.directory, EnvPath: m.envPath, Cwd: m.cwd},
		AllowConnect: f.allowConnect, WriteRoots: f.writeRoots, ExecAllow: f.execAllow,
	})
	if err != nil {
		removePayload()
		return fail(cli.HookExit(err), "machine %s: refusing to start it: %v", m.name, err)
	}
	fmt.Fprintf(s.Err, "enforcerd nspawn: machine %s registered as %s: cgroup %s (id %d), kernel %s, audit_only=%t, fingerprint %s, activation %s\n",
		m.name, c.ID, c.Cgroup, c.CgroupID, c.Kernel, c.AuditOnly, c.Fingerprint, c.Activation)
	for _, g := range c.Unenforced {
		fmt.Fprintf(s.Err, "enforcerd nspawn: machine %s: partial coverage (the daemon allows it): NOT enforced: %s\n", m.name, g)
	}
	if c.ActivationReason != "" {
		fmt.Fprintf(s.Err, "enforcerd nspawn: machine %s: in force at once: %s\n", m.name, c.ActivationReason)
	}
	if f.prestart != "" {
		return cli.ExitOK
	}
	err = nspawnExec(bin, append([]string{"systemd-nspawn"}, nspawnArgv...), nspawnEnv(os.Environ()))
	// Not started: take the registration back.
	if _, uerr := client.Unregister(context.Background(), id); uerr != nil {
		fmt.Fprintf(s.Err, "enforcerd nspawn: machine %s: unregister %s after the failed exec: %v\n", m.name, id, uerr)
	}
	removePayload()
	return fail(cli.ExitCannotEnforce, "exec %s: %v", bin, err)
}

// nspawnUnifiedEnv makes systemd-nspawn keep the machine on the host's
// cgroup2 hierarchy. Without it nspawn looks for systemd (>= 230) in the
// machine's tree, and a tree without one (an agent's, which does not
// boot) gets a legacy name=systemd hierarchy, mounted on the host for the
// rest of its life. enforcerd needs cgroup2 (its programs are keyed by
// cgroup id), so this is the only mode its machines run in.
const nspawnUnifiedEnv = "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY"

// nspawnEnv is env with nspawnUnifiedEnv=1 added when env does not set it
// (an operator's value is kept).
func nspawnEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, nspawnUnifiedEnv+"=") {
			return env
		}
	}
	return append(env, nspawnUnifiedEnv+"=1")
}

// machine checks the command line and names the machine: from the
// systemd-nspawn arguments after "--" (one-off; nspawnArgv is them with
// --keep-unit added), or from MACHINE's .nspawn file (--prestart).
// Errors are usage errors.
func (f nspawnFlags) machine(dash int, args []string) (m nspawnMachine, nspawnArgv []string, err error) {
	before := args
	if dash >= 0 {
		before = args[:dash]
	}
	if len(before) > 0 {
		return m, nil, fmt.Errorf("unexpected argument %q before --", before[0])
	}
	if f.prestart != "" {
		if dash >= 0 {
			return m, nil, errors.New("--prestart takes no systemd-nspawn arguments (the unit's ExecStart has them)")
		}
		return prestartMachine(f.prestart, f.directory)
	}
	if f.directory != "" {
		return m, nil, errors.New("--directory is only for --prestart (give -D DIR to systemd-nspawn)")
	}
	if dash < 0 {
		return m, nil, errors.New("missing -- before the systemd-nspawn arguments (enforcerd nspawn [flags] -- -D DIR CMD [ARG...])")
	}
	a, err := parseNspawnArgs(args[dash:])
	if err != nil {
		return m, nil, err
	}
	m = nspawnMachine{name: a.machine, directory: a.directory, command: a.command, envPath: a.envPath, cwd: a.chdir}
	if m.name == "" {
		m.name = filepath.Base(filepath.Clean(a.directory))
	}
	nspawnArgv = args[dash:]
	if !a.keepUnit {
		nspawnArgv = append([]string{"--keep-unit"}, nspawnArgv...)
	}
	return m, nspawnArgv, nil
}

// prestartMachine reads systemd-nspawn@NAME.service's machine from the
// first of nspawnSettingsDirs' NAME.nspawn files: it must say Boot=no
// and give Parameters= (the machine's command).
func prestartMachine(name, dir string) (nspawnMachine, []string, error) {
	m := nspawnMachine{name: name, envPath: nspawnDefaultPath}
	if !oci.ValidID(name) || strings.ContainsAny(name, "/") {
		return m, nil, fmt.Errorf("--prestart %q is not a machine name", name)
	}
	m.directory = dir
	if dir == "" {
		m.directory = filepath.Join("/var/lib/machines", name)
	}
	var file string
	var text []byte
	for _, d := range nspawnSettingsDirs {
		p := filepath.Join(d, name+".nspawn")
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return m, nil, err
		}
		file, text = p, b
		break
	}
	if file == "" {
		return m, nil, fmt.Errorf("machine %s: no %s.nspawn in %s: systemd-nspawn@.service boots the machine (--boot), and a booting machine's init (PID 1) mounts file systems, which every ceiling denies; write one with [Exec] Boot=no and Parameters=AGENT-COMMAND (deploy/nspawn)",
			name, name, strings.Join(nspawnSettingsDirs, " or "))
	}
	st, err := parseNspawnSettings(string(text))
	if err != nil {
		return m, nil, fmt.Errorf("%s: %w", file, err)
	}
	if !st.bootSet || st.boot {
		return m, nil, fmt.Errorf("%s: the machine boots (systemd-nspawn@.service passes --boot, and the file does not say Boot=no in [Exec]): a booting machine's init (PID 1) mounts file systems, which every ceiling denies; set Boot=no and Parameters=AGENT-COMMAND", file)
	}
	if len(st.parameters) == 0 {
		return m, nil, fmt.Errorf("%s: no Parameters= in [Exec]: give the machine's command (nspawn's default, a shell, is what a ceiling's shell=none refuses)", file)
	}
	m.command = st.parameters
	return m, nil, nil
}

// nspawnPayload creates <machine>/payload below enforcerd's own cgroup
// (nspawn reuses an existing one) and returns its group path, and its
// directory when this call created it ("" when it existed).
func nspawnPayload() (group, created string, err error) {
	self, err := nspawnSelfGroup()
	if err != nil {
		return "", "", err
	}
	machine := path.Clean(self)
	for _, sfx := range []string{"/supervisor", "/.control"} {
		machine = strings.TrimSuffix(machine, sfx)
	}
	if machine == "/" || machine == "" || machine == "." {
		return "", "", fmt.Errorf("enforcerd runs in the root cgroup: run it in a delegated cgroup of its own (systemd-run --scope -p Delegate=yes enforcerd nspawn ..., or ExecStartPre= of systemd-nspawn@.service)")
	}
	mnt, err := nspawnCgroupMount()
	if err != nil {
		return "", "", err
	}
	group = path.Join(machine, "payload")
	dir := filepath.Join(mnt, group)
	switch err := os.Mkdir(dir, 0o755); {
	case err == nil:
		return group, dir, nil
	case errors.Is(err, os.ErrExist):
		return group, "", nil
	default:
		return "", "", fmt.Errorf("create the payload cgroup: %w", err)
	}
}
