package registry

import (
	"fmt"
	"os"
	"path"
	"strconv"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// writeRootsDir is the host directory a request's write_roots are resolved
// in, as the registered process sees "/": the entrypoint's root (a
// container registered at createRuntime, before its runtime pivots), else
// /proc/PID/root of the registered pid, else the host's "/".
func (req Request) writeRootsDir() string {
	switch {
	case req.Entrypoint != nil && req.Entrypoint.Root != "":
		return req.Entrypoint.Root
	case req.PID > 0:
		return path.Join("/proc", strconv.Itoa(req.PID), "root")
	}
	return "/"
}

// resolveWriteRoots resolves a request's write_roots for a container whose
// kernel ceiling is k: inside writeRootsDir (RESOLVE_IN_ROOT: no symlink or
// ".." leaves it), each an existing directory on a filesystem writable
// roots support (entry.WriteRootOfFile). Errors are ErrBadRequest
// naming write_roots: a ceiling that allows writes (the roots would read as
// a restriction that is not there), or a root that cannot be resolved.
// The directories come back open (O_PATH), for meetRoots; closeAll them.
func resolveWriteRoots(req Request, k policy.KernelCeiling) ([]state.WriteRoot, []*os.File, error) {
	if len(req.WriteRoots) == 0 {
		return nil, nil, nil
	}
	if k.Write {
		return nil, nil, badf("container %s: write_roots: the effective ceiling allows writes everywhere (write roots need write=false)", req.ID)
	}
	dir := req.writeRootsDir()
	root, err := progcheck.OpenRoot(dir)
	if err != nil {
		return nil, nil, badf("container %s: write_roots: %v", req.ID, err)
	}
	defer root.Close()
	out := make([]state.WriteRoot, 0, len(req.WriteRoots))
	var dirs []*os.File
	for _, p := range req.WriteRoots {
		f, err := root.OpenPath(p)
		if err != nil {
			closeAll(dirs)
			return nil, nil, badf("container %s: write_roots: %s (in %s): %v", req.ID, p, dir, err)
		}
		dirs = append(dirs, f)
		id, err := entry.WriteRootOfFile(f)
		if err != nil {
			closeAll(dirs)
			return nil, nil, badf("container %s: write_roots: %v", req.ID, err)
		}
		out = append(out, state.WriteRoot{Path: p, Dev: id.Dev, Ino: id.Ino})
	}
	return out, dirs, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// writeRootIDs are the identities of a container's roots (Entry.WriteRoots).
func writeRootIDs(rs []state.WriteRoot) []entry.FileID {
	if len(rs) == 0 {
		return nil
	}
	out := make([]entry.FileID, len(rs))
	for i, r := range rs {
		out[i] = entry.FileID{Dev: r.Dev, Ino: r.Ino}
	}
	return out
}

// checkWriteRootPaths is validate's check of write_roots' form.
func checkWriteRootPaths(req Request) error {
	if len(req.WriteRoots) == 0 {
		return nil
	}
	if _, err := policy.CheckWriteRootPaths(req.WriteRoots); err != nil {
		return badf("container %s: write_roots: %v", req.ID, err)
	}
	if req.Activate == ActivateExec && (req.Entrypoint == nil || req.Entrypoint.Root == "") {
		// Before its runtime pivots, the init's /proc/PID/root is not
		// the container's "/": the roots would be the host's paths.
		return badf("container %s: write_roots with activate=exec need entrypoint.root (the container's root directory)", req.ID)
	}
	return nil
}

// writeRootsOf is the roots a new container's entry carries: its own
// (resolveWriteRoots) met with those of the registrations it is nested in
// (meetRoots).
func (r *Registry) writeRootsOf(req Request, c state.Container) ([]state.WriteRoot, error) {
	own, dirs, err := resolveWriteRoots(req, c.Kernel)
	if err != nil {
		return nil, err
	}
	defer closeAll(dirs)
	if c.Kernel.Write {
		return nil, nil
	}
	bounds, err := r.outerRootBounds(req.Parent, c.Cgroup)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", req.ID, err)
	}
	// Whether the container's own request allowed writes: the write
	// denial then comes from outside, and so may the roots.
	_, surf, err := resolve(req.Role, req.Ceiling, req.ToolGroups, policy.DefaultSession())
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", req.ID, err)
	}
	return meetRoots(own, dirs, surf.Kernel.Write, bounds)
}
