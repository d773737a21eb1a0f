package registry

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// vetEntrypoint refuses a pending shell=none registration whose first
// exec would allow a program that runs every other one without exec, or
// whose first exec the daemon cannot vet (fail closed). It returns the
// files it vetted (every file a lookup of the entrypoint could pick: the
// only ones the first exec may name, entry.Entry.Entrypoints) and
// their program interpreters, which the kernel will open for exec, as
// state.ExecFile identities.
func (r *Registry) vetEntrypoint(id string, ep *progcheck.Program) (files, interps []state.ExecFile, err error) {
	if ep == nil {
		return nil, nil, fmt.Errorf("%w: container %s: under shell=none the first exec is allowed from then on, so the daemon must vet that program first: give \"entrypoint\" {path, root, env_path, cwd} (enforcerd hook reads it from config.json), or register with activate=now", ErrEntrypointRequired, id)
	}
	v, err := r.o.CheckEntrypoint(*ep)
	switch {
	case errors.Is(err, progcheck.ErrUnsafe):
		return nil, nil, fmt.Errorf("%w: container %s: entrypoint %q (resolved inside %s as %s): %v", ErrUnsafeProgram, id, ep.Path, ep.Root, v.Resolved, err)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: container %s: entrypoint %q inside %s cannot be vetted: %v", ErrEntrypointRequired, id, ep.Path, ep.Root, err)
	}
	return interpFiles(v.Files), interpFiles(v.Interps), nil
}

// interpFiles are vetted files (program interpreters, entrypoint
// candidates) as state.ExecFile (kernel dev_t encoding,
// entry.FileIDOfStat).
func interpFiles(in []progcheck.FileRef) []state.ExecFile {
	var out []state.ExecFile
	for _, i := range in {
		id := entry.FileIDOfStat(&unix.Stat_t{Dev: i.Dev, Ino: i.Ino})
		out = appendExecFiles(out, state.ExecFile{Path: i.Path, Dev: id.Dev, Ino: id.Ino})
	}
	return out
}

// appendExecFiles adds the files of add that list lacks (by identity).
func appendExecFiles(list []state.ExecFile, add ...state.ExecFile) []state.ExecFile {
	for _, f := range add {
		if !holds(list, f) {
			list = append(list, f)
		}
	}
	return list
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
