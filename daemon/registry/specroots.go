package registry

import (
	"fmt"
	"path"
	"strings"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/daemon/state"
)

// specMountsInRoots holds a spec layer's write credit to the registration:
// when coverage credits write=false to the container's spec
// (coverage.MechContainerSpec), each read-write mount the spec check
// allowed (SpecLayer.WritableMounts, beneath the roots the request named)
// must lie at or beneath one of the registration's effective writable
// roots (c.WriteRoots, after the meet with the registrations it is nested
// in); else the read-only container is not what the ceiling allows, and
// the registration is refused (ErrCannotEnforce).
func specMountsInRoots(c state.Container, cov coverage.Coverage) error {
	if c.Spec == nil || c.Kernel.Write || len(c.Spec.WritableMounts) == 0 {
		return nil
	}
	credited := false
	for _, m := range cov.Mechanisms["write"] {
		credited = credited || m == coverage.MechContainerSpec
	}
	if !credited {
		return nil
	}
	for _, m := range c.Spec.WritableMounts {
		m = path.Clean("/" + m)
		in := false
		for _, r := range c.WriteRoots {
			root := path.Clean("/" + r.Path)
			in = in || m == root || root == "/" || strings.HasPrefix(m, root+"/")
		}
		if !in {
			return fmt.Errorf("%w: write=false is enforced by the container's spec, whose read-write mount %s is not beneath the registration's writable roots (%s)", ErrCannotEnforce, m, rootPaths(c.WriteRoots))
		}
	}
	return nil
}

func rootPaths(rs []state.WriteRoot) string {
	if len(rs) == 0 {
		return "none"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.Path
	}
	return strings.Join(s, ", ")
}
