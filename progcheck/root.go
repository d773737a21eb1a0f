package progcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
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
// name, as execvp does: a name containing a slash is used as is,
// relative to cwd ("/" when empty) if not absolute; a bare name is
// searched in pathEnv's directories (DefaultPath when empty; an empty or
// relative entry is taken from cwd) for the first regular file with an
// execute bit that is not on a noexec mount. It returns the path inside
// the root. Which file a runtime really picks depends on its lookup rule
// and on the user it runs as: Candidates lists every file it could be.
// Errors: ErrNotFound, or a file cannot be examined.
func (r *Root) Resolve(name, pathEnv, cwd string) (string, error) {
	picked, _, err := r.lookup(name, pathEnv, cwd)
	return picked, err
}

// Candidates lists every file a lookup of name could execute: for a
// name with a slash that file; for a bare name every regular file with
// an execute bit in every directory of pathEnv (as Resolve), whether a
// lookup would stop before it or not, once per identity. Go's
// exec.LookPath (runc's) since Go 1.20 skips a file on a noexec mount,
// and any lookup skips one the process's user may not execute (file
// mode, ACLs, a directory it may not search, an LSM's policy): which one
// runs depends on the runtime's rule and user, neither known here, so
// every candidate is vetted. Errors as Resolve.
func (r *Root) Candidates(name, pathEnv, cwd string) ([]string, error) {
	_, all, err := r.lookup(name, pathEnv, cwd)
	return all, err
}

// lookup returns the file Resolve picks and every candidate (Candidates).
func (r *Root) lookup(name, pathEnv, cwd string) (picked string, all []string, err error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return "", nil, fmt.Errorf("%w: empty or malformed program name %q", ErrNotFound, name)
	}
	if cwd == "" {
		cwd = "/"
	}
	if strings.Contains(name, "/") {
		p := name
		if !path.IsAbs(p) {
			p = path.Join(cwd, p)
		}
		c, err := r.examine(p)
		switch {
		case err != nil:
			return "", nil, err
		case !c.exists:
			return "", nil, fmt.Errorf("%w: %s inside %s: %s", ErrNotFound, p, r.path, c.why)
		}
		return p, []string{p}, nil
	}
	if pathEnv == "" {
		pathEnv = DefaultPath
	}
	var tried []string
	seen := map[fileID]bool{}
	for _, dir := range strings.Split(pathEnv, ":") {
		if !path.IsAbs(dir) {
			dir = path.Join(cwd, dir) // execvp: "" is the working directory
		}
		p := path.Join(dir, name)
		tried = append(tried, p)
		c, err := r.examine(p)
		if err != nil {
			return "", nil, err
		}
		if !c.exists {
			continue
		}
		if !c.noexec && picked == "" {
			picked = p
		}
		if !seen[c.id] {
			seen[c.id] = true
			all = append(all, p)
		}
	}
	if picked == "" {
		why := "none is an executable regular file"
		if len(all) > 0 {
			why = "each is on a noexec mount: " + strings.Join(all, ", ")
		}
		return "", nil, fmt.Errorf("%w: %q in PATH %s inside %s (tried %s; %s)", ErrNotFound, name, pathEnv, r.path, strings.Join(tried, ", "), why)
	}
	return picked, all, nil
}

// candidate is what examine found at a path.
type candidate struct {
	exists bool   // a regular file with an execute bit
	why    string // why not
	noexec bool   // on a noexec mount: execve refuses it
	id     fileID
}

// examine looks at p inside the root: is it a regular file with an
// execute bit, and is it on a noexec mount (fstatfs of the file itself,
// so the mount it resolves to inside the root decides). Errors other
// than a missing file are returned (fail closed).
func (r *Root) examine(p string) (candidate, error) {
	fd, err := r.openat2(p, unix.O_PATH)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return candidate{why: err.Error()}, nil
	case err != nil:
		return candidate{}, fmt.Errorf("%s inside %s: %w", p, r.path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return candidate{}, fmt.Errorf("%s inside %s: %w", p, r.path, &os.PathError{Op: "fstat", Path: p, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return candidate{why: fmt.Sprintf("not an executable regular file (mode %#o)", st.Mode)}, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return candidate{}, fmt.Errorf("%s inside %s: %w", p, r.path, &os.PathError{Op: "fstatfs", Path: p, Err: err})
	}
	return candidate{exists: true, noexec: sfs.Flags&unix.ST_NOEXEC != 0, id: idOf(&st)}, nil
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

// FileRef is a file a check vetted, by path and identity: a program
// interpreter (ELF PT_INTERP) vetted as a dynamic loader by content, or a
// file a lookup of an entrypoint could pick (Vetted). The kernel opens an
// interpreter by path, in the process's root, at every exec of a file
// that names it, and never checks it as a program: a shell=none
// registration lists it by identity as an interpreter only
// (entry.Entry.ExecInterp), so that the path cannot be made to lead
// to another file later; an entrypoint likewise (Entry.Entrypoints).
type FileRef struct {
	// Path is the file as named: an interpreter as the ELF names it, an
	// entrypoint candidate as the lookup found it (absolute, inside the
	// root).
	Path string
	// Dev and Ino identify the file Path led to when it was vetted (the
	// st_dev and st_ino of its fstat).
	Dev, Ino uint64
}

// Check classifies the programs at paths inside the root (symlinks
// followed inside it), together: the set one shell=none registration
// allows (its entrypoint and its allow list). It returns nil, an
// *UnsafeError (errors.Is ErrUnsafe) naming every unsafe one, or another
// error when a file cannot be opened or read (fail closed).
func (r *Root) Check(paths ...string) error {
	_, err := r.Vet(paths...)
	return err
}

// Vetted is what a vetting found safe to allow under shell=none.
type Vetted struct {
	// Resolved (Program.Vet only) is the path a lookup of the program
	// picks, inside the root.
	Resolved string
	// Files are the files vetted, each by the identity of the descriptor
	// that was classified (Program.Vet: every file a lookup could pick).
	Files []FileRef
	// Interps are the program interpreters vetted for them (ordered by
	// path).
	Interps []FileRef
}

// Vet is Check that also returns what it vetted (none on error).
func (r *Root) Vet(paths ...string) (Vetted, error) {
	files := make([]File, 0, len(paths))
	defer func() {
		for _, f := range files {
			f.F.Close()
		}
	}()
	for _, p := range paths {
		f, _, err := r.openRegular(p)
		if err != nil {
			return Vetted{}, fmt.Errorf("%s inside %s: %w", p, r.path, err)
		}
		files = append(files, File{Name: p, F: f})
	}
	return r.VetFiles(files)
}

// VetFiles is Vet for files already open (e.g. /proc/PID/exe): it
// classifies them together and returns what it vetted (none on error):
// the files, and the program interpreters of the files and of the script
// interpreters they name, resolved inside the root.
func (r *Root) VetFiles(files []File) (Vetted, error) {
	ref, err := r.reference()
	if err != nil {
		return Vetted{}, err
	}
	c := &checker{r: r, ref: ref, allowed: map[fileID]bool{}, interps: map[fileID]string{}, vetted: map[fileID]FileRef{}}
	ids := make([]fileID, len(files))
	for i, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.F.Fd()), &st); err != nil {
			return Vetted{}, fmt.Errorf("%s: %w", f.Name, &os.PathError{Op: "fstat", Path: f.Name, Err: err})
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return Vetted{}, fmt.Errorf("%s: not a regular file (mode %#o)", f.Name, st.Mode)
		}
		ids[i] = idOf(&st)
		c.allowed[ids[i]] = true
		r.addInterp(ref, f.F, f.Name)
	}
	for i, f := range files {
		if err := c.file(f.Name, f.F, ids[i], 0); err != nil {
			return Vetted{}, err
		}
	}
	if len(c.findings) > 0 {
		return Vetted{}, &UnsafeError{Findings: c.findings}
	}
	v := Vetted{Files: make([]FileRef, len(files))}
	for i, f := range files {
		v.Files[i] = FileRef{Path: f.Name, Dev: ids[i].dev, Ino: ids[i].ino}
	}
	out := make([]FileRef, 0, len(c.vetted))
	for _, in := range c.vetted {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Ino < out[j].Ino
	})
	v.Interps = out
	return v, nil
}

// checker classifies the files one registration allows (allowed: their
// identities) and what the kernel runs for them without an exec check
// of its own (ELF program interpreters) or with one (script
// interpreters, which must then be allowed too).
type checker struct {
	r        *Root
	ref      reference
	allowed  map[fileID]bool
	interps  map[fileID]string  // program interpreters vetted: "" or why not a loader
	vetted   map[fileID]FileRef // those that are loaders, as named
	findings []Finding
}

func (c *checker) add(name string, k Kind, why string) {
	c.findings = append(c.findings, Finding{Name: name, Kind: k, Reason: why})
}

// file classifies one file the registration's exec may run: by the
// root's shells and loaders, by content, then what it names to run it
// (its program interpreter, its script interpreter). depth counts the
// script interpreters above it.
func (c *checker) file(name string, f *os.File, id fileID, depth int) error {
	if why, ok := c.ref.shells[id]; ok {
		c.add(name, Shell, why)
		return nil
	}
	if why, ok := c.ref.loaders[id]; ok {
		c.add(name, Loader, why)
		return nil
	}
	k, why, err := Classify(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if k != "" {
		c.add(name, k, why)
		return nil
	}
	if info := readELF(f); info.isELF {
		if info.interp != "" {
			return c.progInterp(name, info.interp)
		}
		return nil
	}
	if interp, ok := scriptInterp(f); ok {
		return c.scriptInterp(name, interp, depth)
	}
	return nil
}

// progInterp: the kernel maps an ELF's program interpreter (PT_INTERP)
// and starts it, with no bprm_check_security of its own, so it must be
// a dynamic loader by content (and carry no shell's or multi-call
// binary's markers): otherwise a 400-byte ELF naming /bin/busybox runs
// BusyBox under the identity of an allowed file.
func (c *checker) progInterp(name, interp string) error {
	notLoader := func(why string) {
		c.add(name, NonLoaderInterp, fmt.Sprintf("program interpreter %s is not a dynamic loader: %s", interp, why))
	}
	if !path.IsAbs(interp) {
		notLoader("a relative path, which the kernel resolves from the working directory")
		return nil
	}
	f, st, err := c.r.openRegular(interp)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		notLoader("not found inside " + c.r.path)
		return nil
	case err != nil && st.Mode&unix.S_IFMT != 0 && st.Mode&unix.S_IFMT != unix.S_IFREG:
		notLoader("not a regular file")
		return nil
	case err != nil:
		return fmt.Errorf("%s: program interpreter %s inside %s: %w", name, interp, c.r.path, err)
	}
	defer f.Close()
	why, ok := c.interps[idOf(&st)]
	if !ok {
		if why, err = interpVerdict(f, st.Size); err != nil {
			return fmt.Errorf("%s: program interpreter %s: %w", name, interp, err)
		}
		c.interps[idOf(&st)] = why
	}
	if why != "" {
		notLoader(why)
		return nil
	}
	if _, ok := c.vetted[idOf(&st)]; !ok {
		c.vetted[idOf(&st)] = FileRef{Path: interp, Dev: st.Dev, Ino: st.Ino}
	}
	return nil
}

// scriptInterp: the kernel runs a "#!" script's interpreter as a later
// stage of the same exec, and under shell=none that stage must be an
// allowed file (bpf/exec.bpf.c, also for the exec that activates a
// pending registration). An interpreter that runs other programs without
// exec is refused as such (by its kind); any other one that is not
// allowed is refused too: the kernel would deny it, and this says why
// before anything runs. An interpreter that is itself a script is
// followed, at most maxScriptDepth deep.
func (c *checker) scriptInterp(name, interp string, depth int) error {
	label := fmt.Sprintf("%s (the #! interpreter of %s)", interp, name)
	if depth >= maxScriptDepth {
		return fmt.Errorf("%s: more than %d nested script interpreters (the kernel refuses the exec)", label, maxScriptDepth)
	}
	if !path.IsAbs(interp) {
		c.add(label, UnallowedInterp, "a relative path, which the kernel resolves from the working directory: name the interpreter by its absolute path, and allow it")
		return nil
	}
	f, st, err := c.r.openRegular(interp)
	if err != nil {
		return fmt.Errorf("%s inside %s: %w", label, c.r.path, err)
	}
	defer f.Close()
	id := idOf(&st)
	if c.allowed[id] {
		return nil // allowed, and checked as such
	}
	n := len(c.findings)
	if err := c.file(label, f, id, depth+1); err != nil {
		return err
	}
	for _, fd := range c.findings[n:] {
		if fd.Name == label {
			return nil // refused by its kind
		}
	}
	c.add(label, UnallowedInterp, "neither the entrypoint nor an allowed file")
	return nil
}
