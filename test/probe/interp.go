package probe

// Operations of the program interpreter cases (shell=none): a sandbox
// that makes an allowed dynamic program's PT_INTERP path lead to another
// program, by renaming over it or by chrooting into a root of its own.

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	RegisterAll(map[string]Op{
		// interp-swap-exec PROG LD TARGET MARK: rename a symlink to
		// TARGET over LD (PROG's program interpreter), then exec PROG as
		// "sh -c 'touch MARK'" (BusyBox's sh when TARGET is BusyBox).
		"interp-swap-exec": func(r *Result, a []string) {
			prog, ld, target, mark := a[0], a[1], a[2], a[3]
			tmp := ld + ".swap"
			if !r.Require(os.Symlink(target, tmp), "symlink") || !r.Require(os.Rename(tmp, ld), "rename over the interpreter") {
				return
			}
			RunAs(r, prog, []string{"sh", "-c", "touch " + mark})
		},
		// chroot-execveat PROBE PROG ROOT LD: run PROBE (an allowed
		// copy of this program) as chroot-execveat-exec, which opens
		// PROG, makes ROOT/LD a symlink to /bb (ROOT/bb is BusyBox),
		// chroots into ROOT and execveats PROG's descriptor as
		// "sh -c 'touch /mark'". The inner probe reports only a failed
		// exec; else BusyBox's exit is this result's.
		"chroot-execveat": func(r *Result, a []string) {
			cmd := exec.Command(a[0])
			cmd.Env = append([]string{"PATH=/bin:/sbin:/usr/bin"}, Env("chroot-execveat-exec", a[1:]...)...)
			out, err := cmd.CombinedOutput()
			if inner, perr := ParseResult(out); perr == nil {
				*r = inner
				return
			}
			r.Out = string(out)
			if ee, ok := err.(*exec.ExitError); ok {
				r.Exit = ee.ExitCode()
				return
			}
			if r.Check(err, "exec "+a[0]) {
				r.Exit = 0
			}
		},
		"chroot-execveat-exec": func(r *Result, a []string) {
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
			r.Check(execveatEmpty(fd, []string{"sh", "-c", "touch /mark"}, []string{"PATH=/"}), "execveat")
		},
		// exec-as PROG ARGV0 ARGS...: run PROG with argv[0] ARGV0.
		"exec-as": func(r *Result, a []string) { RunAs(r, a[0], a[1:]) },
	})
}

// RunAs runs the program at path with argv (argv[0] as given, PATH only
// in its environment): Errno is the exec's, Exit and Out the program's.
func RunAs(r *Result, path string, argv []string) {
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
	if r.Check(err, "exec "+path) {
		r.Exit = 0
	}
}

// execveatEmpty is execveat(fd, "", argv, env, AT_EMPTY_PATH), which
// golang.org/x/sys/unix does not wrap: it runs the open file, whatever its
// path leads to now, and returns only on failure.
func execveatEmpty(fd int, argv, env []string) error {
	av, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	ev, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return err
	}
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&ev[0])), unix.AT_EMPTY_PATH, 0)
	return e
}
