// Package progcheck tells whether allowing one program to be executed under
// shell=none would allow every program.
//
// shell=none is an allow list of files (device + inode) checked at each
// exec (bpf/exec.bpf.c, bprm_check_security). Three kinds of program run
// other programs without another exec the kernel could check, so allowing
// one of them, as the entrypoint or on the exec allow list, empties the
// ceiling:
//
//   - a shell (Shell): its builtins, and every applet when it is a
//     multi-call binary, run in its own process; bash also loads builtins
//     from shared objects (enable -f);
//   - a multi-call binary (MultiCall): BusyBox, toybox, GNU coreutils built
//     as a single binary, uutils coreutils. Every applet is the same file,
//     chosen by argv[0] or the first argument, so an allowed `ls` that is
//     BusyBox is also `sh` and `rm`;
//   - the dynamic loader (Loader): `ld.so /any/program` maps and runs the
//     program without an exec of it.
//
// The classification reads the file's content and the root it lives in,
// never its name: a renamed or copied BusyBox is still BusyBox. The rules,
// in order:
//
//  1. the file is one of the root's login shells: an entry of the root's
//     /etc/shells, resolved inside the root, with the same device and
//     inode (this is what catches dash, which carries no string of its
//     own, and anything the distribution registered as a shell: Debian
//     also lists tmux and screen there);
//  2. the file is the program interpreter (ELF PT_INTERP, resolved inside
//     the root, same device and inode) of one of the files checked
//     together, of a /etc/shells entry or of the root's /bin/sh: the
//     loader, whatever its name (musl's loader is its libc.so);
//  3. files that are not ELF are not classified by content: the kernel
//     runs a script (#!) or a binfmt_misc format through its interpreter,
//     as a later bprm_check_security stage of the same exec that must
//     itself be allowed (bpf/exec.bpf.c), so
//  4. a script is judged by its interpreter (UnallowedInterp, or the
//     interpreter's own kind): the "#!" line read as the kernel reads it,
//     resolved inside the root and classified by these rules, following
//     an interpreter that is itself a script up to the kernel's five
//     stages; an interpreter that is not one of the files checked
//     together is refused even when it is harmless, since the kernel
//     would deny it (binfmt_misc formats are left to the kernel);
//  5. an ELF whose DT_SONAME is a loader's (ld-linux*, ld.so*, ld64.so*,
//     ld-musl-*, ld-uClibc*);
//  6. an ELF containing every marker of one rule of the table in
//     markers.go: version strings and usage texts that only that program
//     carries (bash, zsh, ksh93, mksh, pdksh, posh, tcsh, yash, fish;
//     BusyBox, toybox, coreutils --coreutils-prog, uutils; glibc's and
//     musl's loader usage). The file is streamed, at most MaxScanBytes;
//  7. an ELF whose program interpreter (PT_INTERP, resolved inside the
//     root) is not a dynamic loader by content (rules 5 and 6), or is one
//     that also carries a shell's or multi-call binary's markers
//     (NonLoaderInterp): the kernel maps and starts that file within the
//     exec of the allowed one, with no exec check of its own.
//
// A bare program name is looked up in PATH (Root.Resolve), and every file
// a lookup could pick is checked (Root.Candidates, Program.Check): which
// one a runtime runs depends on its lookup rule and user.
//
// Not classified, by design: general-purpose interpreters and runtimes
// (python, node, perl, a JVM, qemu-user, valgrind). Allowing one is the
// user's choice, and it runs arbitrary code in its own process; the
// documentation of `enforcerd run --exec-allow` says so. A program that is
// a shell under another name and carries no marker (a copy of dash outside
// /etc/shells, a private build) is not recognised either.
//
// Fail direction: a file that cannot be resolved, opened or read, or that
// is larger than MaxScanBytes, is an error, never "safe"; callers refuse
// the ceiling (exit 125, HTTP 422).
//
// Layering (docs/design.md): layer 1; it may import nothing else of the
// module, and of other modules no cilium/ebpf, not even through its
// imports.
package progcheck

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is what makes a program unsafe to allow under shell=none.
type Kind string

// Kinds of unsafe programs.
const (
	// Shell: a command interpreter (listed in /etc/shells, or a known
	// shell's markers).
	Shell Kind = "shell"
	// MultiCall: one file that is many programs (BusyBox, toybox,
	// coreutils single binary, uutils).
	MultiCall Kind = "multi-call binary"
	// Loader: the dynamic loader, which runs the program named by its
	// argument without an exec of that program.
	Loader Kind = "dynamic loader"
	// NonLoaderInterp: an ELF whose program interpreter (PT_INTERP) is
	// not a dynamic loader by content, or is one with a shell's or
	// multi-call binary's markers besides. The kernel maps and starts
	// that interpreter with no exec check of its own.
	NonLoaderInterp Kind = "program whose ELF interpreter is not a dynamic loader"
	// UnallowedInterp: the interpreter of a "#!" script that is neither
	// the entrypoint nor an allowed file (nor a shell, a multi-call
	// binary or a loader, which are refused as such). The kernel denies
	// its exec stage.
	UnallowedInterp Kind = "script interpreter that is not allowed"
)

// AllKinds lists every Kind (TestAllKindsExplained keeps it complete).
var AllKinds = []Kind{Shell, MultiCall, Loader, NonLoaderInterp, UnallowedInterp}

// Consequence says why allowing a program of kind k defeats shell=none.
func (k Kind) Consequence() string {
	switch k {
	case Shell:
		return "it runs commands in its own process (its builtins; bash also loads builtins from shared objects) without an exec the kernel could check"
	case MultiCall:
		return "every program it contains, a shell included, runs from this one allowed file"
	case Loader:
		return "it runs any program named as its argument without an exec of that program"
	case NonLoaderInterp:
		return "the kernel maps and starts a program's interpreter without an exec check of its own, so that interpreter runs as if it were the allowed file"
	case UnallowedInterp:
		return "under shell=none a script's interpreter must itself be allowed: the kernel denies it otherwise"
	}
	return "it runs other programs without an exec"
}

// Finding is one unsafe program.
type Finding struct {
	// Name is the file as the caller named it (or as it was resolved).
	Name string
	Kind Kind
	// Reason says what identified it, e.g. "listed in /etc/shells as
	// /bin/bash" or "BusyBox's banner and usage text".
	Reason string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s is a %s (%s): %s", f.Name, f.Kind, f.Reason, f.Kind.Consequence())
}

// Errors callers test with errors.Is.
var (
	// ErrUnsafe: a program is a shell, a multi-call binary or the
	// dynamic loader, a script whose interpreter is one of those or is
	// not allowed, or an ELF whose program interpreter is not a dynamic
	// loader (the error is an *UnsafeError; each Finding's Kind says
	// which).
	ErrUnsafe = errors.New("program runs other programs without exec")
	// ErrNotFound: a program name does not resolve to an executable
	// regular file inside the root.
	ErrNotFound = errors.New("program not found")
	// ErrTooLarge: a file is larger than MaxScanBytes and cannot be
	// classified.
	ErrTooLarge = errors.New("file too large to classify")
)

// UnsafeError lists the unsafe programs of one check.
type UnsafeError struct {
	Findings []Finding
}

func (e *UnsafeError) Error() string {
	parts := make([]string, len(e.Findings))
	for i, f := range e.Findings {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrUnsafe) hold.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }
