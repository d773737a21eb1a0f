package registry

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/progcheck"
)

// MaxExecAllow is the number of files one registration's exec_allow list
// may name (Request.ExecAllow).
const MaxExecAllow = 16

// maxExecPathBytes bounds one exec_allow path (PATH_MAX).
const maxExecPathBytes = 4096

// checkExecAllowPaths is validate's check of exec_allow's form: at most
// MaxExecAllow absolute paths of at most 4096 bytes without NUL, no two
// the same; with activate=exec an entrypoint root to resolve them in.
// Errors are ErrBadRequest naming exec_allow.
func checkExecAllowPaths(req Request) error {
	if len(req.ExecAllow) == 0 {
		return nil
	}
	if len(req.ExecAllow) > MaxExecAllow {
		return badf("container %s: exec_allow: %d files, at most %d", req.ID, len(req.ExecAllow), MaxExecAllow)
	}
	seen := map[string]bool{}
	for _, p := range req.ExecAllow {
		if !path.IsAbs(p) || len(p) > maxExecPathBytes || strings.IndexByte(p, 0) >= 0 {
			return badf("container %s: exec_allow: %q is not an absolute path of at most %d bytes without NUL", req.ID, p, maxExecPathBytes)
		}
		if seen[path.Clean(p)] {
			return badf("container %s: exec_allow: %s is given twice", req.ID, p)
		}
		seen[path.Clean(p)] = true
	}
	if req.Activate == ActivateExec && (req.Entrypoint == nil || req.Entrypoint.Root == "") {
		// Before its runtime pivots, the init's /proc/PID/root is not
		// the container's "/": the files would be the host's.
		return badf("container %s: exec_allow with activate=exec needs entrypoint.root (the container's root directory)", req.ID)
	}
	return nil
}

// resolveExecAllow resolves a request's exec_allow for a container whose
// kernel ceiling is k, inside the registered process's root
// (Request.writeRootsDir; RESOLVE_IN_ROOT: no symlink or ".." leaves it):
// each must be a regular file with an execute bit. The files are
// classified together, from the descriptors their identities are read
// from (progcheck.Root.VetFiles): a shell, a multi-call binary, the
// dynamic loader, a script whose interpreter is not on the list, or an
// ELF whose program interpreter is not a loader is ErrUnsafeProgram, and
// so is a file that cannot be classified (fail closed). Other errors are
// ErrBadRequest naming exec_allow: a ceiling that is not shell=none, a
// path that cannot be resolved, a file that is not an executable regular
// file.
func resolveExecAllow(req Request, k policy.KernelCeiling) (files, interps []state.ExecFile, err error) {
	if len(req.ExecAllow) == 0 {
		return nil, nil, nil
	}
	if k.Shell != policy.ShellNone {
		return nil, nil, badf("container %s: exec_allow: the effective ceiling's shell is %s (an exec allow list needs shell=none)", req.ID, k.Shell)
	}
	dir := req.writeRootsDir()
	root, err := progcheck.OpenRoot(dir)
	if err != nil {
		return nil, nil, badf("container %s: exec_allow: %v", req.ID, err)
	}
	defer root.Close()
	open := make([]progcheck.File, 0, len(req.ExecAllow))
	defer func() {
		for _, f := range open {
			f.F.Close()
		}
	}()
	out := make([]state.ExecFile, 0, len(req.ExecAllow))
	for _, p := range req.ExecAllow {
		f, err := root.OpenRegular(p)
		if err != nil {
			return nil, nil, badf("container %s: exec_allow: %s (in %s): %v", req.ID, p, dir, err)
		}
		open = append(open, progcheck.File{Name: p, F: f})
		id, err := execFileID(f)
		if err != nil {
			return nil, nil, badf("container %s: exec_allow: %s (in %s): %v", req.ID, p, dir, err)
		}
		for _, o := range out {
			if o.Dev == id.Dev && o.Ino == id.Ino {
				return nil, nil, badf("container %s: exec_allow: %s and %s are the same file", req.ID, o.Path, p)
			}
		}
		out = append(out, state.ExecFile{Path: p, Dev: id.Dev, Ino: id.Ino})
	}
	vetted, err := root.VetFiles(open)
	if err != nil {
		if errors.Is(err, progcheck.ErrUnsafe) {
			return nil, nil, fmt.Errorf("%w: container %s: exec_allow (resolved inside %s): %v", ErrUnsafeProgram, req.ID, dir, err)
		}
		return nil, nil, fmt.Errorf("%w: container %s: exec_allow (resolved inside %s) cannot be classified: %v", ErrUnsafeProgram, req.ID, dir, err)
	}
	return out, interpFiles(vetted.Interps), nil
}

// execFileID is the identity of an open regular file with an execute bit
// (entry.FileID encoding).
func execFileID(f *os.File) (entry.FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return entry.FileID{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return entry.FileID{}, fmt.Errorf("not a regular file (mode %#o)", st.Mode)
	}
	if st.Mode&0o111 == 0 {
		return entry.FileID{}, fmt.Errorf("not executable (mode %#o)", st.Mode&0o7777)
	}
	return entry.FileIDOfStat(&st), nil
}

// execAllowIDs are the identities of a container's list (Entry.ExecAllow).
func execAllowIDs(fs []state.ExecFile) []entry.FileID {
	if len(fs) == 0 {
		return nil
	}
	out := make([]entry.FileID, len(fs))
	for i, f := range fs {
		out[i] = entry.FileID{Dev: f.Dev, Ino: f.Ino}
	}
	return out
}

// outerExecBounds lists the exec allow lists of the registrations a new
// container is nested in that restrict exec: its parent (by id) and every
// registered cgroup strictly above group, when their shell is none. A
// cgroup registered by another program (enforcerd run) is left out: its
// list is not read back from the kernel, which still checks it on its own
// at every exec (bpf/exec.h exec_allowed). interps is the union of their
// vetted program interpreters.
func (r *Registry) outerExecBounds(parent, group string) (out [][]state.ExecFile, interps []state.ExecFile, err error) {
	seen := map[string]bool{}
	add := func(c state.Container) {
		if seen[c.ID] || c.Kernel.Shell != policy.ShellNone {
			return
		}
		seen[c.ID] = true
		out = append(out, c.ExecAllow)
		interps = appendExecFiles(interps, c.ExecInterp...)
	}
	if p, ok := r.byID[parent]; ok && parent != "" {
		add(p)
	}
	err = r.eachOuter(group, func(_ string, c *state.Container, _ *entry.Entry) {
		if c != nil {
			add(*c)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return out, interps, nil
}

// meetExecAllow is the meet of a new container's own list with its outer
// bounds: a file is allowed only if every restricting list allows it, by
// identity. The container's own list restricts when it gave one or its
// own request (role and ceiling text, without parent) is shell=none
// (ownRestricts); otherwise it takes the first bound's files that every
// other bound holds. Without bounds the own list stands.
func meetExecAllow(own []state.ExecFile, ownRestricts bool, bounds [][]state.ExecFile) []state.ExecFile {
	lists := bounds
	if ownRestricts {
		lists = append([][]state.ExecFile{own}, bounds...)
	}
	if len(lists) == 0 {
		return nil
	}
	var out []state.ExecFile
	for _, f := range lists[0] {
		keep := true
		for _, l := range lists[1:] {
			if !holds(l, f) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

func holds(l []state.ExecFile, f state.ExecFile) bool {
	for _, g := range l {
		if g.Dev == f.Dev && g.Ino == f.Ino {
			return true
		}
	}
	return false
}

// execAllowOf is the list a new container's entry carries: its own
// (resolveExecAllow) met with those of the registrations it is nested in
// (meetExecAllow); none unless its effective shell is none.
// own is the request's own list as resolved (for recheckExecAllow).
// interps are the program interpreters vetted for its own list and for
// those of the registrations it is nested in (a vetted loader is harmless
// as an interpreter: it only loads the program that names it; the
// programs stay met).
func (r *Registry) execAllowOf(req Request, c state.Container) (list, own, interps []state.ExecFile, err error) {
	own, interps, err = resolveExecAllow(req, c.Kernel)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.Kernel.Shell != policy.ShellNone {
		return nil, nil, nil, nil
	}
	bounds, outer, err := r.outerExecBounds(req.Parent, c.Cgroup)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("container %s: %w", req.ID, err)
	}
	_, surf, err := resolve(req.Role, req.Ceiling, req.ToolGroups, policy.DefaultSession())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("container %s: %w", req.ID, err)
	}
	ownRestricts := len(req.ExecAllow) > 0 || surf.Kernel.Shell == policy.ShellNone
	return meetExecAllow(own, ownRestricts, bounds), own, appendExecFiles(interps, outer...), nil
}

// execVetSlack is how far before the start of the vetting recheckExecAllow
// dates it: inode change times come from the kernel's coarse clock, which
// lags the clock Go reads by up to one tick (10 ms at HZ=100).
const execVetSlack = 20 * time.Millisecond

// recheckExecAllow closes the window between vetting the request's own
// exec_allow files (resolveExecAllow, whose descriptors are closed by the
// time the entry is installed) and the registration time the kernel
// compares inode change times with: a file rewritten in place in between
// keeps its identity and a change time before the registration, so the
// kernel would not count it as written by the sandbox. Called once the
// entry is in force (later changes are the kernel's to deny), it resolves
// each path again and refuses (ErrUnsafeProgram) when the path no longer
// leads to the file vetted (own, by identity) or that file's inode changed
// at or after vetStart (minus execVetSlack). Other errors: the path cannot
// be resolved any more (also ErrUnsafeProgram: fail closed).
func recheckExecAllow(req Request, own []state.ExecFile, vetStart time.Time) error {
	if len(own) == 0 {
		return nil
	}
	since := vetStart.Add(-execVetSlack)
	dir := req.writeRootsDir()
	root, err := progcheck.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%w: container %s: exec_allow: checking the files again: %v", ErrUnsafeProgram, req.ID, err)
	}
	defer root.Close()
	for _, o := range own {
		f, err := root.OpenRegular(o.Path)
		if err != nil {
			return fmt.Errorf("%w: container %s: exec_allow: %s (in %s) changed while it was checked: %v", ErrUnsafeProgram, req.ID, o.Path, dir, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(int(f.Fd()), &st)
		f.Close()
		if err != nil {
			return fmt.Errorf("%w: container %s: exec_allow: %s (in %s): %v", ErrUnsafeProgram, req.ID, o.Path, dir, err)
		}
		if id := entry.FileIDOfStat(&st); id.Dev != o.Dev || id.Ino != o.Ino {
			return fmt.Errorf("%w: container %s: exec_allow: %s (in %s) was replaced while it was checked", ErrUnsafeProgram, req.ID, o.Path, dir)
		}
		if ct := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); !ct.Before(since) {
			return fmt.Errorf("%w: container %s: exec_allow: %s (in %s) changed while it was checked (inode change time %s): register it again once nothing writes it", ErrUnsafeProgram, req.ID, o.Path, dir, ct.UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}
