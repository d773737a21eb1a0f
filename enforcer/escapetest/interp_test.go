package escapetest

// The program interpreter under shell=none (docs/threat-model.md X2): the
// kernel opens an ELF's PT_INTERP by path, in the process's own root, at
// every exec, and never checks it as a program. Only interpreters listed
// with the registration (vetted by the daemon as dynamic loaders) may be
// opened for exec after the program's check (bpf/exec.h exec_open): a
// sandbox that makes the path lead elsewhere (a symlink renamed over the
// loader, a chroot into a root of its own) gets EPERM from the exec.
//
// The fixture is real glibc: the guest's loader (runc's, packed by
// scripts/vmtest) copied to a short path, and a copy of runc whose
// PT_INTERP names that copy.

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/kerneltest"
	"github.com/enforcerd/enforcerd/internal/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// interp-swap-exec PROG LD TARGET MARK: rename a symlink to
		// TARGET over LD (PROG's program interpreter), then exec PROG
		// as "sh -c 'touch MARK'" (BusyBox's sh when TARGET is BusyBox).
		"interp-swap-exec": func(r *probe.Result, a []string) {
			prog, ld, target, mark := a[0], a[1], a[2], a[3]
			tmp := ld + ".swap"
			if !r.Require(os.Symlink(target, tmp), "symlink") || !r.Require(os.Rename(tmp, ld), "rename over the interpreter") {
				return
			}
			runAs(r, prog, []string{"sh", "-c", "touch " + mark})
		},
		// chroot-execveat PROG ROOT LD: open PROG, make ROOT/LD a
		// symlink to /bb (ROOT/bb is BusyBox), chroot into ROOT and
		// execveat PROG's descriptor as "sh -c 'touch /mark'".
		"chroot-execveat": func(r *probe.Result, a []string) {
			prog, root, ld := a[0], a[1], a[2]
			fd, err := unix.Open(prog, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if !r.Require(err, "open program") {
				return
			}
			in := filepath.Join(root, ld)
			if !r.Require(os.MkdirAll(filepath.Dir(in), 0o755), "mkdir") || !r.Require(os.Symlink("/bb", in), "symlink") {
				return
			}
			if !r.Require(unix.Chroot(root), "chroot") || !r.Require(unix.Chdir("/"), "chdir") {
				return
			}
			argv := []string{"sh", "-c", "touch /mark"}
			err = execveatEmpty(fd, argv)
			r.Check(err, "execveat") // returns only on failure
		},
		// exec-dyn PROG ARGS...: run PROG (a dynamic program).
		"exec-dyn": func(r *probe.Result, a []string) { runAs(r, a[0], a) },
	})
}

// runAs runs path with argv (argv[0] as given), recording exit or errno.
func runAs(r *probe.Result, path string, argv []string) {
	cmd := &exec.Cmd{Path: path, Args: argv, Env: []string{"PATH=/bin:/sbin:/usr/bin"}}
	out, err := cmd.CombinedOutput()
	r.Out = string(out)
	if len(r.Out) > 300 {
		r.Out = r.Out[:300]
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
		return
	}
	r.Check(err, "exec "+path)
}

// execveatEmpty is execveat(fd, "", argv, env, AT_EMPTY_PATH).
func execveatEmpty(fd int, argv []string) error {
	cstrs := func(ss []string) []*byte {
		out := make([]*byte, 0, len(ss)+1)
		for _, s := range ss {
			p, _ := unix.BytePtrFromString(s)
			out = append(out, p)
		}
		return append(out, nil)
	}
	empty, _ := unix.BytePtrFromString("")
	av, env := cstrs(argv), cstrs([]string{"PATH=/"})
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&env[0])), unix.AT_EMPTY_PATH, 0)
	return e
}

// dynFixture is a dynamic program whose program interpreter is a copy of
// the guest's glibc loader at a path of its own.
type dynFixture struct {
	dir  string // short directory at /
	ld   string // the loader copy (prog's PT_INTERP)
	prog string // a copy of runc naming ld
	root string // dir/root: a chroot with BusyBox at /bb
}

// newDynFixture makes a fresh fixture (before registration: nothing in it
// counts as written by the sandbox).
func newDynFixture(t *testing.T) *dynFixture {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("no runc in the guest (scripts/vmtest packs it and its glibc): %v", err)
	}
	dir, err := os.MkdirTemp("/", "ei")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &dynFixture{dir: dir, ld: filepath.Join(dir, "ld"), prog: filepath.Join(dir, "prog"), root: filepath.Join(dir, "root")}
	if err := copyPath(dynamicLoader(t), f.ld); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(runc)
	if err != nil {
		t.Fatal(err)
	}
	if err := setInterp(b, f.ld); err != nil {
		t.Fatalf("%s: %v", runc, err)
	}
	if err := os.WriteFile(f.prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyPath("/bin/busybox", filepath.Join(f.root, "bb")); err != nil {
		t.Fatal(err)
	}
	return f
}

// setInterp rewrites the PT_INTERP string of the ELF image b in place
// (the new path, NUL-padded, must fit the segment).
func setInterp(b []byte, interp string) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return err
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		if uint64(len(interp)) >= p.Filesz {
			return os.ErrInvalid
		}
		seg := b[p.Off : p.Off+p.Filesz]
		for i := range seg {
			seg[i] = 0
		}
		copy(seg, interp)
		return nil
	}
	return os.ErrNotExist
}

func TestShellNoneProgramInterpreter(t *testing.T) {
	kt.Enforcer(t)
	var f *dynFixture
	prep := func(t *testing.T) { f = newDynFixture(t) }
	allow := func(t *testing.T) []enforcer.FileID { return []enforcer.FileID{fileID(t, f.prog)} }
	interp := func(t *testing.T) []enforcer.FileID { return []enforcer.FileID{fileID(t, f.ld)} }
	want := kerneltest.Hooks(enforcer.HookFileOpen).Rule(enforcer.RuleExecOpen)
	cases := []kerneltest.Case{
		{Name: "X2 a symlink to BusyBox renamed over the vetted interpreter", Prep: prep, Allow: allow, Interp: interp, Want: want,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				mark := kt.TmpPath("touched")
				return sb.Probe(t, "interp-swap-exec", f.prog, f.ld, "/bin/busybox", mark), kerneltest.FileExists(mark)
			}},
		{Name: "X2 chroot into a root whose interpreter path is BusyBox", Prep: prep, Allow: allow, Interp: interp, Want: want,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.Probe(t, "chroot-execveat", f.prog, f.root, f.ld), kerneltest.FileExists(filepath.Join(f.root, "mark"))
			}},
		// The rule is an allow list: an allowed program whose
		// interpreter was not vetted with the registration cannot start.
		{Name: "X2 an interpreter not listed with the registration", Prep: prep, Allow: allow, Want: want,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				return sb.Probe(t, "exec-dyn", f.prog, "--version"), nil
			}},
	}
	for i := range cases {
		cases[i].Ceiling = shellNone
	}
	kt.Run(t, cases)
}

// An allowed dynamic program with its vetted interpreter runs under
// shell=none, and keeps running as often as it is exec'd.
func TestShellNoneVettedInterpreterRuns(t *testing.T) {
	kt.Enforcer(t)
	f := newDynFixture(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, enforcer.Entry{Ceiling: shellNone, ExecAllow: []enforcer.FileID{fileID(t, f.prog)}, ExecInterp: []enforcer.FileID{fileID(t, f.ld)}})
	for i := 0; i < 2; i++ {
		if r := sb.Probe(t, "exec-dyn", f.prog, "--version"); r.Setup != "" || r.Errno != 0 || r.Exit != 0 {
			t.Fatalf("shell=none: exec %d of an allowed dynamic program with its vetted interpreter: %v, want success", i, r)
		}
	}
	// The interpreter itself is not a program on the list.
	if r := sb.Probe(t, "exec-dyn", f.ld, "--version"); !r.Denied() {
		t.Errorf("shell=none: exec of the listed interpreter as a program: %v, want EPERM", r)
	}
}
