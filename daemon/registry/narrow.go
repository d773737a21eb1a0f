package registry

import (
	"fmt"
	"strings"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/policy"
)

// Narrow clamps a container's ceiling further with ceiling text, and
// carries the new bound down to every descendant (by parent id or by
// cgroup, transitively; see nesting.go): each is re-derived from its own
// session met with its ancestors' new effective ceilings. The result is
// never wider than before; activation states (pending or in force) are
// kept. Narrowing to shell=none is vetted as Register vets it (the stored
// Entrypoint while pending, the running programs once in force), for the
// container and each descendant that becomes shell=none. All or nothing:
// the map entries, then the state file, then memory, rolled back in
// reverse on any error; when refused, every ceiling stays as it was. One
// EventNarrowed per container changed (the one asked for always).
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
	if _, err := r.o.Enforcer.Lookup(old.CgroupID); err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	c := old
	c.Session, c.Ceiling, c.Kernel, c.Fingerprint = session, surf.Ceiling, surf.Kernel, surf.Fingerprint
	view := r.viewWith(c)
	changed, err := settle(view, append([]string{id}, descendants(view, id)...))
	if err != nil {
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	order := []string{id}
	for _, d := range changed {
		if d != id {
			order = append(order, d)
		}
	}
	ns, err := r.narrowingsTo(view, order)
	if err != nil {
		return state.Container{}, err
	}
	cs, undo, err := r.applyLocked(ns, id)
	if err != nil {
		return state.Container{}, err
	}
	if err := r.o.Save(r.o.StatePath, r.snapshotOf(cs...)); err != nil {
		undo.run()
		return state.Container{}, fmt.Errorf("container %s: %w", id, err)
	}
	for _, n := range cs {
		r.byID[n.ID] = n
	}
	evs = r.narrowedEvents(cs, id, "following the narrowing of container "+id)
	return cs[0], nil
}
