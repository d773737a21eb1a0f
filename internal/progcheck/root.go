package progcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultPath is the search path for a bare program name when the
// process's environment has no PATH (runc's and Docker's default).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxShellsBytes bounds the /etc/shells read.
const maxShellsBytes = 64 << 10

// fileID is a file's identity: device and inode, as the kernel's
// exec allow list keys it.
type fileID struct {
	dev uint64
	ino uint64
}

func idOf(st *unix.Stat_t) fileID { return fileID{dev: st.Dev, ino: st.Ino} }

// Root is a directory that programs are resolved in as if it were "/":
// every path, and every symlink met on the way, stays inside it (openat2
// RESOLVE_IN_ROOT; magic links such as /proc/self/root are refused).
type Root struct {
	dir  *os.File // O_PATH directory
	path string
}

// OpenRoot opens the directory at path (a host path, symlinks followed;
// e.g. /proc/PID/root/RUNTIME/ROOTFS for a container whose init has not
// pivoted yet). Errors: the directory cannot be opened.
func OpenRoot(path string) (*Root, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	return &Root{dir: os.NewFile(uintptr(fd), path), path: path}, nil
}

// Close releases the root's directory.
func (r *Root) Close() error { return r.dir.Close() }

// Path is the host path the root was opened at.
func (r *Root) Path() string { return r.path }

// openat2 opens name inside the root. EAGAIN (a concurrent rename during
// a RESOLVE_IN_ROOT walk) is retried.
func (r *Root) openat2(name string, flags uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(int(r.dir.Fd()), name, &how)
		if err == unix.EAGAIN && i < 16 || err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "openat2", Path: name, Err: err}
		}
		return fd, nil
	}
}

// stat returns the identity and mode of name inside the root, symlinks
// followed inside it.
func (r *Root) stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := r.openat2(name, unix.O_PATH)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return st, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	return st, nil
}

// openRegular opens name inside the root for reading. It is first opened
// O_PATH and must be a regular file, so a FIFO or a device node at that
// path is never opened for real.
func (r *Root) openRegular(name string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := r.openat2(name, unix.O_PATH)
	if err != nil {
		return nil, st, err
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, st, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, st, fmt.Errorf("%s: not a regular file (mode %#o)", name, st.Mode)
	}
	f, err := reopen(fd, name)
	return f, st, err
}

// reopen turns an O_PATH descriptor into a read-only one.
func reopen(fd int, name string) (*os.File, error) {
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "reopen", Path: name, Err: err}
	}
	return os.NewFile(uintptr(rfd), name), nil
}

// Resolve finds the file a process whose root is r would execute for
// name, as execvp and Go's exec.LookPath (runc's) do: a name containing a
// slash is used as is, relative to cwd ("/" when empty) if not absolute;
// a bare name is searched in pathEnv's directories (DefaultPath when
// empty; relative entries are skipped) for a regular file with an
// execute bit. It returns the path inside the root. Errors: ErrNotFound,
// or the file cannot be examined.
func (r *Root) Resolve(name, pathEnv, cwd string) (string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w: empty or malformed program name %q", ErrNotFound, name)
	}
	if cwd == "" {
		cwd = "/"
	}
	if strings.Contains(name, "/") {
		p := name
		if !path.IsAbs(p) {
			p = path.Join(cwd, p)
		}
		if err := r.executable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	if pathEnv == "" {
		pathEnv = DefaultPath
	}
	var tried []string
	for _, dir := range strings.Split(pathEnv, ":") {
		if !path.IsAbs(dir) {
			continue
		}
		p := path.Join(dir, name)
		tried = append(tried, p)
		err := r.executable(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: %q in PATH %s inside %s (tried %s)", ErrNotFound, name, pathEnv, r.path, strings.Join(tried, ", "))
}

// executable checks that p is a regular file with an execute bit.
func (r *Root) executable(p string) error {
	st, err := r.stat(p)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: %s inside %s: %v", ErrNotFound, p, r.path, err)
	case err != nil:
		return fmt.Errorf("%s inside %s: %w", p, r.path, err)
	case st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0:
		return fmt.Errorf("%w: %s inside %s is not an executable regular file (mode %#o)", ErrNotFound, p, r.path, st.Mode)
	}
	return nil
}

// ParseShells returns the entries of an /etc/shells file: one absolute
// path a line; blank lines, comments (#) and relative entries are
// ignored (getusershell(3) reads the same format).
func ParseShells(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxShellsBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] != '/' {
			continue
		}
		out = append(out, line)
	}
	return out
}

// reference is what the root itself says about its programs: the
// identities of its login shells and of its loaders.
type reference struct {
	shells  map[fileID]string // → why
	loaders map[fileID]string
}

// reference reads the root's /etc/shells (missing: no entries) and the
// program interpreters of its shells and of /bin/sh.
func (r *Root) reference() (reference, error) {
	ref := reference{shells: map[fileID]string{}, loaders: map[fileID]string{}}
	var entries []string
	f, _, err := r.openRegular("/etc/shells")
	switch {
	case err == nil:
		b, rerr := io.ReadAll(io.LimitReader(f, maxShellsBytes))
		f.Close()
		if rerr != nil {
			return ref, fmt.Errorf("/etc/shells inside %s: %w", r.path, rerr)
		}
		entries = ParseShells(b)
	case errors.Is(err, unix.ENOENT):
	default:
		return ref, fmt.Errorf("/etc/shells inside %s: %w", r.path, err)
	}
	for _, e := range entries {
		st, err := r.stat(e)
		if err != nil {
			continue // a listed shell that is not installed
		}
		if _, ok := ref.shells[idOf(&st)]; !ok {
			ref.shells[idOf(&st)] = "listed in /etc/shells as " + e
		}
	}
	for _, e := range append(entries, "/bin/sh") {
		f, _, err := r.openRegular(e)
		if err != nil {
			continue
		}
		r.addInterp(ref, f, e)
		f.Close()
	}
	return ref, nil
}

// addInterp records the identity of f's program interpreter, if any.
func (r *Root) addInterp(ref reference, f *os.File, name string) {
	info := readELF(f)
	if info.interp == "" {
		return
	}
	st, err := r.stat(info.interp)
	if err != nil {
		return // a missing loader: the program cannot run anyway
	}
	if _, ok := ref.loaders[idOf(&st)]; !ok {
		ref.loaders[idOf(&st)] = fmt.Sprintf("the program interpreter %s (ELF PT_INTERP) of %s", info.interp, name)
	}
}

// File is an open regular file to classify, and its name in messages.
type File struct {
	Name string
	F    *os.File
}

// Check classifies the programs at paths inside the root (symlinks
// followed inside it), together: the set one shell=none registration
// allows (its entrypoint and its allow list). It returns nil, an
// *UnsafeError (errors.Is ErrUnsafe) naming every unsafe one, or another
// error when a file cannot be opened or read (fail closed).
func (r *Root) Check(paths ...string) error {
	files := make([]File, 0, len(paths))
	defer func() {
		for _, f := range files {
			f.F.Close()
		}
	}()
	for _, p := range paths {
		f, _, err := r.openRegular(p)
		if err != nil {
			return fmt.Errorf("%s inside %s: %w", p, r.path, err)
		}
		files = append(files, File{Name: p, F: f})
	}
	return r.CheckFiles(files)
}

// CheckFiles is Check for files already open (e.g. /proc/PID/exe). The
// files' program interpreters are resolved inside the root.
func (r *Root) CheckFiles(files []File) error {
	ref, err := r.reference()
	if err != nil {
		return err
	}
	ids := make([]fileID, len(files))
	for i, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.F.Fd()), &st); err != nil {
			return fmt.Errorf("%s: %w", f.Name, &os.PathError{Op: "fstat", Path: f.Name, Err: err})
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("%s: not a regular file (mode %#o)", f.Name, st.Mode)
		}
		ids[i] = idOf(&st)
		r.addInterp(ref, f.F, f.Name)
	}
	var findings []Finding
	for i, f := range files {
		if why, ok := ref.shells[ids[i]]; ok {
			findings = append(findings, Finding{Name: f.Name, Kind: Shell, Reason: why})
			continue
		}
		if why, ok := ref.loaders[ids[i]]; ok {
			findings = append(findings, Finding{Name: f.Name, Kind: Loader, Reason: why})
			continue
		}
		k, why, err := Classify(f.F)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if k != "" {
			findings = append(findings, Finding{Name: f.Name, Kind: k, Reason: why})
		}
	}
	if len(findings) > 0 {
		return &UnsafeError{Findings: findings}
	}
	return nil
}
