package enforcer

import "github.com/enforcerd/enforcerd/coverage"

// keepSpec records s as the spec layer of the registered cgroup id (nil:
// none), so that Lookup returns it and re-registering a looked-up entry
// is judged as it was.
func (e *Enforcer) keepSpec(id uint64, s *coverage.SpecLayer) {
	if s == nil {
		e.specs.Delete(id)
		return
	}
	e.specs.Store(id, s)
}

// specOf is the spec layer keepSpec recorded for cgroup id (nil: none).
func (e *Enforcer) specOf(id uint64) *coverage.SpecLayer {
	if v, ok := e.specs.Load(id); ok {
		return v.(*coverage.SpecLayer)
	}
	return nil
}
