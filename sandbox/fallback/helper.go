package fallback

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// HelperArg is the first argument that makes the enforcerd binary the
// helper: enforcerd HelperArg SPEC-JSON PATH ARGV0 [ARG...].
const HelperArg = "__enforcerd-restrict-exec"

// ExitCannotEnforce is the helper's status when it could not apply the
// spec (the command never ran), as `enforcerd run`'s.
const ExitCannotEnforce = 125

// Wrap rewrites c to start helper (the enforcerd binary) with spec, which
// then execs c's program with c's arguments. c.Path must be the program's
// path; c.Args[0] stays the program's argv[0].
func Wrap(c *exec.Cmd, helper string, spec Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	c.Args = append([]string{"enforcerd", HelperArg, string(b), c.Path}, c.Args...)
	c.Path = helper
	return nil
}

// Main is the helper: it parses its arguments (after HelperArg), applies
// the spec to itself and execs the program. It returns only on failure:
// ExitCannotEnforce when the spec could not be applied (message on
// stderr), 127 when the program is not found, 126 when it cannot be
// executed.
func Main(args []string, stderr io.Writer) int {
	if len(args) < 3 {
		fmt.Fprintln(stderr, "enforcerd: restrict-exec: want SPEC PATH ARGV0 [ARG...]")
		return ExitCannotEnforce
	}
	var spec Spec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		fmt.Fprintf(stderr, "enforcerd run: cannot enforce: restrict-exec spec: %v\n", err)
		return ExitCannotEnforce
	}
	// Everything on one thread, which then execs: the Landlock domain,
	// no_new_privs and the filter are per thread, and the exec'd program
	// inherits the calling thread's.
	runtime.LockOSThread()
	if err := Apply(spec); err != nil {
		fmt.Fprintf(stderr, "enforcerd run: cannot enforce: %v\n", err)
		return ExitCannotEnforce
	}
	err := syscall.Exec(args[1], args[2:], os.Environ())
	fmt.Fprintf(stderr, "enforcerd run: %s: %v\n", args[1], err)
	if err == syscall.ENOENT {
		return 127
	}
	return 126
}

// Apply sets no_new_privs and applies the Landlock ruleset and the
// seccomp filter of spec to the calling thread (lock it first); the
// filter is loaded with SECCOMP_FILTER_FLAG_LOG (seccompFlags), so the
// kernel's audit trail has its denials. Errors:
// any step, wrapped with what failed; the thread is then partly
// restricted and must not run the command.
func Apply(spec Spec) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if spec.HandledFS|spec.HandledNet|spec.Scoped != 0 {
		if err := landlock(spec); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	raw, err := filter(spec.Seccomp)
	if err != nil {
		return err
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, seccompFlags, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp filter: %w", e)
	}
	return nil
}

// rulesetAttr is struct landlock_ruleset_attr up to the field the ABI
// knows: the kernel refuses a longer struct with non-zero bytes it does
// not know, and the size tells it which fields we mean.
type rulesetAttr struct {
	handledFS, handledNet, scoped uint64
}

func landlock(spec Spec) error {
	attr := rulesetAttr{spec.HandledFS, spec.HandledNet, spec.Scoped}
	size := unsafe.Sizeof(attr)
	switch {
	case spec.LandlockABI < 4:
		size = 8
	case spec.LandlockABI < 6:
		size = 16
	}
	fd, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("create ruleset (ABI %d): %w", spec.LandlockABI, e)
	}
	defer unix.Close(int(fd))
	for _, r := range spec.Paths {
		if err := addPath(int(fd), r); err != nil {
			return err
		}
	}
	for _, p := range spec.ConnectTCP {
		if err := llsys.LandlockAddNetPortRule(int(fd), &llsys.NetPortAttr{AllowedAccess: llsys.AccessNetConnectTCP, Port: uint64(p)}, 0); err != nil {
			return fmt.Errorf("tcp port %d: %w", p, err)
		}
	}
	if err := llsys.LandlockRestrictSelf(int(fd), 0); err != nil {
		return fmt.Errorf("restrict self: %w", err)
	}
	return nil
}

// addPath opens r.Path (O_PATH), checks its identity and adds the rule.
func addPath(rulesetFD int, r PathRule) error {
	fd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Path, err)
	}
	defer unix.Close(fd)
	if r.Dev != 0 || r.Ino != 0 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("%s: %w", r.Path, err)
		}
		if st.Dev != r.Dev || st.Ino != r.Ino {
			return fmt.Errorf("%s was replaced since run checked it (device/inode changed)", r.Path)
		}
	}
	attr := llsys.PathBeneathAttr{AllowedAccess: r.Access, ParentFd: fd}
	if err := llsys.LandlockAddPathBeneathRule(rulesetFD, &attr, 0); err != nil {
		return fmt.Errorf("%s (access %#x): %w", r.Path, r.Access, err)
	}
	return nil
}
