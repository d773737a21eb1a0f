package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
)

// DefaultTimeout bounds a Run or Exec whose Cmd sets no Timeout.
const DefaultTimeout = 60 * time.Second

// baseEnv is the environment of every probe besides its own variables and
// Cmd.Env: nothing of the test's environment leaks into a sandbox.
var baseEnv = []string{"PATH=/bin:/sbin:/usr/bin", "TMPDIR=/tmp"}

// Cmd describes one probe run.
type Cmd struct {
	Op   string
	Args []string
	// Files are inherited as fd 3, 4, ... (opened before any ceiling).
	// They are closed once the probe started: it holds the only copies.
	Files []*os.File
	// SubCgroup: see EnvSubCgroup.
	SubCgroup string
	// Env is added to the probe's environment (otherwise the probe's own
	// variables, PATH and TMPDIR only).
	Env []string
	// Between, when set, is called when the probe reaches Sync (Run and
	// Exec only). A probe that never reaches it fails Run, unless it
	// reports that it could not attempt the operation.
	Between func()
	// Path is the program to run (default: this test binary).
	Path string
	// Timeout bounds the run: the probe is killed after it (Run and Exec:
	// default DefaultTimeout; Start: none).
	Timeout time.Duration
}

// Env is the environment that makes a test binary run op with args as a
// probe (for programs that start the probe themselves, e.g. `enforcerd run
// -- <test binary>`, and for ops that start another probe).
func Env(op string, args ...string) []string {
	b, _ := json.Marshal(append([]string{}, args...))
	return []string{EnvOp + "=" + op, EnvArgs + "=" + string(b)}
}

// command prepares c to start directly inside the cgroup open as dir (nil:
// the caller's cgroup).
func command(ctx context.Context, dir *os.File, c Cmd) (*exec.Cmd, error) {
	path := c.Path
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		path = self
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Env = append(append(append([]string{}, baseEnv...), Env(c.Op, c.Args...)...), c.Env...)
	if c.SubCgroup != "" {
		cmd.Env = append(cmd.Env, EnvSubCgroup+"="+c.SubCgroup)
	}
	cmd.ExtraFiles = c.Files
	if dir != nil {
		cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	}
	return cmd, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Run starts the probe directly inside the cgroup open as dir (nil: the
// caller's cgroup) and returns its Result. It fails t when the probe
// reports none.
func Run(t testing.TB, dir *os.File, c Cmd) Result {
	t.Helper()
	r, err := Exec(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Exec is Run for callers without a testing.TB: an error says that the
// probe did not run or reported no Result.
func Exec(dir *os.File, c Cmd) (Result, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := command(ctx, dir, c)
	if err != nil {
		closeFiles(c.Files)
		return Result{}, fmt.Errorf("probe %s: %w", c.Op, err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var stdin io.WriteCloser
	if c.Between != nil {
		if stdin, err = cmd.StdinPipe(); err != nil {
			closeFiles(c.Files)
			return Result{}, err
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		closeFiles(c.Files)
		return Result{}, err
	}
	err = cmd.Start()
	closeFiles(c.Files)
	if err != nil {
		return Result{}, fmt.Errorf("start probe %s: %w", c.Op, err)
	}
	var out []string
	synced := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if c.Between != nil && line == SyncLine && !synced {
			synced = true
			c.Between()
			_, _ = stdin.Write([]byte("\n"))
			continue
		}
		out = append(out, line)
	}
	if stdin != nil {
		stdin.Close()
	}
	werr := cmd.Wait()
	r, perr := ParseResult([]byte(strings.Join(out, "\n")))
	if perr != nil {
		return r, fmt.Errorf("probe %s %q: no result (exit: %v): stdout %q stderr %q", c.Op, c.Args, werr, out, stderr.String())
	}
	if c.Between != nil && !synced && r.Setup == "" {
		return r, fmt.Errorf("probe %s %q never reached its sync point: %v", c.Op, c.Args, r)
	}
	return r, nil
}

// ParseResult decodes the Result a probe printed: the last non-empty line
// of out (for probes started by another program, e.g. `enforcerd run --
// <test binary>`, or by an op).
func ParseResult(out []byte) (Result, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return parseLine(lines[len(lines)-1])
}

func parseLine(line string) (Result, error) {
	var r Result
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, err
	}
	if r.Op == "" {
		return r, errors.New("not a probe result (no Op)")
	}
	return r, nil
}

// Process is a probe started with Start: a workload that runs while the
// test acts (it reads stdin, prints lines, and ends when its op returns).
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	cancel context.CancelFunc
	stderr bytes.Buffer
	mu     sync.Mutex
	lines  []string
	res    *Result
	done   chan struct{}
}

// Start starts the probe directly inside the cgroup open as dir (nil: the
// caller's cgroup) and returns at once; c.Between is not used.
func Start(dir *os.File, c Cmd) (*Process, error) {
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if c.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	cmd, err := command(ctx, dir, c)
	if err != nil {
		cancel()
		closeFiles(c.Files)
		return nil, err
	}
	p := &Process{cmd: cmd, cancel: cancel, done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		closeFiles(c.Files)
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		closeFiles(c.Files)
		return nil, err
	}
	err = cmd.Start()
	closeFiles(c.Files)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start probe %s: %w", c.Op, err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			if r, err := parseLine(line); err == nil {
				p.res = &r
			} else {
				p.lines = append(p.lines, line)
			}
			p.mu.Unlock()
		}
	}()
	return p, nil
}

// Pid is the probe's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Write writes b to the probe's stdin.
func (p *Process) Write(b []byte) error {
	_, err := p.stdin.Write(b)
	return err
}

// CloseStdin closes the probe's stdin (ops that run until their input
// ends stop).
func (p *Process) CloseStdin() error { return p.stdin.Close() }

// Lines returns what the probe printed so far, one entry per line, without
// its Result.
func (p *Process) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Done is closed when the probe's output ended (it exited).
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill kills the probe (Wait still has to be called).
func (p *Process) Kill() error { return p.cmd.Process.Kill() }

// Wait waits until the probe exited and its output ended, and returns its
// Result; an error says that it printed none (it was killed, or its op
// replaced or ended the process itself).
func (p *Process) Wait() (Result, error) {
	<-p.done
	werr := p.cmd.Wait()
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.res == nil {
		return Result{}, fmt.Errorf("probe pid %d: no result (exit: %v): stderr %q", p.cmd.Process.Pid, werr, p.stderr.String())
	}
	return *p.res, nil
}
