// Package hook is "enforcerd hook": the OCI runtime hook that registers a
// container with the daemon at createRuntime and unregisters it at poststop.
// It imports the library packages and cmd/enforcerd/cli, no other command's
// package.
package hook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/cobra"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/progcheck"
	"github.com/enforcerd/enforcerd/sandbox"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

const hookUsage = `Usage: enforcerd hook [--socket PATH] [--timeout DURATION] createRuntime|prestart|poststop

An OCI runtime hook. The runtime writes the container's state JSON
(runtime-spec "State": ociVersion 1.x such as runc's "1.0.2-dev", id, pid,
bundle, annotations) on stdin.

createRuntime
    Reads the ceiling from the container's annotations, finds the
    container's cgroup from the state's pid (/proc/PID/cgroup), and
    registers it with the daemon. The ceiling takes effect at the
    container's first exec (its entrypoint), so the runtime's own init can
    finish setting up the container, and is in force before the
    entrypoint's first instruction. The state's pid is named as the
    runtime's init: if the cgroup holds any other process, the ceiling is
    in force at once instead; if no exec happens within the daemon's
    pending deadline, the daemon freezes the container. Before it asks
    the daemon or touches any process, the hook refuses a state whose pid
    is 1 or less, or whose pid is in the root cgroup or in the hook's own
    cgroup (or one above it). Once the daemon has accepted the
    registration, and before the hook answers, it sets the init's
    RLIMIT_CORE to 1 (soft and hard; the kernel then never runs a
    core_pattern pipe helper for the container's processes); when that
    fails, the hook unregisters the container and refuses it. A refused
    container's init is never touched. Exits non-zero, so the runtime
    refuses to start the container, when the daemon is unreachable, the
    state or the annotations are malformed, or the ceiling cannot be
    enforced.

    Under shell=none (the effective ceiling, after role, ceiling and
    parent) the program of that first exec is the only one the container
    may execute from then on. The hook names it to the daemon from the
    bundle's config.json (process.args[0], looked up with process.env's
    PATH and process.cwd inside root.path, seen through /proc/PID/root),
    and the daemon refuses it (exit 125) when it is a shell, a multi-call
    binary (BusyBox, toybox, a single-binary coreutils) or the dynamic
    loader, recognised by content (each runs every other program without
    an exec); when it is a script (#!), whose interpreter must itself be
    allowed and the daemon allows nothing else; when its ELF program
    interpreter is not a dynamic loader; when any file the PATH lookup
    could pick is one of these; or when config.json or a program cannot be
    read. Give such containers an entrypoint that is the agent itself.

    The init's standard input, output and error and its controlling
    terminal, when they are terminals, are declared as the container's
    own (the daemon reads them from the state's pid): the terminal a
    foreground runtime passes through. A console pty the runtime creates
    later inside the container (terminal: true) is a pty the container
    made from its /dev/ptmx. Every other terminal is a host device.

prestart
    The same as createRuntime, for runtimes that only run the (deprecated)
    prestart stage. It runs at the same point: the container's cgroup and
    init exist, its program has not started. systemd-nspawn --oci-bundle
    parses a bundle's hooks and never runs them: its machines are not
    confined by this hook (see enforcerd nspawn --help).

poststop
    Unregisters the container. A container the daemon does not know is not
    an error. When the daemon is unreachable, poststop gives up at once:
    a missing socket or a refused connection is not retried, and it waits
    at most 1 s (or --timeout, if shorter) for an answer; it then exits 1.
    Nothing is lost: the daemon's sweep drops the entry of a container
    whose cgroup is gone, and a refused container start does not pay the
    hook's timeout twice (createRuntime keeps --timeout and fails closed).

Annotations (at least one of role and a ceiling, enforcerd.io/ceiling or
a per-field key):
  enforcerd.io/role         role name (general, explore, planner, reviewer,
                            implement, test, advisor, custom, a legacy alias
                            or an org-chart title); any other value, empty
                            included, is malformed. Without it: general
  enforcerd.io/ceiling      ceiling text, e.g. network=false,write=false
                            (keys network, write, shell, tools, depth;
                            booleans true|false|allow|deny)
  enforcerd.io/network, enforcerd.io/write, enforcerd.io/shell,
  enforcerd.io/tools, enforcerd.io/depth
                            one ceiling field each (e.g.
                            enforcerd.io/network=false): the form without
                            commas, for runtimes that split --annotation at
                            commas (podman 4.3 turns
                            enforcerd.io/ceiling=network=false,write=false
                            into enforcerd.io/ceiling=network=false and a
                            stray write=false, which the hook refuses).
                            Merged with enforcerd.io/ceiling; a field both
                            give must have the same value
  enforcerd.io/parent       id of the parent container: the ceiling is
                            clamped by the parent's effective ceiling
  enforcerd.io/audit-only   true: record would-be denials, do not deny
  enforcerd.io/tool-groups  tool groups for the container's surface
  enforcerd.io/allow-connect
                            with network=false: comma-separated endpoints
                            the container may still reach (tcp:IP:PORT,
                            udp:IP:PORT, tcp:[IPv6]:PORT, unix:/PATH; at
                            most 16; see enforcerd run --help). A unix
                            PATH is the socket file inside the container's
                            root.path, resolved by the daemon at
                            createRuntime (through /proc/PID/root); it must
                            exist and be a socket. With network allowed the
                            annotation is an error
  enforcerd.io/write-roots  with write=false: comma-separated absolute
                            directories inside the container's root.path
                            beneath which writes stay allowed (at most 16;
                            see enforcerd run --help, --write-root),
                            resolved by the daemon at createRuntime; each
                            must exist. With write allowed the annotation
                            is an error
  enforcerd.io/exec-allow   with shell=none: comma-separated absolute paths
                            of files inside the container's root.path it
                            may execute besides its entrypoint (at most
                            16; see enforcerd run --help, --exec-allow),
                            resolved by the daemon at createRuntime inside
                            that root (no symlink leaves it) and kept by
                            device and inode. A shell, a multi-call binary
                            or the dynamic loader is refused
                            (unsafe_program); without shell=none the
                            annotation is an error
  enforcerd.io/allow-devices
                            comma-separated device nodes the container may
                            use besides the null-like devices (null, zero,
                            full, random, urandom) and its own terminals,
                            under every ceiling: c MAJOR:MINOR, b
                            MAJOR:MINOR, or an absolute path inside the
                            container's root.path resolved by the daemon
                            at createRuntime to its type and number (at
                            most 16; see enforcerd run --help,
                            --allow-device). Every other device is refused
                            in the kernel; the spec's linux.devices does
                            not add to this list
  enforcerd.io/proxy-allow  comma-separated domains: narrows the daemon's
                            egress proxy allow list for this container
                            (see enforcerd proxy --help)
  Ambiguity is an error, never resolved: a key given twice in the state
  JSON, a per-field key that disagrees with enforcerd.io/ceiling, a bare
  network, write, shell, tools or depth annotation beside a ceiling.
  Any other enforcerd.io/ key is an error, and so is a key with the prefix
  in another letter case (Enforcerd.io/ceiling, ENFORCERD.IO/ROLE):
  annotation keys are case-sensitive, and such a key is never ignored.

Flags:
  --socket PATH        daemon socket (default /run/enforcerd/enforcerd.sock)
  --timeout DURATION   limit for the daemon's answer (default 8s), including
                       the wait for a daemon that is restarting (a missing
                       socket or refused connections are retried until
                       then; poststop never retries and waits at most 1 s);
                       keep it below the runtime's hook timeout
                       (10 s in deploy/hooks.d), so the hook's own message,
                       not the runtime's kill, says what happened
  -h, --help           this help

Install: see deploy/README.md (hooks.d JSON for podman and CRI-O, a runc
config.json example).

Fail closed: the daemon refuses a ceiling this host enforces only in part
(without BPF LSM: network=false covers only the inet sockets the workload
creates) unless its configuration says allow_partial: true; the hook then
exits 125 and the runtime does not start the container. Without BPF LSM
the hook also judges the bundle's config.json: a read-only container
(root.readonly, every mount "ro", no CAP_SYS_ADMIN, a device cgroup for
harmless devices only) enforces write=false by itself, and one in its own
network namespace whose seccomp filter denies every socket family but
AF_UNIX (and io_uring_setup) enforces network=false; the daemon credits
them as "container-spec", and a refusal names each rule the spec misses
(docs/no-bpf-lsm.md, "Containers").

Exit status:
  0    registered (createRuntime) or unregistered (poststop)
  1    the daemon refused the registration (a conflict, an unknown parent,
       a request it found bad) or another failure (I/O, daemon error);
       poststop: the daemon was unreachable or did not answer within 1 s
  2    usage error, malformed state JSON or annotations
  125  the ceiling cannot be enforced (in full, unless the daemon allows
       partial coverage; also: under shell=none, the entrypoint runs other
       programs without exec, or cannot be read), or the daemon is
       unreachable (createRuntime, prestart)
`

// hookStages are the OCI hook stages the hook runs at.
var hookStages = []string{"createRuntime", "prestart", "poststop"}

// hookPidGroup finds a container's cgroup from its pid (tests substitute it).
var hookPidGroup = cgroup.PidGroup

// limitCore sets a process's RLIMIT_CORE for its sandbox (tests substitute
// it).
var limitCore = sandbox.LimitCore

func NewCommand(s cli.Streams) *cobra.Command {
	var socket string
	var timeout time.Duration
	c := cli.NewCommand(s, cli.CommandSpec{
		Name:      "hook",
		Summary:   "OCI runtime hook (createRuntime, prestart, poststop) registering containers with the daemon",
		Help:      hookUsage,
		ValidArgs: hookStages,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.UsageErrorf("want one stage (createRuntime, prestart or poststop), got %d arguments", len(args))
			}
			for _, st := range hookStages {
				if args[0] == st {
					return nil
				}
			}
			return cli.UsageErrorf("unknown stage %q (want createRuntime, prestart or poststop)", args[0])
		},
		Run: func(_ *cobra.Command, args []string) error {
			return cli.ExitCode(runHook(args[0], socket, timeout, s))
		},
	})
	cli.SocketFlag(c.Flags(), &socket)
	c.Flags().DurationVar(&timeout, "timeout", api.DefaultHookTimeout, "limit for the daemon's answer")
	return c
}

// runHook runs one stage with the state JSON on s.in and returns the
// hook's exit status.
func runHook(stage, socket string, timeout time.Duration, s cli.Streams) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(s.Err, "enforcerd hook %s: "+format+"\n", append([]any{stage}, a...)...)
		return code
	}
	if stage == "poststop" {
		return runPoststop(socket, timeout, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := cli.NewHookClient(socket, timeout)
	client.C.Stage = stage // createRuntime or prestart
	// createRuntime, prestart
	st, err := oci.DecodeState(s.In, true)
	if err != nil {
		return fail(cli.ExitUsage, "%v", err)
	}
	req, err := oci.ParseAnnotations(st.Annotations)
	if err != nil {
		return fail(cli.ExitUsage, "container %s: %v", st.ID, err)
	}
	group, err := hookTarget(st)
	if err != nil {
		code := cli.ExitCannotEnforce
		if errors.Is(err, oci.ErrBadState) {
			code = cli.ExitUsage
		}
		return fail(code, "container %s: refusing the container: %v", st.ID, err)
	}
	// The daemon vets the entrypoint when the effective ceiling is
	// shell=none, and refuses without one.
	ep, epErr := hookEntrypoint(st)
	if len(req.WriteRoots) > 0 && epErr != nil {
		// The roots are paths inside the container's root.
		return fail(cli.ExitUsage, "container %s: %s: cannot find the container's root: %v", st.ID, oci.AnnotationWriteRoots, epErr)
	}
	if len(req.ExecAllow) > 0 && epErr != nil {
		// So are the files: the daemon resolves them inside it.
		return fail(cli.ExitUsage, "container %s: %s: cannot find the container's root: %v", st.ID, oci.AnnotationExecAllow, epErr)
	}
	if devicePaths(req.AllowDevices) && epErr != nil {
		// And the device nodes named by path.
		return fail(cli.ExitUsage, "container %s: %s: cannot find the container's root: %v", st.ID, oci.AnnotationAllowDevices, epErr)
	}
	// On a host without BPF LSM the daemon credits what the spec
	// enforces by itself (docs/no-bpf-lsm.md "Containers").
	spec := hookSpecLayer(st, req.WriteRoots)
	if err := client.Register(ctx, s.Err, st, req, group, ep, epErr, spec); err != nil {
		return fail(cli.HookExit(err), "container %s: refusing the container: %v", st.ID, err)
	}
	// Accepted: the init (still in the runtime, before the entrypoint;
	// its processes inherit it) gets RLIMIT_CORE 1 before the hook
	// answers the runtime. A refused container's init is never touched.
	if _, err := limitCore(st.Pid); err != nil {
		code := fail(cli.ExitCannotEnforce, "container %s: refusing the container: %v", st.ID, err)
		if _, uerr := client.Unregister(ctx, st.ID); uerr != nil {
			fmt.Fprintf(s.Err, "enforcerd hook %s: container %s: unregistering after the refusal: %v\n", stage, st.ID, uerr)
		}
		return code
	}
	return cli.ExitOK
}

// poststopTimeout bounds poststop's whole exchange with the daemon (at
// most --timeout). Poststop only unregisters, and the daemon's sweep drops
// the entry of a container whose cgroup is gone anyway, so with the daemon
// unreachable poststop gives up at once (ENOENT, ECONNREFUSED: no retry)
// or after this long without an answer, instead of adding createRuntime's
// wait to every refused container start. createRuntime keeps --timeout
// and its wait for a restarting daemon: it fails closed, and a daemon
// started by socket activation answers its first request late.
const poststopTimeout = time.Second

// runPoststop unregisters the container of the state JSON on s.In: exit 0
// when the daemon unregistered it or did not know it, 1 when the daemon
// could not be reached or failed (the message says the sweep will drop
// the entry), 2 for malformed state.
func runPoststop(socket string, timeout time.Duration, s cli.Streams) int {
	st, err := oci.DecodeState(s.In, false)
	if err != nil {
		fmt.Fprintf(s.Err, "enforcerd hook poststop: %v\n", err)
		return cli.ExitUsage
	}
	timeout = min(timeout, poststopTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := cli.NewHookClient(socket, timeout)
	client.C.WaitForDaemon = false
	client.C.Stage = "poststop"
	known, err := client.Unregister(ctx, st.ID)
	if errors.Is(err, api.ErrUnreachable) {
		fmt.Fprintf(s.Err, "enforcerd hook poststop: container %s: not unregistered, giving up (no retry): %v; the daemon's sweep drops the entry once the container's cgroup is gone\n", st.ID, err)
		return cli.ExitFailure
	}
	if err != nil {
		fmt.Fprintf(s.Err, "enforcerd hook poststop: container %s: %v\n", st.ID, err)
		return cli.ExitFailure
	}
	if !known {
		fmt.Fprintf(s.Err, "enforcerd hook poststop: container %s was not registered\n", st.ID)
	}
	return cli.ExitOK
}

// hookSelfGroup is the hook's own cgroup (tests substitute it).
var hookSelfGroup = func() (string, error) { return cgroup.PidGroup(os.Getpid()) }

// hookTarget checks, before anything touches the target process or the
// daemon, that the state names a container's init, and returns its
// cgroup. Errors: the pid is 1 or less (pid 1 is the host's init: a state
// naming it is malformed or hostile); its cgroup cannot be read; it is
// the root cgroup, or the hook's own cgroup or one above it (registering
// it would confine the runtime, the host or the hook itself).
func hookTarget(st specs.State) (string, error) {
	if st.Pid <= 1 {
		return "", fmt.Errorf("%w: pid %d is not a container's init (the hook needs the pid of the runtime's init for the container)", oci.ErrBadState, st.Pid)
	}
	group, err := hookPidGroup(st.Pid)
	if err != nil {
		return "", fmt.Errorf("pid %d: %w", st.Pid, err)
	}
	group = path.Clean(group)
	if group == "/" {
		return "", fmt.Errorf("%w: pid %d is in the root cgroup, not a container's", oci.ErrBadState, st.Pid)
	}
	self, err := hookSelfGroup()
	if err != nil {
		return "", fmt.Errorf("the hook's own cgroup: %w", err)
	}
	if self = path.Clean(self); self == group || strings.HasPrefix(self, group+"/") {
		return "", fmt.Errorf("%w: pid %d is in cgroup %s, which holds the hook itself (%s): not a container's", oci.ErrBadState, st.Pid, group, self)
	}
	return group, nil
}

// hookEntrypoint names the container's entrypoint from its bundle's
// config.json, as the daemon resolves it (oci.Entrypoint).
func hookEntrypoint(st specs.State) (*progcheck.Program, error) {
	if st.Bundle == "" {
		return nil, errors.New("the state has no bundle")
	}
	f, err := os.Open(filepath.Join(st.Bundle, "config.json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := oci.Entrypoint(f, st.Bundle, st.Pid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return &p, nil
}

// devicePaths reports whether a device allow list names a device by path
// (resolved in the container's root) rather than by number.
func devicePaths(entries []string) bool {
	for _, e := range entries {
		if strings.HasPrefix(e, "/") {
			return true
		}
	}
	return false
}
