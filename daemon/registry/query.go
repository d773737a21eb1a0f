package registry

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/policy"
)

// Unenforced counts the registered containers by coverage gap code
// (coverage.Gap.Code): what the host does not enforce of their ceilings.
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

// Attribution is ByCgroup, also for a container removed lately (one of
// the last Options.GoneKept removals): the container a denial counted under cgroup id
// belonged to, for the summary written after the container ended.
func (r *Registry) Attribution(id uint64) (state.Container, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cid, ok := r.byCgroup[id]; ok {
		return r.byID[cid], true
	}
	c, ok := r.gone[id]
	return c, ok
}

// forget removes container id (registered under c.CgroupID) and keeps it
// for Attribution. Called with r.mu held.
func (r *Registry) forget(id string, c state.Container) {
	delete(r.byID, id)
	delete(r.byCgroup, c.CgroupID)
	if _, ok := r.gone[c.CgroupID]; !ok {
		r.goneOrder = append(r.goneOrder, c.CgroupID)
	}
	r.gone[c.CgroupID] = c
	if len(r.goneOrder) > r.o.GoneKept {
		delete(r.gone, r.goneOrder[0])
		r.goneOrder = r.goneOrder[1:]
	}
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
	// CgroupID is the cgroup id of the nearest cgroup (the caller's own
	// or an ancestor) with a ceiling: the scope the API counts a confined
	// caller's connections in. 0 when unconfined, or confined because its
	// cgroup cannot be resolved (all such callers share one scope).
	CgroupID uint64
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
			return Caller{Confined: true, Container: c.ID, CgroupID: cg.ID}
		}
		if _, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
			return Caller{Confined: true, CgroupID: cg.ID}
		}
		if g == "/" {
			return Caller{}
		}
	}
}

// Scope is Identify without the container: whether a caller in cgroup
// group is confined (its cgroup or an ancestor has a ceiling in the map),
// and the cgroup id of the nearest such cgroup. It reads the map only,
// never waits for the registry's lock (a registration may hold it for
// seconds while it vets programs), so the API can count a connection the
// moment it is accepted. A cgroup that cannot be resolved is confined with
// scope 0 (fail closed).
func (r *Registry) Scope(group string) (confined bool, cgroupID uint64) {
	group = path.Clean(group)
	if !strings.HasPrefix(group, "/") {
		return true, 0
	}
	for g := group; ; g = path.Dir(g) {
		cg, err := r.o.Cgroups.Open(g)
		if err != nil {
			return true, 0
		}
		if _, err := r.o.Enforcer.Lookup(cg.ID); err == nil {
			return true, cg.ID
		}
		if g == "/" {
			return false, 0
		}
	}
}
