package hook

import (
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/enforcerd/enforcerd/coverage"
	"github.com/enforcerd/enforcerd/oci"
	"github.com/enforcerd/enforcerd/oci/speccheck"
	"github.com/enforcerd/enforcerd/policy"
)

// hookSpecLayer is what the container's runtime spec (its bundle's
// config.json) enforces by itself of write=false and network=false
// (speccheck.Check with the container's writable roots), for the daemon to
// credit on a host without BPF LSM. The hook does not know the effective
// ceiling (role, parent): both fields are judged, the daemon uses what it
// restricts. A config.json that cannot be read or decoded credits
// nothing, and says why.
func hookSpecLayer(st specs.State, writeRoots []string) *coverage.SpecLayer {
	spec, err := readBundleSpec(st.Bundle)
	if err != nil {
		why := fmt.Sprintf("cannot read the bundle's config.json: %v", err)
		return &coverage.SpecLayer{WriteMissing: why, NetworkMissing: why}
	}
	r := speccheck.Check(spec, policy.KernelCeiling{Network: false, Write: false, Shell: policy.ShellFull}, speccheck.Options{
		WriteRoots: writeRoots,
		IsSocket:   func(p string) bool { return isSocket(st.Bundle, p) },
	})
	w, n := r.Fields()
	return &coverage.SpecLayer{Write: w, Network: n, WriteMissing: r.MissingFor("write"), NetworkMissing: r.MissingFor("network"), WritableMounts: r.WritableMounts}
}

// readBundleSpec decodes bundle/config.json with oci.DecodeSpec: a spec
// with an ambiguous key (given twice, or miscased: "Readonly" beside
// "readonly") is refused, so nothing is credited from it.
func readBundleSpec(bundle string) (*specs.Spec, error) {
	if bundle == "" {
		return nil, fmt.Errorf("the state has no bundle")
	}
	name := filepath.Join(bundle, "config.json")
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := oci.DecodeSpec(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// isSocket reports whether a bind mount's source (relative ones are
// relative to the bundle, as runc takes them) is a unix socket, symlinks
// followed as the mount follows them. A source that cannot be stat'ed is
// not one (the runtime fails to mount it).
func isSocket(bundle, src string) bool {
	if !filepath.IsAbs(src) {
		src = filepath.Join(bundle, src)
	}
	fi, err := os.Stat(src)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
