// Package probe lets kernel tests attempt exactly one operation from a child
// process that starts directly inside a cgroup (CLONE_INTO_CGROUP).
//
// A test binary re-executes itself with EnvOp set; its TestMain calls Main,
// which performs the operation, prints a Result as the last line on stdout
// and exits before any test runs. The parent (Run, Exec, Start) reads the
// Result. Operations are registered by name (Register): the few that
// several test packages use are here (ops.go), the others next to the tests
// that use them, in an init function of that package's test files.
//
// A Result separates "the operation failed with errno E" (Errno) from "the
// probe could not even attempt the operation" (Setup): the second is a test
// bug, never a pass (docs/threat-model.md, the tri-state rule).
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package probe

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"
)

// Environment of the child: the whole protocol between a parent and its
// probe.
const (
	EnvOp   = "ENFORCERD_PROBE"      // operation name
	EnvArgs = "ENFORCERD_PROBE_ARGS" // JSON array of string arguments (unset: none)
	// EnvSubCgroup: before the operation, create this cgroup directory (if
	// missing) and move the probe into it by writing cgroup.procs, as a
	// hostile child would (threat model E1).
	EnvSubCgroup = "ENFORCERD_PROBE_SUBCGROUP"
)

// SyncLine is what a probe prints at Sync, where it waits for its parent.
const SyncLine = "enforcerd-probe-sync"

// Result is what the child reports.
type Result struct {
	Op    string
	Errno syscall.Errno // 0: the operation succeeded
	// Setup is set when the probe could not attempt the operation.
	Setup string `json:",omitempty"`
	// Exit is the exit status of a program the probe ran (-1: none ran).
	Exit int
	// Out is what the operation reports beyond its errno: a program's
	// output, the cgroup the probe ended up in, a count.
	Out string `json:",omitempty"`
	// Effect: an effect only the probe itself can observe happened (a
	// signal delivered inside, bytes read from a peer, a limit changed).
	Effect bool `json:",omitempty"`
}

func (r Result) String() string {
	s := r.Op
	switch {
	case r.Setup != "":
		s += ": could not attempt: " + r.Setup
	case r.Errno == 0:
		s += ": succeeded"
	default:
		s += fmt.Sprintf(": %s (%d)", unix.ErrnoName(r.Errno), int(r.Errno))
	}
	if r.Exit > 0 {
		s += fmt.Sprintf(" exit=%d", r.Exit)
	}
	if r.Out != "" {
		s += fmt.Sprintf(" out=%q", r.Out)
	}
	if r.Effect {
		s += " effect"
	}
	return s
}

// Denied reports whether the operation failed with EPERM or EACCES.
func (r Result) Denied() bool {
	return r.Setup == "" && (r.Errno == unix.EPERM || r.Errno == unix.EACCES)
}

// Check records err as the outcome of the operation itself: nil is success
// (Errno stays 0), a syscall.Errno (also wrapped) is the operation's errno,
// an error made by Setupf or anything else means the probe could not
// attempt it (Setup, prefixed by what). It reports whether err was nil.
func (r *Result) Check(err error, what string) bool {
	if err == nil {
		return true
	}
	var se setupError
	var errno syscall.Errno
	switch {
	case errors.As(err, &se):
		r.Setup = se.Error()
	case errors.As(err, &errno):
		r.Errno = errno
	default:
		r.Setup = fmt.Sprintf("%s: %v", what, err)
	}
	return false
}

// Require records err, a failure of a step before the operation, as Setup
// (prefixed by what). It reports whether err was nil.
func (r *Result) Require(err error, what string) bool {
	if err != nil {
		r.Setup = fmt.Sprintf("%s: %v", what, err)
		return false
	}
	return true
}

// setupError marks a failure before the operation itself (Setupf).
type setupError struct{ err error }

func (e setupError) Error() string { return e.err.Error() }

// Setupf returns an error that Check records as Setup: for helpers that
// return one error for both a failed step and the operation's errno.
func Setupf(format string, a ...any) error { return setupError{fmt.Errorf(format, a...)} }

// An Op performs one operation in the probe process and reports it in r
// (Check and Require for errors; Exit, Out and Effect where the operation
// has them). args are the probe's arguments; an op may assume the number
// its callers pass. r arrives with Op set and Exit -1.
type Op func(r *Result, args []string)

var ops = map[string]Op{}

// Register makes op available to probes as name. Call it from an init
// function (before Main runs); a name registered twice panics.
func Register(name string, op Op) {
	if _, dup := ops[name]; dup {
		panic("probe: operation " + name + " registered twice")
	}
	ops[name] = op
}

// RegisterAll registers every op of m (see Register).
func RegisterAll(m map[string]Op) {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		Register(n, m[n])
	}
}

// Lookup returns the op registered as name (for ops that run another op).
func Lookup(name string) (Op, bool) {
	op, ok := ops[name]
	return op, ok
}

// init pins a probe process's main goroutine to the main thread (an init
// function runs there, and the lock carries into main): files under
// /proc/self name the thread group leader, and the kernel treats a write to
// some of them (timerslack_ns) from another thread as a write to another
// task's, which needs CAP_SYS_NICE.
func init() {
	if os.Getenv(EnvOp) != "" {
		runtime.LockOSThread()
	}
}

// Main runs the probe when EnvOp is set, prints its Result and exits;
// otherwise it returns. Call it first in TestMain.
func Main() {
	name := os.Getenv(EnvOp)
	if name == "" {
		return
	}
	r := Result{Op: name, Exit: -1}
	var args []string
	if s := os.Getenv(EnvArgs); s != "" {
		if err := json.Unmarshal([]byte(s), &args); err != nil {
			r.Setup = fmt.Sprintf("arguments %s: %v", s, err)
		}
	}
	if sub := os.Getenv(EnvSubCgroup); r.Setup == "" && sub != "" {
		r.Require(enterSubCgroup(sub), "E1: enter sub-cgroup "+sub)
	}
	// Per-thread kernel state (credentials, the session keyring, prctl
	// settings, seccomp) set by an op must be the state its later system
	// calls run with: the op stays on one OS thread, the main one (init).
	runtime.LockOSThread()
	if tid := unix.Gettid(); tid != os.Getpid() {
		r.Setup = fmt.Sprintf("probe runs on thread %d, not the main thread %d", tid, os.Getpid())
	}
	if r.Setup == "" {
		if op, ok := ops[name]; ok {
			op(&r, args)
		} else {
			r.Setup = fmt.Sprintf("unknown probe operation %q", name)
		}
	}
	b, _ := json.Marshal(r)
	os.Stdout.Write(append(b, '\n'))
	os.Exit(0)
}

// enterSubCgroup creates dir below the probe's cgroup and moves the probe
// into it.
func enterSubCgroup(dir string) error {
	if err := unix.Mkdir(dir, 0o755); err != nil && err != unix.EEXIST {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0)
}

// Sync lets the parent act between two steps of an operation (Cmd.Between):
// the probe prints SyncLine and waits for a line on stdin.
func Sync() {
	fmt.Println(SyncLine)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

// Func adapts an operation that only returns its error (nil, a
// syscall.Errno, or a Setupf error; see Check).
func Func(f func(args []string) error) Op {
	return func(r *Result, args []string) { r.Check(f(args), r.Op) }
}
