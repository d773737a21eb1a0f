// Package probe lets kernel tests attempt exactly one operation from a child
// process that starts directly inside a cgroup (CLONE_INTO_CGROUP).
//
// The test binary re-executes itself with EnvOp set; its TestMain calls Main,
// which performs the operation, prints a Result as JSON on stdout and exits
// before any test runs. The parent (Start/Run) reads the Result.
//
// A Result separates "the operation failed with errno E" (Errno) from "the
// probe could not even attempt the operation" (Setup): the second is a test
// bug, never a pass (docs/threat-model.md, the tri-state rule).
package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
)

// Environment of the child.
const (
	EnvOp   = "ENFORCERD_PROBE"      // operation name
	EnvArgs = "ENFORCERD_PROBE_ARGS" // JSON array of string arguments
	// EnvSubCgroup: before the operation, create this cgroup directory (if
	// missing) and move the probe into it by writing cgroup.procs (E1).
	EnvSubCgroup = "ENFORCERD_PROBE_SUBCGROUP"
)

// Result is what the child reports.
type Result struct {
	Op    string
	Errno syscall.Errno // 0: the operation succeeded
	// Setup is set when the probe could not attempt the operation.
	Setup string `json:",omitempty"`
}

func (r Result) String() string {
	switch {
	case r.Setup != "":
		return fmt.Sprintf("%s: could not attempt: %s", r.Op, r.Setup)
	case r.Errno == 0:
		return r.Op + ": succeeded"
	default:
		return fmt.Sprintf("%s: %s (%d)", r.Op, unix.ErrnoName(r.Errno), int(r.Errno))
	}
}

// Denied reports whether the operation failed with EPERM or EACCES.
func (r Result) Denied() bool {
	return r.Setup == "" && (r.Errno == unix.EPERM || r.Errno == unix.EACCES)
}

// setupError marks a failure before the operation itself.
type setupError struct{ err error }

func (e setupError) Error() string { return e.err.Error() }

func setupf(format string, a ...any) error { return setupError{fmt.Errorf(format, a...)} }

// Main runs the probe when EnvOp is set, and exits; otherwise it returns.
// Call it first in TestMain.
func Main() {
	op := os.Getenv(EnvOp)
	if op == "" {
		return
	}
	res := Result{Op: op}
	var args []string
	err := json.Unmarshal([]byte(os.Getenv(EnvArgs)), &args)
	if err != nil {
		err = setupf("arguments: %v", err)
	} else if sub := os.Getenv(EnvSubCgroup); sub != "" {
		err = enterSubCgroup(sub)
	}
	if err == nil {
		f, ok := ops[op]
		if !ok {
			err = setupf("unknown probe %q", op)
		} else {
			err = f(args)
		}
	}
	var se setupError
	var errno syscall.Errno
	switch {
	case err == nil:
	case errors.As(err, &se):
		res.Setup = se.Error()
	case errors.As(err, &errno):
		res.Errno = errno
	default:
		res.Setup = "not an errno: " + err.Error()
	}
	b, _ := json.Marshal(res)
	os.Stdout.Write(append(b, '\n'))
	os.Exit(0)
}

// enterSubCgroup creates dir below the probe's cgroup and moves the probe
// into it, as a hostile child would (threat model E1).
func enterSubCgroup(dir string) error {
	if err := unix.Mkdir(dir, 0o755); err != nil && err != unix.EEXIST {
		return setupf("E1: mkdir sub-cgroup %s: %v", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0); err != nil {
		return setupf("E1: enter sub-cgroup %s: %v", dir, err)
	}
	return nil
}

// Cmd describes one probe run.
type Cmd struct {
	Op   string
	Args []string
	// Files are inherited as fd 3, 4, ... (opened before any ceiling).
	Files []*os.File
	// SubCgroup: see EnvSubCgroup.
	SubCgroup string
}

// Run starts the probe directly inside the cgroup whose directory is open as
// dir (nil: the caller's cgroup) and returns its Result. It fails t when the
// child does not report one.
func Run(t testing.TB, dir *os.File, c Cmd) Result {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	args, _ := json.Marshal(append([]string{}, c.Args...))
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), EnvOp+"="+c.Op, EnvArgs+"="+string(args))
	if c.SubCgroup != "" {
		cmd.Env = append(cmd.Env, EnvSubCgroup+"="+c.SubCgroup)
	}
	cmd.ExtraFiles = c.Files
	if dir != nil {
		cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe %s %v: %v\nstdout: %s\nstderr: %s", c.Op, c.Args, err, stdout.String(), stderr.String())
	}
	var r Result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("probe %s %v: bad report %q: %v (stderr: %s)", c.Op, c.Args, stdout.String(), err, stderr.String())
	}
	return r
}

// ParseResult decodes the JSON line a probe printed (for probes started by
// another program, e.g. `enforcerd run -- <test binary>`).
func ParseResult(out []byte) (Result, error) {
	var r Result
	err := json.Unmarshal(bytes.TrimSpace(out), &r)
	return r, err
}
