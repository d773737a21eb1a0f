package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/metrics"
	"github.com/enforcerd/enforcerd/internal/progcheck"
	"github.com/enforcerd/enforcerd/oci"
)

func init() {
	register(subcommand{name: "hook", summary: "OCI runtime hook (createRuntime, poststop) registering containers with the daemon", run: runHook})
}

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
    pending deadline, the daemon freezes the container. Sets the init's
    RLIMIT_CORE to 1 (soft and hard; the kernel then never runs a
    core_pattern pipe helper for the container's processes). Exits
    non-zero, so the runtime refuses
    to start the container, when the daemon is unreachable, the state or
    the annotations are malformed, or the ceiling cannot be enforced.

    Under shell=none (the effective ceiling, after role, ceiling and
    parent) the program of that first exec is the only one the container
    may execute from then on. The hook names it to the daemon from the
    bundle's config.json (process.args[0], looked up with process.env's
    PATH and process.cwd inside root.path, seen through /proc/PID/root),
    and the daemon refuses it (exit 125) when it is a shell, a multi-call
    binary (BusyBox, toybox, a single-binary coreutils) or the dynamic
    loader, recognised by content (each runs every other program without
    an exec), or when config.json or the program cannot be read. Give
    such containers an entrypoint that is not a shell.

prestart
    The same as createRuntime, for runtimes that only run the (deprecated)
    prestart stage, such as systemd-nspawn --oci-bundle. It runs at the same
    point: the container's cgroup and init exist, its program has not
    started.

poststop
    Unregisters the container. A container the daemon does not know is not
    an error.

Annotations (at least one of role and ceiling):
  enforcerd.io/role         role name (general, explore, planner, reviewer,
                            implement, test, advisor, custom, a legacy alias
                            or an org-chart title); any other value, empty
                            included, is malformed. Without it: general
  enforcerd.io/ceiling      ceiling text, e.g. network=false,write=false
                            (keys network, write, shell, tools, depth;
                            booleans true|false|allow|deny)
  enforcerd.io/parent       id of the parent container: the ceiling is
                            clamped by the parent's effective ceiling
  enforcerd.io/audit-only   true: record would-be denials, do not deny
  enforcerd.io/tool-groups  tool groups for the container's surface
  Any other enforcerd.io/ key is an error.

Flags:
  --socket PATH        daemon socket (default /run/enforcerd/enforcerd.sock)
  --timeout DURATION   limit for the daemon's answer (default 10s)
  -h, --help           this help

Install: see deploy/README.md (hooks.d JSON for podman and CRI-O, a runc
config.json example, systemd-nspawn with --oci-bundle).

Fail closed: the daemon refuses a ceiling this host enforces only in part
(without BPF LSM: network=false covers only the inet sockets the workload
creates) unless its configuration says allow_partial: true; the hook then
exits 125 and the runtime does not start the container.

Exit status:
  0    registered (createRuntime) or unregistered (poststop)
  1    the daemon refused the registration (a conflict, an unknown parent,
       a request it found bad) or another failure (I/O, daemon error)
  2    usage error, malformed state JSON or annotations
  125  the ceiling cannot be enforced (in full, unless the daemon allows
       partial coverage; also: under shell=none, the entrypoint runs other
       programs without exec, or cannot be read), or the daemon is
       unreachable
`

// hookPidGroup finds a container's cgroup from its pid (tests substitute it).
var hookPidGroup = cgroup.PidGroup

func runHook(args []string, stdout, stderr io.Writer) int {
	return hookMain(args, os.Stdin, stdout, stderr)
}

func hookMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	socket := fs.String("socket", api.DefaultSocket, "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, hookUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "enforcerd hook: %v\nRun 'enforcerd hook --help' for usage.\n", err)
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "enforcerd hook: want one stage (createRuntime or poststop), got %d arguments\n", fs.NArg())
		return exitUsage
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "enforcerd hook %s: "+format+"\n", append([]any{fs.Arg(0)}, a...)...)
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	client := api.NewClient(*socket, *timeout)
	switch fs.Arg(0) {
	case "createRuntime", "prestart":
		st, err := oci.DecodeState(stdin, true)
		if err != nil {
			return fail(exitUsage, "%v", err)
		}
		req, err := oci.ParseAnnotations(st.Annotations)
		if err != nil {
			return fail(exitUsage, "container %s: %v", st.ID, err)
		}
		group, err := hookPidGroup(st.Pid)
		if err != nil {
			return fail(exitCannotEnforce, "container %s: %v", st.ID, err)
		}
		// The daemon vets the entrypoint when the effective ceiling is
		// shell=none, and refuses without one.
		ep, epErr := hookEntrypoint(st)
		// Before the registration (the init's processes inherit it);
		// put back if the registration is refused: nothing half-applied.
		restoreCore, err := limitCoreSaving(st.Pid)
		if err != nil {
			return fail(exitCannotEnforce, "container %s: refusing the container: %v", st.ID, err)
		}
		c, err := client.Register(ctx, api.RegisterRequest{
			ID: st.ID, Cgroup: group, PID: st.Pid, Role: req.Role, Ceiling: req.Ceiling,
			Parent: req.Parent, AuditOnly: req.AuditOnly, ToolGroups: req.ToolGroups,
			Activate: api.ActivateExec, InitPID: st.Pid,
			Entrypoint: api.EntrypointFrom(ep),
		})
		if err != nil {
			if rerr := restoreCore(); rerr != nil {
				fmt.Fprintf(stderr, "enforcerd hook %s: container %s: %v\n", fs.Arg(0), st.ID, rerr)
			}
			var ae *api.Error
			if epErr != nil && errors.As(err, &ae) && ae.Code == metrics.ResultEntrypointRequired {
				err = fmt.Errorf("%w (the hook could not name the entrypoint: %v)", err, epErr)
			}
			return fail(hookExit(err), "container %s: refusing the container: %v", st.ID, err)
		}
		fmt.Fprintf(stderr, "enforcerd hook createRuntime: container %s registered: cgroup %s (id %d), kernel %s, audit_only=%t, fingerprint %s, activation %s\n",
			c.ID, c.Cgroup, c.CgroupID, c.Kernel, c.AuditOnly, c.Fingerprint, c.Activation)
		for _, g := range c.Unenforced {
			fmt.Fprintf(stderr, "enforcerd hook createRuntime: container %s: partial coverage (the daemon allows it): NOT enforced: %s\n", c.ID, g)
		}
		if c.ActivationReason != "" {
			fmt.Fprintf(stderr, "enforcerd hook createRuntime: container %s: in force at once: %s\n", c.ID, c.ActivationReason)
		}
		return exitOK
	case "poststop":
		st, err := oci.DecodeState(stdin, false)
		if err != nil {
			return fail(exitUsage, "%v", err)
		}
		err = client.Unregister(ctx, st.ID)
		var ae *api.Error
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			fmt.Fprintf(stderr, "enforcerd hook poststop: container %s was not registered\n", st.ID)
			return exitOK
		}
		if err != nil {
			return fail(exitFailure, "container %s: %v", st.ID, err)
		}
		return exitOK
	default:
		return fail(exitUsage, "unknown stage (want createRuntime, prestart or poststop)")
	}
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

// hookExit maps a daemon error to the hook's exit status: 125 when the
// ceiling cannot be enforced (HTTP 422, including partial coverage the
// daemon does not allow) or the daemon is unreachable; 1 for every other
// refusal or failure (a conflict, an unknown parent, a bad request, a 5xx).
// Exit 2 is only for the hook's own malformed input, decided before the
// daemon is asked.
func hookExit(err error) int {
	var ae *api.Error
	switch {
	case errors.Is(err, api.ErrUnreachable):
		return exitCannotEnforce
	case errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity:
		return exitCannotEnforce
	}
	return exitFailure
}
