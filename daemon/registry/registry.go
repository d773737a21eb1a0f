// Package registry is the daemon's source of truth for registered
// containers: it derives each container's effective ceiling with the policy
// core, installs it through the enforcer, and persists it with package
// state. Every change is applied in the order map → state file → memory and
// rolled back in reverse on any error, under one lock, so the BPF map, the
// state file and List never disagree (nothing is half-applied).
//
// Fail direction: a request that cannot be enforced is refused; an unknown
// caller is treated as confined; reconcile never removes a live cgroup's
// ceiling and never touches pins.
package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/procid"
	"github.com/enforcerd/enforcerd/internal/progcheck"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// Errors callers (the API) map to status codes with errors.Is.
var (
	ErrBadRequest    = errors.New("bad request")
	ErrNotFound      = errors.New("container not registered")
	ErrConflict      = errors.New("conflict")
	ErrCannotEnforce = enforcer.ErrCannotEnforce
	// ErrPartialCoverage also matches ErrCannotEnforce.
	ErrPartialCoverage = enforcer.ErrPartialCoverage
	// ErrUnsafeProgram: under the effective ceiling shell=none, the
	// program the registration lets run (the entrypoint, or a program a
	// process in the cgroup already runs) is a shell, a multi-call binary
	// or the dynamic loader (package progcheck), or could not be
	// classified. The API answers 422 "unsafe_program".
	ErrUnsafeProgram = errors.New("unsafe program under shell=none")
	// ErrEntrypointRequired: a registration pending until the first exec
	// under the effective ceiling shell=none has no entrypoint the daemon
	// can resolve and read. That first exec is allowed from then on,
	// whatever it is, so the daemon must vet it beforehand. The API
	// answers 422 "entrypoint_required".
	ErrEntrypointRequired = errors.New("shell=none pending registration needs an entrypoint")
)

// Enforcer is the part of *enforcer.Enforcer the registry uses; tests pass a
// fake so the logic runs without BPF.
type Enforcer interface {
	Register(cgroup.Cgroup, enforcer.Entry) error
	Unregister(cgroupID uint64) error
	Lookup(cgroupID uint64) (enforcer.Entry, error)
	List() ([]enforcer.Registration, error)
	// Coverage says what the host enforces of a ceiling.
	Coverage(policy.KernelCeiling) enforcer.Coverage
}

// Cgroups resolves cgroups on the live system.
type Cgroups interface {
	// Open names an existing cgroup by its group path.
	Open(group string) (cgroup.Cgroup, error)
	// PidGroup is the cgroup v2 group path of a process.
	PidGroup(pid int) (string, error)
	// LiveIDs is the set of ids of every cgroup that exists now.
	LiveIDs() (map[uint64]bool, error)
	// Procs lists the pids of every process in the group's subtree.
	Procs(group string) ([]int, error)
	// Freeze freezes the group's subtree and returns once it is frozen;
	// Frozen reports whether it is; Thaw undoes Freeze.
	Freeze(group string) error
	Frozen(group string) (bool, error)
	Thaw(group string) error
	// Kill sends SIGKILL to every process of the group's subtree.
	Kill(group string) error
}

// SystemCgroups is Cgroups on the real cgroup2 mount.
type SystemCgroups struct{ Mount string }

// Open implements Cgroups.
func (s SystemCgroups) Open(group string) (cgroup.Cgroup, error) { return cgroup.Open(s.Mount, group) }

// PidGroup implements Cgroups.
func (s SystemCgroups) PidGroup(pid int) (string, error) { return cgroup.PidGroup(pid) }

// freezeTimeout bounds how long SystemCgroups.Freeze waits for the kernel
// to report the subtree frozen.
const freezeTimeout = 2 * time.Second

// Procs implements Cgroups.
func (s SystemCgroups) Procs(group string) ([]int, error) {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return nil, err
	}
	return cg.Procs()
}

// Freeze implements Cgroups (waits up to freezeTimeout).
func (s SystemCgroups) Freeze(group string) error {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return err
	}
	return cg.Freeze(freezeTimeout)
}

// Frozen implements Cgroups.
func (s SystemCgroups) Frozen(group string) (bool, error) {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return false, err
	}
	return cg.Frozen()
}

// Thaw implements Cgroups.
func (s SystemCgroups) Thaw(group string) error {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return err
	}
	return cg.Thaw()
}

// Kill implements Cgroups.
func (s SystemCgroups) Kill(group string) error {
	cg, err := cgroup.Open(s.Mount, group)
	if err != nil {
		return err
	}
	return cg.Kill()
}

// LiveIDs walks the cgroup2 hierarchy.
func (s SystemCgroups) LiveIDs() (map[uint64]bool, error) {
	ids := map[uint64]bool{}
	err := filepath.WalkDir(s.Mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ids[st.Ino] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk cgroups %s: %w", s.Mount, err)
	}
	return ids, nil
}

// Options configures New.
type Options struct {
	Enforcer  Enforcer
	Cgroups   Cgroups
	StatePath string
	// SelfGroup is the daemon's own cgroup: registering it or an ancestor
	// would enforce the daemon itself, so it is refused.
	SelfGroup string
	// Save persists the state (default state.Save); tests inject failures.
	Save func(path string, cs []state.Container) error
	Now  func() time.Time
	Log  *slog.Logger
	// PendingDeadline is how long a registration may stay pending (no
	// exec in its cgroup) before CheckPending freezes the cgroup
	// (default DefaultPendingDeadline).
	PendingDeadline time.Duration
	// StartTime returns a process's start time in clock ticks after boot
	// (default procid.StartTime); tests substitute it.
	StartTime func(pid int) (uint64, error)
	// OnEvent, when set, is told of every activation and freeze decision
	// (the daemon writes them to the audit log and metrics). It is called
	// without the registry's lock held.
	OnEvent func(Event)
	// AllowPartial accepts registrations this host enforces only in part
	// (enforcer.Coverage.Partial; the daemon's allow_partial setting).
	// They are refused with ErrPartialCoverage otherwise.
	AllowPartial bool
	// CheckEntrypoint resolves and classifies a shell=none registration's
	// entrypoint (default progcheck.Program.Check); CheckProcesses
	// classifies the programs processes already run (default
	// progcheck.CheckProcesses). Tests substitute them.
	CheckEntrypoint func(progcheck.Program) (string, error)
	CheckProcesses  func(pids []int) error
}

// DefaultPendingDeadline is Options.PendingDeadline's default.
const DefaultPendingDeadline = 30 * time.Second

// Event kinds.
const (
	// EventActivatedAtExec: a pending ceiling was activated by the first
	// exec in its cgroup (the normal path).
	EventActivatedAtExec = "activated_at_exec"
	// EventActivatedImmediately: a registration that asked for activation
	// at exec was put in force without an exec, because its cgroup held
	// (or later gained) a process other than the runtime's init.
	EventActivatedImmediately = "activated_immediately"
	// EventFrozen: the pending deadline passed; the cgroup was frozen.
	EventFrozen = "frozen"
	// EventKilled: the pending deadline passed and freezing failed; the
	// cgroup's processes were killed.
	EventKilled = "killed"
	// EventRefrozen: a frozen pending cgroup was found thawed and was
	// frozen again.
	EventRefrozen = "refrozen"
	// EventRegistered: a registration was made; Event.Unenforced lists
	// what the host does not enforce of its ceiling (partial coverage).
	EventRegistered = "registered"
	// EventNarrowed: a registration's ceiling was narrowed.
	EventNarrowed = "narrowed"
)

// Event is one activation or freeze decision about a container.
type Event struct {
	Time        time.Time
	Kind        string // one of the Event* kinds
	Container   string
	Cgroup      string
	CgroupID    uint64
	Fingerprint string
	Reason      string
	// Unenforced are the codes of the ceiling's coverage gaps
	// (EventRegistered, EventNarrowed).
	Unenforced []string
}

// Registry holds the registered containers.
type Registry struct {
	mu       sync.Mutex
	o        Options
	byID     map[string]state.Container
	byCgroup map[uint64]string
}

// New makes an empty registry; call Reconcile to load the state file.
func New(o Options) *Registry {
	if o.Save == nil {
		o.Save = state.Save
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.PendingDeadline <= 0 {
		o.PendingDeadline = DefaultPendingDeadline
	}
	if o.StartTime == nil {
		o.StartTime = procid.StartTime
	}
	if o.CheckEntrypoint == nil {
		o.CheckEntrypoint = progcheck.Program.Check
	}
	if o.CheckProcesses == nil {
		o.CheckProcesses = progcheck.CheckProcesses
	}
	return &Registry{o: o, byID: map[string]state.Container{}, byCgroup: map[uint64]string{}}
}

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
	Activate   Activation // "": now
	// InitPID (only with Activate exec) is the container runtime's init
	// process (for OCI hooks: the state's pid), which must be in the
	// cgroup's subtree. It is the only process that may be there while
	// the registration is pending: any other process (or, without
	// InitPID, any process at all) makes the ceiling active at once
	// (Activation state.ActivationImmediate, with the reason).
	InitPID int
	// Entrypoint is the program the first exec will run (for OCI hooks:
	// process.args[0] of the bundle's config.json, seen through the
	// init's /proc/PID/root). Required when Activate is exec and the
	// effective ceiling is shell=none: the daemon resolves it inside its
	// root and refuses a shell, a multi-call binary or the dynamic loader
	// (ErrUnsafeProgram), since that first exec is allowed from then on.
	Entrypoint *progcheck.Program
}

func badf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// resolve derives the ceilings of a container: the session is the parent's
// effective ceiling (else the default session) clamped by the ceiling text;
// the effective ceiling is the role's request clamped to the session. So a
// child is never wider than its parent.
func resolve(role, ceilingText, toolGroups string, parent *state.Container) (session policy.Ceiling, s policy.Surface, err error) {
	session = policy.DefaultSession()
	if parent != nil {
		session = parent.Ceiling
	}
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

// Register installs a container's ceiling and persists it. Under the
// effective ceiling shell=none it refuses, before anything is installed,
// a registration pending until the first exec whose Entrypoint is missing
// or cannot be resolved and read (ErrEntrypointRequired) or is a shell, a
// multi-call binary or the dynamic loader (ErrUnsafeProgram); and, once
// installed and then rolled back, one in force at once whose cgroup's
// processes already run such a program (ErrUnsafeProgram).
func (r *Registry) Register(req Request) (state.Container, error) {
	if !oci.ValidID(req.ID) {
		return state.Container{}, badf("container id %q is empty or not [A-Za-z0-9][A-Za-z0-9_.+:-]{0,255}", req.ID)
	}
	if req.Parent != "" && !oci.ValidID(req.Parent) {
		return state.Container{}, badf("parent id %q is not a container id", req.Parent)
	}
	if req.Parent == req.ID {
		return state.Container{}, badf("container %s cannot be its own parent", req.ID)
	}
	if len(req.Role) > 256 || len(req.ToolGroups) > 1024 || len(req.Ceiling) > 1024 {
		return state.Container{}, badf("role, ceiling or tool_groups too long")
	}
	if req.Cgroup == "" && req.PID <= 0 {
		return state.Container{}, badf("container %s: give cgroup or pid", req.ID)
	}
	if req.PID < 0 {
		return state.Container{}, badf("container %s: negative pid", req.ID)
	}
	switch req.Activate {
	case "", ActivateNow, ActivateExec:
	default:
		return state.Container{}, badf("activate %q: want now|exec", req.Activate)
	}
	if req.InitPID < 0 || req.InitPID > 0 && req.Activate != ActivateExec {
		return state.Container{}, badf("container %s: init_pid %d: want a pid, and only with activate=exec", req.ID, req.InitPID)
	}
	if req.Entrypoint != nil {
		if err := req.Entrypoint.Validate(); err != nil {
			return state.Container{}, badf("container %s: %v", req.ID, err)
		}
	}
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[req.ID]; ok {
		return state.Container{}, fmt.Errorf("%w: container %s is already registered", ErrConflict, req.ID)
	}
	var parent *state.Container
	if req.Parent != "" {
		p, ok := r.byID[req.Parent]
		if !ok {
			return state.Container{}, fmt.Errorf("%w: parent %s of container %s", ErrNotFound, req.Parent, req.ID)
		}
		parent = &p
	}
	session, surf, err := resolve(req.Role, req.Ceiling, req.ToolGroups, parent)
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	cg, err := r.resolveCgroup(req)
	if err != nil {
		return state.Container{}, err
	}
	if other, ok := r.byCgroup[cg.ID]; ok {
		return state.Container{}, fmt.Errorf("%w: cgroup %s is already registered by container %s", ErrConflict, cg, other)
	}
	if _, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
		return state.Container{}, fmt.Errorf("%w: cgroup %s already has a ceiling not registered through the daemon (enforcerd run?)", ErrConflict, cg)
	}
	if surf.Kernel.Shell == policy.ShellNone && req.Activate == ActivateExec {
		if err := r.vetEntrypoint(req.ID, req.Entrypoint); err != nil {
			return state.Container{}, err
		}
	}
	now := r.o.Now().UTC()
	c := state.Container{
		ID: req.ID, Cgroup: cg.Group, CgroupID: cg.ID, Role: req.Role,
		Session: session, Ceiling: surf.Ceiling, Kernel: surf.Kernel, Fingerprint: surf.Fingerprint,
		Parent: req.Parent, AuditOnly: req.AuditOnly, ToolGroups: req.ToolGroups,
		Registered: now, Activation: state.ActivationImmediate, State: state.StateActive,
		Entrypoint: req.Entrypoint,
	}
	if req.InitPID > 0 {
		g, err := r.o.Cgroups.PidGroup(req.InitPID)
		if err != nil {
			return state.Container{}, badf("container %s: init_pid: %v", req.ID, err)
		}
		if g = path.Clean(g); g != cg.Group && !strings.HasPrefix(g, cg.Group+"/") {
			return state.Container{}, badf("container %s: init_pid %d is in cgroup %s, outside %s", req.ID, req.InitPID, g, cg.Group)
		}
		if c.InitStart, err = r.o.StartTime(req.InitPID); err != nil {
			return state.Container{}, badf("container %s: init_pid: %v", req.ID, err)
		}
		c.InitPID = req.InitPID
	}
	cov := r.o.Enforcer.Coverage(c.Kernel)
	if err := cov.Err(c.AuditOnly, r.o.AllowPartial); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	c.Unenforced = cov.Gaps()
	entry := enforcer.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, Pending: req.Activate == ActivateExec,
		AllowPartial: len(cov.Partial) > 0}
	if err := r.o.Enforcer.Register(cg, entry); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	if entry.Pending {
		// Look for other processes only now that the pending entry is
		// installed: one that enters later is the watcher's (CheckPending).
		if why := r.intruders(c); why != "" {
			entry.Pending = false
			if err := r.o.Enforcer.Register(cg, entry); err != nil {
				if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
					r.o.Log.Error("rollback of a failed registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
				}
				return state.Container{}, fmt.Errorf("container %s: activate at once (%s): %w", req.ID, why, err)
			}
			c.ActivationReason = why
			evs = append(evs, r.event(c, EventActivatedImmediately, why))
		} else {
			c.Activation, c.State = state.ActivationAtExec, state.StatePending
			d := now.Add(r.o.PendingDeadline)
			c.PendingDeadline = &d
		}
	}
	if !entry.Pending && c.Kernel.Shell == policy.ShellNone {
		// In force without an exec: what it lets run is what the
		// cgroup's processes already run.
		if err := r.vetRunning(c); err != nil {
			evs = nil
			if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
				r.o.Log.Error("rollback of a refused registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
			}
			return state.Container{}, err
		}
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(c, "")); err != nil {
		evs = nil // nothing was registered
		if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
			r.o.Log.Error("rollback of a failed registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
		}
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	r.byID[c.ID] = c
	r.byCgroup[c.CgroupID] = c.ID
	reg := r.event(c, EventRegistered, registeredReason(c))
	reg.Unenforced = codes(c.Unenforced)
	evs = append([]Event{reg}, evs...)
	return c, nil
}

// registeredReason is the Reason of an EventRegistered or EventNarrowed
// record: the kernel ceiling, and what of it is not enforced.
func registeredReason(c state.Container) string {
	s := "kernel " + c.Kernel.String()
	if len(c.Unenforced) > 0 {
		s += "; NOT ENFORCED: " + strings.Join(codes(c.Unenforced), ", ")
	}
	return s
}

func codes(gs []enforcer.Gap) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Code)
	}
	return out
}

// vetEntrypoint refuses a pending shell=none registration whose first
// exec would allow a program that runs every other one without exec, or
// whose first exec the daemon cannot vet (fail closed).
func (r *Registry) vetEntrypoint(id string, ep *progcheck.Program) error {
	if ep == nil {
		return fmt.Errorf("%w: container %s: under shell=none the first exec is allowed from then on, so the daemon must vet that program first: give \"entrypoint\" {path, root, env_path, cwd} (enforcerd hook reads it from config.json), or register with activate=now", ErrEntrypointRequired, id)
	}
	resolved, err := r.o.CheckEntrypoint(*ep)
	switch {
	case errors.Is(err, progcheck.ErrUnsafe):
		return fmt.Errorf("%w: container %s: entrypoint %q (resolved inside %s as %s): %v", ErrUnsafeProgram, id, ep.Path, ep.Root, resolved, err)
	case err != nil:
		return fmt.Errorf("%w: container %s: entrypoint %q inside %s cannot be vetted: %v", ErrEntrypointRequired, id, ep.Path, ep.Root, err)
	}
	return nil
}

// vetRunning refuses a shell=none ceiling in force without an exec when a
// process in the cgroup already runs a shell, a multi-call binary or the
// dynamic loader, or when that cannot be told (fail closed). Called once
// the ceiling is installed: no exec can change the set of programs after
// that.
func (r *Registry) vetRunning(c state.Container) error {
	pids, err := r.o.Cgroups.Procs(c.Cgroup)
	if err == nil {
		err = r.o.CheckProcesses(pids)
	}
	if err != nil {
		return fmt.Errorf("%w: container %s: shell=none in force at once: the programs already running in cgroup %s: %v", ErrUnsafeProgram, c.ID, c.Cgroup, err)
	}
	return nil
}

// intruders returns why the pending registration c must not stay pending:
// its cgroup subtree holds a process other than its runtime init (same pid
// and start time), or its processes cannot be listed (fail closed). ""
// when only the init (or nothing) is there.
func (r *Registry) intruders(c state.Container) string {
	pids, err := r.o.Cgroups.Procs(c.Cgroup)
	if err != nil {
		return fmt.Sprintf("cannot list the processes of cgroup %s: %v", c.Cgroup, err)
	}
	var others []int
	for _, pid := range pids {
		if c.InitPID > 0 && pid == c.InitPID {
			if st, err := r.o.StartTime(pid); err == nil && st == c.InitStart {
				continue
			}
		}
		others = append(others, pid)
	}
	if len(others) == 0 {
		return ""
	}
	sort.Ints(others)
	if len(others) > 8 {
		others = others[:8]
	}
	if c.InitPID > 0 {
		return fmt.Sprintf("cgroup %s holds processes other than the runtime init %d: %v", c.Cgroup, c.InitPID, others)
	}
	return fmt.Sprintf("cgroup %s already holds processes (%v) and no runtime init was named", c.Cgroup, others)
}

func (r *Registry) event(c state.Container, kind, reason string) Event {
	return Event{Time: r.o.Now().UTC(), Kind: kind, Container: c.ID, Cgroup: c.Cgroup, CgroupID: c.CgroupID,
		Fingerprint: c.Fingerprint, Reason: reason}
}

func (r *Registry) emit(evs []Event) {
	if r.o.OnEvent == nil {
		return
	}
	for _, e := range evs {
		r.o.OnEvent(e)
	}
}

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

// snapshotWith is the current containers plus add (if its id is set) minus
// the container named drop.
func (r *Registry) snapshotWith(add state.Container, drop string) []state.Container {
	out := make([]state.Container, 0, len(r.byID)+1)
	for id, c := range r.byID {
		if id == drop || id == add.ID {
			continue
		}
		out = append(out, c)
	}
	if add.ID != "" {
		out = append(out, add)
	}
	return out
}

// Unregister removes a container's ceiling and forgets it.
func (r *Registry) Unregister(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byID[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	prev, lerr := r.o.Enforcer.Lookup(c.CgroupID)
	if err := r.o.Enforcer.Unregister(c.CgroupID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
		return fmt.Errorf("container %s: %w", id, err)
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, id)); err != nil {
		if lerr == nil {
			// Put the exact entry back (pending or active): still enforced.
			if rerr := r.o.Enforcer.Register(cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}, prev); rerr != nil {
				r.o.Log.Error("rollback of a failed unregistration", "container", id, "cgroup_id", c.CgroupID, "err", rerr)
			}
		}
		return fmt.Errorf("container %s: %w", id, err)
	}
	delete(r.byID, id)
	delete(r.byCgroup, c.CgroupID)
	return nil
}

// Narrow clamps a container's ceiling further with ceiling text. The result
// is never wider than before; the activation state (pending or in force) is
// kept. Narrowing to shell=none is vetted as Register vets it (the stored
// Entrypoint while pending, the running programs once in force); when
// refused, the ceiling stays as it was.
func (r *Registry) Narrow(id, ceilingText string) (state.Container, error) {
	if strings.TrimSpace(ceilingText) == "" {
		return state.Container{}, badf("container %s: empty ceiling", id)
	}
	if len(ceilingText) > 1024 {
		return state.Container{}, badf("ceiling too long")
	}
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.byID[id]
	if !ok {
		return state.Container{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	req, err := policy.ParseCeiling(ceilingText, policy.DefaultSession())
	if err != nil {
		return state.Container{}, badf("container %s: ceiling %q: %v", id, ceilingText, err)
	}
	session := old.Session.Clamp(req)
	surf := policy.ResolveSurface(storedRole(old.Role), session, old.ToolGroups)
	if !surf.Ceiling.Within(old.Ceiling) {
		return state.Container{}, fmt.Errorf("container %s: narrowing would widen %s to %s", id, old.Ceiling, surf.Ceiling)
	}
	c := old
	c.Session, c.Ceiling, c.Kernel, c.Fingerprint = session, surf.Ceiling, surf.Kernel, surf.Fingerprint
	prev, err := r.o.Enforcer.Lookup(old.CgroupID)
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
	cov := r.o.Enforcer.Coverage(c.Kernel)
	if err := cov.Err(c.AuditOnly, r.o.AllowPartial || prev.AllowPartial); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	c.Unenforced = cov.Gaps()
	entry := prev
	entry.Ceiling = c.Kernel
	entry.AllowPartial = len(cov.Partial) > 0
	becomesNone := c.Kernel.Shell == policy.ShellNone && old.Kernel.Shell != policy.ShellNone
	if becomesNone && prev.Pending {
		if err := r.vetEntrypoint(id, old.Entrypoint); err != nil {
			return state.Container{}, err
		}
	}
	if err := r.o.Enforcer.Register(cg, entry); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	if becomesNone && !prev.Pending {
		if err := r.vetRunning(c); err != nil {
			if rerr := r.o.Enforcer.Register(cg, prev); rerr != nil {
				r.o.Log.Error("rollback of a refused narrowing", "container", id, "err", rerr)
			}
			return state.Container{}, err
		}
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(c, "")); err != nil {
		if rerr := r.o.Enforcer.Register(cg, prev); rerr != nil {
			r.o.Log.Error("rollback of a failed narrowing", "container", id, "err", rerr)
		}
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	r.byID[id] = c
	ev := r.event(c, EventNarrowed, registeredReason(c))
	ev.Unenforced = codes(c.Unenforced)
	evs = append(evs, ev)
	return c, nil
}

// Unenforced counts the registered containers by coverage gap code
// (enforcer.Gap.Code): what the host does not enforce of their ceilings.
func (r *Registry) Unenforced() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, c := range r.byID {
		for _, g := range c.Unenforced {
			out[g.Code]++
		}
	}
	return out
}

// Get returns one container.
func (r *Registry) Get(id string) (state.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byID[id]
	if !ok {
		return state.Container{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return r.live(c), nil
}

// live is c with State read from the map for a pending registration (an
// exec may have activated it since CheckPending last looked).
func (r *Registry) live(c state.Container) state.Container {
	if c.State != state.StatePending {
		return c
	}
	if en, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && !en.Pending {
		c.State, c.PendingDeadline = state.StateActive, nil
	}
	return c
}

// CheckPending watches pending registrations; the daemon calls it every
// pending check interval with the current time. For each pending
// container: an exec has activated it (the map entry is no longer
// pending) → active; its cgroup subtree holds a process other than the
// runtime init (one that entered without exec, e.g. by clone3
// CLONE_INTO_CGROUP or a write to cgroup.procs) → activated at once; its
// deadline has passed → the cgroup is frozen, or killed when freezing
// fails (it is never activated mid-setup, and never left open). A frozen
// container whose cgroup was thawed while still pending is frozen again.
// Changes are persisted; errors saving them are returned with the events
// (the decisions themselves are already applied to the kernel).
func (r *Registry) CheckPending() ([]Event, error) {
	var evs []Event
	defer func() { r.emit(evs) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.o.Now()
	changed := false
	ids := make([]string, 0, len(r.byID))
	for id, c := range r.byID {
		if c.State == state.StatePending || c.State == state.StateFrozen {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := r.byID[id]
		en, err := r.o.Enforcer.Lookup(c.CgroupID)
		if err != nil {
			continue // not in the map: Sweep re-installs it, in force
		}
		if !en.Pending {
			if c.State == state.StatePending {
				c.State, c.PendingDeadline = state.StateActive, nil
				evs = append(evs, r.event(c, EventActivatedAtExec, ""))
				r.byID[id], changed = c, true
			}
			continue
		}
		if c.State == state.StateFrozen {
			if frozen, err := r.o.Cgroups.Frozen(c.Cgroup); err != nil || frozen {
				continue // gone (Sweep drops it) or still frozen
			}
			c, ev := r.freezeLocked(c, en, "the cgroup was thawed while its registration is still pending")
			if ev.Kind == EventFrozen {
				ev.Kind = EventRefrozen
			}
			evs = append(evs, ev)
			r.byID[id], changed = c, true
			continue
		}
		if why := r.intruders(c); why != "" {
			if _, err := r.o.Cgroups.Open(c.Cgroup); err != nil {
				continue // the cgroup is gone: Sweep drops it
			}
			active := en
			active.Pending = false
			cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
			if err := r.o.Enforcer.Register(cg, active); err != nil {
				c, ev := r.freezeLocked(c, en, fmt.Sprintf("%s, and activating failed: %v", why, err))
				evs = append(evs, ev)
				r.byID[id], changed = c, true
				continue
			}
			c.State, c.PendingDeadline = state.StateActive, nil
			c.ActivationReason = why + " (entered after registration without exec)"
			evs = append(evs, r.event(c, EventActivatedImmediately, c.ActivationReason))
			r.byID[id], changed = c, true
			continue
		}
		if c.PendingDeadline != nil && !now.Before(*c.PendingDeadline) {
			c, ev := r.freezeLocked(c, en, fmt.Sprintf("no exec in cgroup %s by the pending deadline %s", c.Cgroup, c.PendingDeadline.Format(time.RFC3339)))
			evs = append(evs, ev)
			r.byID[id], changed = c, true
		}
	}
	if !changed {
		return evs, nil
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, "")); err != nil {
		return evs, fmt.Errorf("pending check: %w", err)
	}
	return evs, nil
}

// freezeLocked stops a pending container that must not run on unenforced:
// freeze its cgroup; if that fails, kill its processes; if that fails too,
// activate the ceiling (fail closed: setup may break, nothing runs open).
// An exec that activated the entry while the freeze was under way wins:
// the cgroup is thawed and the container is active.
func (r *Registry) freezeLocked(c state.Container, en enforcer.Entry, why string) (state.Container, Event) {
	ferr := r.o.Cgroups.Freeze(c.Cgroup)
	if ferr == nil {
		if now, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && !now.Pending {
			if err := r.o.Cgroups.Thaw(c.Cgroup); err != nil {
				r.o.Log.Error("thaw of a container activated while freezing", "container", c.ID, "cgroup", c.Cgroup, "err", err)
			}
			c.State, c.PendingDeadline = state.StateActive, nil
			return c, r.event(c, EventActivatedAtExec, "")
		}
		c.State, c.PendingDeadline, c.ActivationReason = state.StateFrozen, nil, why
		r.o.Log.Warn("pending registration frozen", "container", c.ID, "cgroup", c.Cgroup, "reason", why)
		return c, r.event(c, EventFrozen, why)
	}
	active := en
	active.Pending = false
	cg := cgroup.Cgroup{Group: c.Cgroup, ID: c.CgroupID, Level: cgroup.Level(c.Cgroup)}
	kerr := r.o.Cgroups.Kill(c.Cgroup)
	if kerr == nil {
		// Nothing is left to set up: whatever enters later is enforced.
		if err := r.o.Enforcer.Register(cg, active); err != nil {
			r.o.Log.Error("activate a killed pending registration", "container", c.ID, "cgroup", c.Cgroup, "err", err)
		}
		why = fmt.Sprintf("%s; freezing failed: %v", why, ferr)
		c.State, c.PendingDeadline, c.ActivationReason = state.StateKilled, nil, why
		r.o.Log.Error("pending registration killed", "container", c.ID, "cgroup", c.Cgroup, "reason", why)
		return c, r.event(c, EventKilled, why)
	}
	why = fmt.Sprintf("%s; freezing failed: %v; killing failed: %v", why, ferr, kerr)
	if err := r.o.Enforcer.Register(cg, active); err != nil {
		r.o.Log.Error("pending registration could be neither frozen, killed nor activated", "container", c.ID, "cgroup", c.Cgroup, "reason", why, "err", err)
		return c, r.event(c, EventActivatedImmediately, why+"; activating failed: "+err.Error())
	}
	c.State, c.PendingDeadline, c.ActivationReason = state.StateActive, nil, why
	r.o.Log.Error("pending registration activated: freezing and killing failed", "container", c.ID, "cgroup", c.Cgroup, "reason", why)
	return c, r.event(c, EventActivatedImmediately, why)
}

// ByCgroup returns the container registered for a cgroup id.
func (r *Registry) ByCgroup(id uint64) (state.Container, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cid, ok := r.byCgroup[id]
	if !ok {
		return state.Container{}, false
	}
	return r.byID[cid], true
}

// List returns every container, ordered by id.
func (r *Registry) List() []state.Container {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]state.Container, 0, len(r.byID))
	for _, c := range r.byID {
		out = append(out, r.live(c))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Len is the number of registered containers.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Surface is the tool surface of a container, from the same resolution as
// its kernel ceiling.
func (r *Registry) Surface(id string) (policy.Surface, error) {
	c, err := r.Get(id)
	if err != nil {
		return policy.Surface{}, err
	}
	return policy.ResolveSurface(storedRole(c.Role), c.Session, c.ToolGroups), nil
}

// Caller is who is on the other end of an API connection.
type Caller struct {
	// Confined: the caller runs inside an enforced cgroup subtree.
	Confined bool
	// Container is the nearest registered container enclosing the caller
	// ("" when unconfined, or confined by a ceiling the daemon did not
	// register, e.g. enforcerd run).
	Container string
}

// Identify classifies a caller by its cgroup group path: confined when the
// cgroup or any ancestor has a ceiling in the map. A cgroup that cannot be
// resolved counts as confined with no container (fail closed).
func (r *Registry) Identify(group string) Caller {
	group = path.Clean(group)
	if !strings.HasPrefix(group, "/") {
		return Caller{Confined: true}
	}
	for g := group; ; g = path.Dir(g) {
		cg, err := r.o.Cgroups.Open(g)
		if err != nil {
			return Caller{Confined: true}
		}
		if c, ok := r.ByCgroup(cg.ID); ok {
			return Caller{Confined: true, Container: c.ID}
		}
		if _, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
			return Caller{Confined: true}
		}
		if g == "/" {
			return Caller{}
		}
	}
}

// Report says what Reconcile or Sweep did.
type Report struct {
	Kept        []string // live, in the map: left untouched
	Reinstalled []string // live, missing from the map: registered again (in force)
	Dropped     []string // cgroup gone: unregistered and forgotten
	Failed      []string // live but could not be re-installed: kept, logged
	Orphans     int      // map entries of gone cgroups no container owned: removed
}

// Reconcile loads the state file and makes state, map and live cgroups
// agree: live containers are kept (their map entries are not touched, so a
// restart opens no window); containers whose cgroup is gone are unregistered
// and dropped; map entries of gone cgroups are removed; map entries of live
// cgroups the daemon does not know are left alone (enforcerd run). Pins are
// never removed. Errors: the state file is unreadable or corrupt.
func (r *Registry) Reconcile() (Report, error) {
	cs, err := state.Load(r.o.StatePath)
	if err != nil {
		return Report{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID = map[string]state.Container{}
	r.byCgroup = map[uint64]string{}
	for _, c := range cs {
		if c.State == "" {
			// A state file from before activation states were kept.
			c.State = state.StateActive
			if en, err := r.o.Enforcer.Lookup(c.CgroupID); err == nil && en.Pending {
				d := r.o.Now().UTC().Add(r.o.PendingDeadline)
				c.State, c.PendingDeadline = state.StatePending, &d
			}
		}
		r.byID[c.ID] = c
		r.byCgroup[c.CgroupID] = c.ID
	}
	rep := r.sweepLocked(true)
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, "")); err != nil {
		return rep, err
	}
	return rep, nil
}

// Sweep drops containers whose cgroup is gone (the runtime never ran
// poststop, e.g. it crashed) and persists the result.
func (r *Registry) Sweep() (Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.sweepLocked(false)
	if len(rep.Dropped) == 0 && len(rep.Reinstalled) == 0 {
		return rep, nil
	}
	return rep, r.o.Save(r.o.StatePath, r.snapshotWith(state.Container{}, ""))
}

func (r *Registry) sweepLocked(orphans bool) Report {
	var rep Report
	inMap := map[uint64]enforcer.Entry{}
	regs, err := r.o.Enforcer.List()
	if err != nil {
		r.o.Log.Error("reconcile: list map", "err", err)
	}
	for _, g := range regs {
		inMap[g.CgroupID] = g.Entry
	}
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := r.byID[id]
		cg, err := r.o.Cgroups.Open(c.Cgroup)
		live := err == nil && cg.ID == c.CgroupID
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			// Cannot tell: keep it (never drop a possibly live ceiling).
			r.o.Log.Warn("reconcile: cannot check cgroup; keeping", "container", id, "cgroup", c.Cgroup, "err", err)
			rep.Kept = append(rep.Kept, id)
			continue
		}
		switch {
		case !live:
			if err := r.o.Enforcer.Unregister(c.CgroupID); err != nil && !errors.Is(err, enforcer.ErrNotRegistered) {
				r.o.Log.Warn("reconcile: unregister gone cgroup", "container", id, "cgroup_id", c.CgroupID, "err", err)
			}
			delete(r.byID, id)
			delete(r.byCgroup, c.CgroupID)
			rep.Dropped = append(rep.Dropped, id)
		default:
			if _, ok := inMap[c.CgroupID]; ok {
				rep.Kept = append(rep.Kept, id)
				continue
			}
			// Live but missing from the map (pins were removed): install
			// it again, in force now (fail closed).
			// AllowPartial: this ceiling was accepted before; refusing
			// to put it back would leave the cgroup with none at all.
			if err := r.o.Enforcer.Register(cg, enforcer.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, AllowPartial: true}); err != nil {
				r.o.Log.Error("reconcile: cannot re-install ceiling", "container", id, "cgroup", c.Cgroup, "err", err)
				rep.Failed = append(rep.Failed, id)
				continue
			}
			if c.State == state.StatePending {
				c.State, c.PendingDeadline = state.StateActive, nil
				r.byID[id] = c
			}
			rep.Reinstalled = append(rep.Reinstalled, id)
		}
	}
	if !orphans {
		return rep
	}
	var stray []uint64
	for cgid := range inMap {
		if _, ok := r.byCgroup[cgid]; !ok {
			stray = append(stray, cgid)
		}
	}
	if len(stray) == 0 {
		return rep
	}
	live, err := r.o.Cgroups.LiveIDs()
	if err != nil {
		r.o.Log.Warn("reconcile: cannot list live cgroups; leaving unknown map entries", "err", err)
		return rep
	}
	for _, cgid := range stray {
		if live[cgid] {
			continue // a live cgroup enforced by someone else (enforcerd run)
		}
		if err := r.o.Enforcer.Unregister(cgid); err == nil {
			rep.Orphans++
		}
	}
	return rep
}
