package registry

import (
	"fmt"
	"path"
	"strings"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/egress"
	"github.com/enforcerd/enforcerd/endpoint"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// Activation says when a new ceiling takes effect.
type Activation string

const (
	// ActivateNow: in force when Register returns (a running workload).
	ActivateNow Activation = "now"
	// ActivateExec: in force from the first exec in the cgroup's subtree
	// (an OCI container registered at createRuntime: runc init still sets
	// up the container, the entrypoint exec activates the ceiling).
	ActivateExec Activation = "exec"
)

// Request registers one container (the API's RegisterRequest converts to
// it). Role must be a name policy.LookupRole accepts, or "" when no role is
// given (the general default): an unknown or blank name is refused
// (ErrBadRequest), never run as another role.
type Request struct {
	ID string
	// Cgroup is the group path below the cgroup2 mount ("/machine.slice/x");
	// or give PID and the registry reads /proc/PID/cgroup. With both, they
	// must agree.
	Cgroup     string
	PID        int
	Role       string
	Ceiling    string
	Parent     string
	AuditOnly  bool
	ToolGroups string
	// ProxyAllow (nil: not given) is the container's proxy_allow list,
	// comma-separated domain patterns or "none" (egress.ParseAllowList).
	ProxyAllow *string
	Activate   Activation // "": now
	// InitPID (only with Activate exec) is the container runtime's init
	// process (for OCI hooks: the state's pid), which must be in the
	// cgroup's subtree. It is the only process that may be there while
	// the registration is pending: any other process (or, without
	// InitPID, any process at all) makes the ceiling active at once
	// (Activation state.ActivationImmediate, with the reason).
	InitPID int
	// SetupProgram (only with Activate exec, and with Cgroup given as a
	// path below another cgroup) is the absolute path, on the daemon's
	// file system, of a program whose processes set the container up
	// inside the cgroup before its first exec: systemd-nspawn, whose
	// inner child enters <machine>/payload and mounts, configures the
	// loopback device and drops capabilities there before it execs the
	// machine's command. While the registration is pending, a process in
	// the cgroup that still runs this file (device + inode: it has not
	// exec'd) and descends from a process running it outside the cgroup
	// but inside its parent cgroup (nspawn's supervisor) is no intruder
	// (isSetupProcess); any other process is.
	SetupProgram string
	// Entrypoint is the program the first exec will run (for OCI hooks:
	// process.args[0] of the bundle's config.json, seen through the
	// init's /proc/PID/root). Required when Activate is exec and the
	// effective ceiling is shell=none: the daemon resolves it inside its
	// root and refuses a shell, a multi-call binary or the dynamic loader
	// (ErrUnsafeProgram), since that first exec is allowed from then on.
	Entrypoint *progcheck.Program
	// AllowConnect: endpoints the container may still reach under
	// network=false (endpoint.Parse syntax, at most endpoint.Max). Unix
	// paths are resolved inside Entrypoint.Root when the request has an
	// entrypoint, else on the daemon's file system. Refused
	// (ErrBadRequest): bad syntax, too many, a unix path that is missing
	// or not a socket, and any list when the effective ceiling allows
	// network (endpoints.go).
	AllowConnect []string
	// WriteRoots: with write=false, absolute paths beneath which writes
	// stay allowed (policy.CheckWriteRootPaths), resolved inside the
	// registered process's root (Request.writeRootsDir).
	WriteRoots []string
	// ExecAllow: with the effective ceiling shell=none, absolute paths of
	// the files processes in the cgroup may execute besides the
	// entrypoint (at most MaxExecAllow), resolved like WriteRoots inside
	// the registered process's root and kept by identity (device +
	// inode). Refused: a malformed list or a ceiling that is not
	// shell=none (ErrBadRequest); a shell, a multi-call binary, the
	// dynamic loader or a file that cannot be classified
	// (ErrUnsafeProgram; execallow.go).
	ExecAllow []string
	// Spec: what the container's runtime spec enforces by itself, as the
	// OCI hook or the NRI plugin found it (oci/speccheck); nil: nothing
	// judged. The daemon trusts it as it trusts the hook's pid and cgroup
	// (the socket is root's); it only matters on a host without BPF LSM
	// (coverage.SpecLayer): it credits the fields it gives; a field it
	// does not give is covered as without a Spec, its gap naming the
	// rules the spec misses. Its WritableMounts must lie beneath the
	// registration's effective writable roots, else ErrCannotEnforce.
	Spec *coverage.SpecLayer
	// AllowDevices: the device nodes the container may use besides the
	// null-like devices and its own terminals, under every ceiling
	// (devallow syntax: "c MAJOR:MINOR", "b MAJOR:MINOR" or an absolute
	// path to a device node, at most devallow.Max), paths resolved like
	// WriteRoots inside the registered process's root. Refused
	// (ErrBadRequest): bad syntax, a duplicate, too many, a path that is
	// missing or not a device node (devices.go). Met with the lists of
	// the registrations it is nested in: a device one of them does not
	// list is dropped. A runtime spec's linux.devices never fills it.
	AllowDevices []string
	// Terminals: the sandbox's own terminals as the caller read them
	// from a process it vouches for (ownterm: the API reads its
	// client's for own_terminals "client"), at most
	// entry.MaxTerminals.
	Terminals []entry.Terminal
	// TerminalsOfInit: declare InitPID's own terminals (its stdio and
	// controlling terminal, read by the daemon while InitPID provably
	// names the init: the OCI hook's and the NRI plugin's way). Needs
	// InitPID; not with Terminals.
	TerminalsOfInit bool
	// DenyConsoleEgress: under network=false, refuse an own terminal
	// that leaves the machine (entry.Entry.DenyConsoleEgress). The
	// daemon's deny_console_egress sets it for every registration.
	DenyConsoleEgress bool
}

func badf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// validate checks a request's form before anything is looked up: the
// ids, the lengths, a cgroup or pid, activate, init_pid and the
// entrypoint's shape (ErrBadRequest).
func (req Request) validate() error {
	if err := req.validateIDs(); err != nil {
		return err
	}
	if err := req.validateTarget(); err != nil {
		return err
	}
	if req.ProxyAllow != nil {
		if _, err := egress.ParseAllowList(*req.ProxyAllow); err != nil {
			return badf("container %s: proxy_allow: %v", req.ID, err)
		}
	}
	if _, err := endpoint.ParseList(req.AllowConnect); err != nil {
		return badf("container %s: allow_connect: %v", req.ID, err)
	}
	if err := checkDeviceRequest(req); err != nil {
		return err
	}
	if req.Entrypoint != nil {
		if err := req.Entrypoint.Validate(); err != nil {
			return badf("container %s: %v", req.ID, err)
		}
	}
	if err := checkExecAllowPaths(req); err != nil {
		return err
	}
	return checkWriteRootPaths(req)
}

// resolve derives the ceilings of a container: the session is bound (the
// parent's effective ceiling, else the default session, met with the
// ceilings of the registered cgroups above the container's) clamped by the
// ceiling text; the effective ceiling is the role's request clamped to the
// session. So a child is never wider than its parent, nor than any
// registered cgroup it is nested in.
func resolve(role, ceilingText, toolGroups string, bound policy.Ceiling) (session policy.Ceiling, s policy.Surface, err error) {
	session = bound
	if strings.TrimSpace(ceilingText) != "" {
		req, err := policy.ParseCeiling(ceilingText, policy.DefaultSession())
		if err != nil {
			return session, s, badf("ceiling %q: %v", ceilingText, err)
		}
		session = session.Clamp(req)
	}
	res := policy.UnspecifiedRole()
	if role != "" {
		if res, err = policy.LookupRole(role); err != nil {
			return session, s, fmt.Errorf("%w: role: %w", ErrBadRequest, err)
		}
	}
	s = policy.ResolveSurface(res, session, toolGroups)
	return session, s, nil
}

// storedRole resolves the role recorded with a registration. Register
// accepted it with policy.LookupRole (or it was not given: ""), so this is
// the same resolution; a state file written before unknown names were
// refused may still hold one, and it keeps the explore posture it was
// registered with (policy.ResolveRole's fallback), so re-deriving its
// surface or narrowing it never widens anything.
func storedRole(role string) policy.Resolution { return policy.ResolveRole(role) }

func (r *Registry) resolveCgroup(req Request) (cgroup.Cgroup, error) {
	group := req.Cgroup
	if req.PID > 0 {
		g, err := r.o.Cgroups.PidGroup(req.PID)
		if err != nil {
			return cgroup.Cgroup{}, badf("container %s: %v", req.ID, err)
		}
		if group != "" && path.Clean(group) != path.Clean(g) {
			return cgroup.Cgroup{}, badf("container %s: pid %d is in cgroup %s, not %s", req.ID, req.PID, g, group)
		}
		group = g
	}
	if !strings.HasPrefix(group, "/") {
		return cgroup.Cgroup{}, badf("container %s: cgroup %q is not an absolute group path", req.ID, group)
	}
	group = path.Clean(group)
	if group == "/" {
		return cgroup.Cgroup{}, badf("container %s: refusing the root cgroup (it would enforce the whole host)", req.ID)
	}
	if self := r.o.SelfGroup; self != "" && (self == group || strings.HasPrefix(self, group+"/")) {
		return cgroup.Cgroup{}, badf("container %s: cgroup %s contains enforcerd itself", req.ID, group)
	}
	cg, err := r.o.Cgroups.Open(group)
	if err != nil {
		return cgroup.Cgroup{}, badf("container %s: %v", req.ID, err)
	}
	return cg, nil
}
