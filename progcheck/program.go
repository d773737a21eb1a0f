package progcheck

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxPathBytes bounds Program's paths (PATH_MAX); maxEnvPathBytes its
// search path.
const (
	maxPathBytes    = 4096
	maxEnvPathBytes = 32 << 10
)

// Program names a container's entrypoint the way its runtime will execute
// it, from outside the container (the daemon API's "entrypoint" object;
// `enforcerd hook` fills it from the bundle's config.json).
type Program struct {
	// Path is the program as the container names it (process.args[0]):
	// absolute, relative to Cwd, or a bare name looked up in EnvPath.
	Path string `json:"path"`
	// Root is the host path of the directory the process will see as
	// "/", readable by the daemon now: for an OCI container at
	// createRuntime (its init has not pivoted yet, its rootfs may be
	// mounted only in its mount namespace), /proc/<init pid>/root
	// followed by the absolute path of the bundle's root.path.
	Root string `json:"root"`
	// EnvPath is the PATH of the process's environment (empty:
	// DefaultPath).
	EnvPath string `json:"env_path,omitempty"`
	// Cwd is the process's working directory inside Root (empty: "/").
	Cwd string `json:"cwd,omitempty"`
}

// Validate checks p's shape: Path set, Root absolute, Cwd absolute when
// set; paths at most 4096 bytes, EnvPath at most 32 KiB, no NUL bytes.
func (p Program) Validate() error {
	switch {
	case p.Path == "" || len(p.Path) > maxPathBytes || strings.IndexByte(p.Path, 0) >= 0:
		return fmt.Errorf("entrypoint path %q: want a program name of 1 to %d bytes without NUL", p.Path, maxPathBytes)
	case !path.IsAbs(p.Root) || len(p.Root) > maxPathBytes || strings.IndexByte(p.Root, 0) >= 0:
		return fmt.Errorf("entrypoint root %q: want an absolute host path of at most %d bytes", p.Root, maxPathBytes)
	case p.Cwd != "" && (!path.IsAbs(p.Cwd) || len(p.Cwd) > maxPathBytes || strings.IndexByte(p.Cwd, 0) >= 0):
		return fmt.Errorf("entrypoint cwd %q: want an absolute path of at most %d bytes", p.Cwd, maxPathBytes)
	case len(p.EnvPath) > maxEnvPathBytes || strings.IndexByte(p.EnvPath, 0) >= 0:
		return fmt.Errorf("entrypoint env_path: want at most %d bytes without NUL", maxEnvPathBytes)
	}
	return nil
}

// Check resolves p inside its root (Root.Resolve) and classifies every
// file a lookup of it could execute (Root.Candidates), each as the one
// allowed file (Root.Check): which one runs depends on the runtime's
// lookup rule and user. It returns the path the program resolved to
// inside the root (when it did), and nil, an *UnsafeError (errors.Is
// ErrUnsafe) naming every unsafe candidate, or an error: p is malformed,
// the root cannot be opened, the program is not found (ErrNotFound) or a
// candidate cannot be read (fail closed).
func (p Program) Check() (string, error) {
	v, err := p.Vet()
	return v.Resolved, err
}

// Vet is Check that also returns what it vetted: the path picked, every
// candidate file and their program interpreters (Root.Vet; on error only
// Resolved, when the lookup got that far).
func (p Program) Vet() (Vetted, error) {
	if err := p.Validate(); err != nil {
		return Vetted{}, err
	}
	r, err := OpenRoot(p.Root)
	if err != nil {
		return Vetted{}, err
	}
	defer r.Close()
	resolved, all, err := r.lookup(p.Path, p.EnvPath, p.Cwd)
	if err != nil {
		return Vetted{}, err
	}
	var (
		unsafe UnsafeError
		out    = Vetted{Resolved: resolved}
	)
	for _, c := range all {
		v, err := r.Vet(c)
		var ue *UnsafeError
		switch {
		case errors.As(err, &ue):
			unsafe.Findings = append(unsafe.Findings, ue.Findings...)
		case err != nil:
			return Vetted{Resolved: resolved}, err
		}
		out.Files = appendRefs(out.Files, v.Files)
		out.Interps = appendRefs(out.Interps, v.Interps)
	}
	if len(unsafe.Findings) > 0 {
		return Vetted{Resolved: resolved}, &unsafe
	}
	return out, nil
}

// appendRefs adds the files of add that list lacks (by identity).
func appendRefs(list, add []FileRef) []FileRef {
next:
	for _, a := range add {
		for _, l := range list {
			if l.Dev == a.Dev && l.Ino == a.Ino {
				continue next
			}
		}
		list = append(list, a)
	}
	return list
}

// CheckHost checks host programs together (the host's root "/"):
// `enforcerd run`'s command and its --exec-allow files. Relative paths are
// taken from the working directory. Errors as Root.Check.
func CheckHost(paths ...string) error {
	_, err := VetHost(paths...)
	return err
}

// VetHost is CheckHost that also returns what it vetted (Root.Vet: the
// identities of the descriptors classified, in the order of paths; none on
// error).
func VetHost(paths ...string) (Vetted, error) {
	r, err := OpenRoot("/")
	if err != nil {
		return Vetted{}, err
	}
	defer r.Close()
	abs := make([]string, len(paths))
	for i, p := range paths {
		if abs[i], err = filepath.Abs(p); err != nil {
			return Vetted{}, fmt.Errorf("%s: %w", p, err)
		}
	}
	vetted, err := r.Vet(abs...)
	var ue *UnsafeError
	if errors.As(err, &ue) {
		// Name the files as the user did.
		for i := range ue.Findings {
			for j, a := range abs {
				if ue.Findings[i].Name == a {
					ue.Findings[i].Name = paths[j]
				}
			}
		}
	}
	return vetted, err
}

// CheckProcesses classifies the programs that processes already run
// (/proc/PID/exe), each inside its own root (/proc/PID/root): what a
// shell=none ceiling put in force without an exec lets run. A process
// that has exited (or is a zombie) is skipped. Errors as Root.Check;
// Finding names read "pid N (PATH)".
func CheckProcesses(pids []int) error {
	_, err := VetProcesses(pids)
	return err
}

// VetProcesses is CheckProcesses that also returns the program
// interpreters it vetted, each resolved inside its process's root (none
// on error).
func VetProcesses(pids []int) ([]FileRef, error) {
	ps := procRoots{groups: map[fileID]*procGroup{}, seen: map[fileID]bool{}}
	defer ps.close()
	for _, pid := range pids {
		if err := ps.add(pid); err != nil {
			return nil, err
		}
	}
	return ps.vet()
}

// procGroup is the programs of processes that share one root.
type procGroup struct {
	root  *Root
	files []File
}

// procRoots gathers the programs of processes by their root, each
// program once (by identity), for VetProcesses.
type procRoots struct {
	groups map[fileID]*procGroup // by the root's identity
	order  []fileID              // the roots in the order first met
	seen   map[fileID]bool       // the programs met
}

// add opens the program of process pid (/proc/PID/exe) and its root
// (/proc/PID/root) and files the program under the root, unless it was
// met already or the process has exited. Errors: either cannot be
// opened or stat'ed.
func (ps *procRoots) add(pid int) error {
	proc := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Open(proc + "/exe")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("program of pid %d: %w", pid, err)
	}
	var xst unix.Stat_t
	if err := unix.Fstat(int(exe.Fd()), &xst); err != nil {
		exe.Close()
		return fmt.Errorf("program of pid %d: %w", pid, err)
	}
	if ps.seen[idOf(&xst)] {
		exe.Close()
		return nil
	}
	ps.seen[idOf(&xst)] = true
	name, _ := os.Readlink(proc + "/exe")
	g, err := ps.group(pid, proc)
	if g == nil || err != nil {
		exe.Close()
		return err
	}
	g.files = append(g.files, File{Name: fmt.Sprintf("pid %d (%s)", pid, name), F: exe})
	return nil
}

// group returns the group of the root of process pid (its /proc
// directory proc), opening the root, or nil when the process has
// exited. Errors: the root cannot be opened or stat'ed.
func (ps *procRoots) group(pid int, proc string) (*procGroup, error) {
	r, err := OpenRoot(proc + "/root")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return nil, nil
		}
		return nil, fmt.Errorf("program of pid %d: %w", pid, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(r.dir.Fd()), &st); err != nil {
		r.Close()
		return nil, fmt.Errorf("root of pid %d: %w", pid, err)
	}
	g, ok := ps.groups[idOf(&st)]
	if ok {
		r.Close()
		return g, nil
	}
	g = &procGroup{root: r}
	ps.groups[idOf(&st)] = g
	ps.order = append(ps.order, idOf(&st))
	return g, nil
}

// vet vets the programs of each root (Root.VetFiles) and returns the
// program interpreters vetted. Errors: an *UnsafeError with the findings
// of every root, or the first other error.
func (ps *procRoots) vet() ([]FileRef, error) {
	var (
		all     UnsafeError
		interps []FileRef
	)
	for _, id := range ps.order {
		g := ps.groups[id]
		v, err := g.root.VetFiles(g.files)
		var ue *UnsafeError
		switch {
		case errors.As(err, &ue):
			all.Findings = append(all.Findings, ue.Findings...)
		case err != nil:
			return nil, err
		}
		interps = appendRefs(interps, v.Interps)
	}
	if len(all.Findings) > 0 {
		return nil, &all
	}
	return interps, nil
}

// close closes every root and program gathered.
func (ps *procRoots) close() {
	for _, g := range ps.groups {
		g.root.Close()
		for _, f := range g.files {
			f.F.Close()
		}
	}
}
