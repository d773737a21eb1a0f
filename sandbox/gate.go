package sandbox

// The exec gate: how Run starts CMD when the registration names CMD's
// process (InitRegistrar, e.g. an enforcerd daemon's pending registration
// with init_pid). The process is started first, inside the cgroup, as the
// enforcerd binary with GateArg: it waits on an inherited pipe, and execs
// CMD only once Run writes the release byte, which Run does only after
// the registration succeeded. Its exec of CMD is then the first exec of
// the cgroup's only process after the registration: the one that
// activates a pending registration. When the registration fails Run
// closes the pipe (or kills the gate): CMD is never executed.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// GateArg is the hidden first argument that makes the enforcerd binary
// (and the sandbox package's test binary) the exec gate: the program's
// main dispatches it before anything else, calling GateMain with the
// arguments after it.
const GateArg = "__enforcerd-exec-gate"

// gateRelease is the byte that lets the gate exec CMD.
const gateRelease = 'x'

// Exit statuses of the gate when it does not exec CMD.
const (
	// GateAborted: the pipe closed (or failed) without the release byte,
	// or the gate's arguments are bad. Nothing was executed.
	GateAborted = 125
	// GateNotExecutable: CMD exists but could not be executed (as a
	// shell's 126).
	GateNotExecutable = 126
	// GateNotFound: CMD does not exist (as a shell's 127).
	GateNotFound = 127
)

// GateMain is the exec gate: args are FD PATH ARGV0 [ARG...]. It marks
// descriptor FD (the read end of the release pipe) close-on-exec, reads one
// byte from it and, when that is the release byte, closes it and execs
// PATH with argv ARGV0 ARG... and this process's environment. It returns
// (the caller exits with it) only when it does not exec: GateAborted when
// the pipe ends without the release byte or args are malformed,
// GateNotFound when PATH does not exist, GateNotExecutable for every other
// exec failure; the reason goes to stderr.
func GateMain(args []string, stderr io.Writer) int {
	if len(args) < 3 {
		fmt.Fprintf(stderr, "enforcerd exec gate: want FD PATH ARGV0 [ARG...], got %d arguments\n", len(args))
		return GateAborted
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil || fd < 3 {
		fmt.Fprintf(stderr, "enforcerd exec gate: bad descriptor %q\n", args[0])
		return GateAborted
	}
	// Before anything else: the descriptor must never reach CMD.
	syscall.CloseOnExec(fd)
	var b [1]byte
	n, rerr := readRetry(fd, b[:])
	syscall.Close(fd)
	if n != 1 || b[0] != gateRelease {
		// The registration did not succeed (or run died): no exec.
		if rerr != nil {
			fmt.Fprintf(stderr, "enforcerd exec gate: not released (%v): %s not executed\n", rerr, args[1])
		}
		return GateAborted
	}
	err = syscall.Exec(args[1], args[2:], os.Environ())
	fmt.Fprintf(stderr, "enforcerd run: %s: %v\n", args[1], err)
	if errors.Is(err, syscall.ENOENT) {
		return GateNotFound
	}
	return GateNotExecutable
}

// readRetry is read(2) on fd, retried on EINTR.
func readRetry(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// gate is the parent's side of one exec gate.
type gate struct {
	r, w *os.File
}

// wrapGate rewrites c to start as the exec gate (self: the binary that
// dispatches GateArg, e.g. /proc/self/exe) that execs c's program with c's
// arguments once released; the pipe's read end is appended to
// c.ExtraFiles. Call started after c.Start (whatever its result), then
// release or abort. Errors: c already carries an error (c.Err), or the
// pipe cannot be made; c is unchanged then.
func wrapGate(c *exec.Cmd, self string) (*gate, error) {
	if c.Err != nil {
		return nil, c.Err
	}
	r, w, err := os.Pipe() // both ends O_CLOEXEC
	if err != nil {
		return nil, fmt.Errorf("exec gate: %w", err)
	}
	fd := 3 + len(c.ExtraFiles)
	c.ExtraFiles = append(c.ExtraFiles, r)
	args := append([]string{"enforcerd", GateArg, strconv.Itoa(fd), c.Path}, c.Args...)
	c.Path, c.Args = self, args
	return &gate{r: r, w: w}, nil
}

// started closes the parent's copy of the read end (the gate has its
// own, or was not started).
func (g *gate) started() { g.r.Close() }

// release lets the gate exec CMD. Errors: the gate is gone (the byte
// cannot be written).
func (g *gate) release() error {
	defer g.w.Close()
	if _, err := g.w.Write([]byte{gateRelease}); err != nil {
		return fmt.Errorf("exec gate: release: %w", err)
	}
	return nil
}

// abort ends the pipe without the release byte: the gate exits without
// executing anything.
func (g *gate) abort() { g.w.Close() }
