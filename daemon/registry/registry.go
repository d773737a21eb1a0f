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
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/policy"
)

// Errors callers (the API) map to status codes with errors.Is.
var (
	ErrBadRequest    = errors.New("bad request")
	ErrNotFound      = errors.New("container not registered")
	ErrConflict      = errors.New("conflict")
	ErrForbidden     = errors.New("forbidden")
	ErrCannotEnforce = enforcer.ErrCannotEnforce
)

// Enforcer is the part of *enforcer.Enforcer the registry uses; tests pass a
// fake so the logic runs without BPF.
type Enforcer interface {
	Register(cgroup.Cgroup, enforcer.Entry) error
	Unregister(cgroupID uint64) error
	Lookup(cgroupID uint64) (enforcer.Entry, error)
	List() ([]enforcer.Registration, error)
}

// Cgroups resolves cgroups on the live system.
type Cgroups interface {
	// Open names an existing cgroup by its group path.
	Open(group string) (cgroup.Cgroup, error)
	// PidGroup is the cgroup v2 group path of a process.
	PidGroup(pid int) (string, error)
	// LiveIDs is the set of ids of every cgroup that exists now.
	LiveIDs() (map[uint64]bool, error)
}

// SystemCgroups is Cgroups on the real cgroup2 mount.
type SystemCgroups struct{ Mount string }

// Open implements Cgroups.
func (s SystemCgroups) Open(group string) (cgroup.Cgroup, error) { return cgroup.Open(s.Mount, group) }

// PidGroup implements Cgroups.
func (s SystemCgroups) PidGroup(pid int) (string, error) { return cgroup.PidGroup(pid) }

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

// Request registers one container.
type Request struct {
	ID string `json:"id"`
	// Cgroup is the group path below the cgroup2 mount ("/machine.slice/x");
	// or give PID and the registry reads /proc/PID/cgroup. With both, they
	// must agree.
	Cgroup     string     `json:"cgroup,omitempty"`
	PID        int        `json:"pid,omitempty"`
	Role       string     `json:"role,omitempty"`
	Ceiling    string     `json:"ceiling,omitempty"`
	Parent     string     `json:"parent,omitempty"`
	AuditOnly  bool       `json:"audit_only,omitempty"`
	ToolGroups string     `json:"tool_groups,omitempty"`
	Activate   Activation `json:"activate,omitempty"` // default now
}

func badf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// Resolve derives the ceilings of a container: the session is the parent's
// effective ceiling (else the default session) clamped by the ceiling text;
// the effective ceiling is the role's request clamped to the session. So a
// child is never wider than its parent.
func Resolve(role, ceilingText, toolGroups string, parent *state.Container) (session policy.Ceiling, s policy.Surface, err error) {
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
	s = policy.ResolveSurface(role, session, toolGroups)
	return session, s, nil
}

// Register installs a container's ceiling and persists it.
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
	session, surf, err := Resolve(req.Role, req.Ceiling, req.ToolGroups, parent)
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
	c := state.Container{
		ID: req.ID, Cgroup: cg.Group, CgroupID: cg.ID, Role: req.Role,
		Session: session, Ceiling: surf.Ceiling, Kernel: surf.Kernel, Fingerprint: surf.Fingerprint,
		Parent: req.Parent, AuditOnly: req.AuditOnly, ToolGroups: req.ToolGroups,
		Registered: r.o.Now().UTC(),
	}
	entry := enforcer.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly, Pending: req.Activate == ActivateExec}
	if err := r.o.Enforcer.Register(cg, entry); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(c, "")); err != nil {
		if uerr := r.o.Enforcer.Unregister(cg.ID); uerr != nil {
			r.o.Log.Error("rollback of a failed registration", "container", c.ID, "cgroup_id", cg.ID, "err", uerr)
		}
		return state.Container{}, fmt.Errorf("container %s: %w", req.ID, err)
	}
	r.byID[c.ID] = c
	r.byCgroup[c.CgroupID] = c.ID
	return c, nil
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
// kept.
func (r *Registry) Narrow(id, ceilingText string) (state.Container, error) {
	if strings.TrimSpace(ceilingText) == "" {
		return state.Container{}, badf("container %s: empty ceiling", id)
	}
	if len(ceilingText) > 1024 {
		return state.Container{}, badf("ceiling too long")
	}
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
	surf := policy.ResolveSurface(old.Role, session, old.ToolGroups)
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
	entry := prev
	entry.Ceiling = c.Kernel
	if err := r.o.Enforcer.Register(cg, entry); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotWith(c, "")); err != nil {
		if rerr := r.o.Enforcer.Register(cg, prev); rerr != nil {
			r.o.Log.Error("rollback of a failed narrowing", "container", id, "err", rerr)
		}
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	r.byID[id] = c
	return c, nil
}

// Get returns one container.
func (r *Registry) Get(id string) (state.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.byID[id]
	if !ok {
		return state.Container{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return c, nil
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
		out = append(out, c)
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
	return policy.ResolveSurface(c.Role, c.Session, c.ToolGroups), nil
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
			if err := r.o.Enforcer.Register(cg, enforcer.Entry{Ceiling: c.Kernel, AuditOnly: c.AuditOnly}); err != nil {
				r.o.Log.Error("reconcile: cannot re-install ceiling", "container", id, "cgroup", c.Cgroup, "err", err)
				rep.Failed = append(rep.Failed, id)
				continue
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
