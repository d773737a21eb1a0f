package registry

import (
	"fmt"

	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/state"
)

// maxSetupAncestors bounds the walk up a candidate setup process's
// parents (a pid namespace nests at most 32 deep; a process tree is
// rarely deeper than a few dozen).
const maxSetupAncestors = 64

// setupProgramOf resolves a request's SetupProgram on the daemon's file
// system to the file's identity (device + inode, following symlinks).
// nil when the request names none. Errors (ErrBadRequest): a path that is
// not absolute, missing, or not a regular file; a SetupProgram without
// activate=exec.
func setupProgramOf(req Request, group string) (*state.ExecFile, error) {
	if req.SetupProgram == "" {
		return nil, nil
	}
	if req.Activate != ActivateExec {
		return nil, badf("container %s: setup_program %s: only with activate=exec", req.ID, req.SetupProgram)
	}
	if !filepath.IsAbs(req.SetupProgram) {
		return nil, badf("container %s: setup_program %q is not an absolute path", req.ID, req.SetupProgram)
	}
	var st unix.Stat_t
	if err := unix.Stat(req.SetupProgram, &st); err != nil {
		return nil, badf("container %s: setup_program %s: %v", req.ID, req.SetupProgram, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, badf("container %s: setup_program %s is not a regular file", req.ID, req.SetupProgram)
	}
	if path.Dir(group) == "/" {
		return nil, badf("container %s: setup_program needs a cgroup below the machine's own cgroup (as <machine>/payload), not %s", req.ID, group)
	}
	return &state.ExecFile{Path: filepath.Clean(req.SetupProgram), Dev: uint32(st.Dev), Ino: st.Ino}, nil
}

// procExe returns the identity (device + inode) of the file process pid
// runs: /proc/PID/exe, the image of its last exec (or, without one since
// its fork, its parent's).
func procExe(pid int) (dev uint32, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st); err != nil {
		return 0, 0, fmt.Errorf("executable of pid %d: %w", pid, err)
	}
	return uint32(st.Dev), st.Ino, nil
}

// setupOrExecing says whether process pid in the subtree of the pending
// registration c is no intruder for its setup program: a setup process
// (isSetupProcess, remembered in r.adopted), or one adopted on an
// earlier check that no longer runs the setup program. That one has
// exec'd: the kernel changes a process's executable only past the point
// of no return of an exec (and PR_SET_MM_EXE_FILE, which needs
// CAP_SYS_RESOURCE in the code of nspawn itself), and the exec activates
// the entry at sched_process_exec, a moment after the executable changed;
// a check in between must not take it for an intruder. Called with r.mu
// held.
func (r *Registry) setupOrExecing(c state.Container, pid int) bool {
	if c.SetupProgram == nil {
		return false
	}
	st, err := r.o.StartTime(pid)
	if err != nil {
		return false
	}
	if r.isSetupProcess(c, pid) {
		if r.adopted[c.ID] == nil {
			r.adopted[c.ID] = map[int]uint64{}
		}
		r.adopted[c.ID][pid] = st
		return true
	}
	was, ok := r.adopted[c.ID][pid]
	return ok && was == st
}

// isSetupProcess says whether process pid, found in the cgroup subtree of
// the pending registration c, is the setup process c expects rather than
// an intruder: c names a SetupProgram, pid still runs that file (it has
// not exec'd since it was forked from a process running it), and one of
// its ancestors (parent, grandparent, …) runs that file too from a cgroup
// outside c's subtree but inside the subtree of c's parent cgroup (the
// supervisor of a systemd-nspawn machine, in <unit> or <unit>/supervisor,
// beside <unit>/payload). Any read that fails (the process or an
// ancestor is gone) answers false: an intruder, never adopted by default.
func (r *Registry) isSetupProcess(c state.Container, pid int) bool {
	if c.SetupProgram == nil {
		return false
	}
	same := func(p int) bool {
		dev, ino, err := r.o.ProcExe(p)
		return err == nil && dev == c.SetupProgram.Dev && ino == c.SetupProgram.Ino
	}
	if !same(pid) {
		return false
	}
	parentGroup := path.Dir(c.Cgroup)
	p := pid
	for range maxSetupAncestors {
		pp, err := r.o.ParentPID(p)
		if err != nil || pp <= 1 {
			return false
		}
		p = pp
		if !same(p) {
			continue
		}
		g, err := r.o.Cgroups.PidGroup(p)
		if err != nil {
			return false
		}
		g = path.Clean(g)
		inPayload := g == c.Cgroup || strings.HasPrefix(g, c.Cgroup+"/")
		inMachine := g == parentGroup || strings.HasPrefix(g, parentGroup+"/")
		if inMachine && !inPayload {
			return true
		}
	}
	return false
}
