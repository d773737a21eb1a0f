package compat

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// driverEnv makes the test binary the cell's entrypoint: it execs its
// arguments at once (the task's /bin/sh). An agent-like program starts
// the tools, so shell=none's refusal of that exec is what advisor cells
// show.
const driverEnv = "ENFORCERD_COMPAT_EXEC"

// cellTimeout bounds one cell (TCG: go build and a venv take tens of
// seconds).
const cellTimeout = 5 * time.Minute

var onlyTools = flag.String("compat.tools", "", "comma-separated tools to run (default: every tool)")

func TestMain(m *testing.M) {
	if os.Getenv(driverEnv) == "1" {
		args := flag.Args()
		if len(os.Args) > 1 {
			args = os.Args[1:]
		}
		err := syscall.Exec(args[0], args, os.Environ())
		fmt.Fprintf(os.Stderr, "compat driver: exec %s: %v\n", args[0], err)
		os.Exit(126)
	}
	code := m.Run()
	if shared.s != nil {
		os.RemoveAll(shared.s.base)
	}
	os.Exit(code)
}

// TestCompat runs every tool's task under every role's ceiling (Tools ×
// Roles) and prints one "compat: <tool>/<role> ..." line per cell. It
// needs the Debian guest (scripts/vmtest --rootfs debian: the tools, BPF
// LSM, enforcerd at $ENFORCERD_BIN). The cells run one after the other:
// `enforcerd run` reads the denials of its sandbox from the one ring
// buffer every run shares, and two runs at once split its records
// between them (enforcer.Reader), so a cell's denials would be missing
// from its output.
func TestCompat(t *testing.T) {
	s := setUp(t)
	for _, tool := range selected(t) {
		t.Run(tool.Name, func(t *testing.T) {
			for _, role := range Roles {
				t.Run(role, func(t *testing.T) {
					c := s.cell(tool.Name + "-" + role)
					r := c.run(t, tool, role)
					fmt.Println(r.Line())
					if !r.OK {
						t.Errorf("%s", r.Line())
					}
				})
			}
		})
	}
}

// suite is what every cell shares: enforcerd, this test binary (the
// cells' entrypoint), the tasks, the fixtures and the directory of the
// workspaces.
type suite struct {
	bin, self, tasks, base, fix string
}

// shared is the suite of the test binary's first setUp, for its other
// tests (TestMain removes its directory at the end).
var shared struct {
	s    *suite
	done bool
}

// setUp checks the guest and, the first time, prepares the fixtures and
// loads the programs; a later call returns the same suite (or fails as
// the first did).
func setUp(t *testing.T) suite {
	t.Helper()
	vmtest.RequireRoot(t)
	bin := requireGuest(t)
	if !shared.done {
		shared.done = true
		shared.s = newSuite(t, bin)
	}
	if shared.s == nil {
		t.Fatal("the suite's setup failed in an earlier test")
	}
	return *shared.s
}

func newSuite(t *testing.T, bin string) *suite {
	t.Helper()
	s := suite{bin: bin}
	var err error
	if s.self, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	if s.base, err = os.MkdirTemp("/var/tmp", "compat-"); err != nil {
		t.Fatal(err)
	}
	s.fix = filepath.Join(s.base, "fix")
	prepareFixtures(t, s.fix)
	if s.tasks, err = filepath.Abs("testdata/tasks"); err != nil {
		t.Fatal(err)
	}
	s.loadPrograms(t)
	return &s
}

// loadPrograms runs enforcerd once before the cells: the first run of a
// boot loads and pins the BPF programs (tens of seconds under TCG), which
// every later run adopts; the cells that then start together all find
// them pinned.
func (s suite) loadPrograms(t *testing.T) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command(s.bin, "run", "--role", "general", "--", "/bin/true").CombinedOutput()
	if err != nil {
		t.Fatalf("enforcerd run --role general -- /bin/true: %v\n%s", err, out)
	}
	t.Logf("programs loaded in %v", time.Since(start).Round(time.Millisecond))
}

// cell is the cell whose workspace is the directory name in the suite's.
func (s suite) cell(name string) cell {
	return cell{bin: s.bin, self: s.self, tasks: s.tasks, fix: s.fix, ws: filepath.Join(s.base, name)}
}

// requireGuest returns enforcerd's path; outside the Debian guest the test
// is skipped (vmtest.Skip: a failure inside any VM guest that lacks it).
func requireGuest(t *testing.T) string {
	t.Helper()
	if !vmtest.InVM() {
		vmtest.Skip(t, "the compatibility suite runs in the Debian guest (scripts/vmtest --rootfs debian)")
	}
	vmtest.RequireLSM(t, nil)
	if _, err := os.Stat("/etc/debian_version"); err != nil {
		vmtest.Skip(t, "not the Debian guest: "+err.Error())
	}
	bin := os.Getenv("ENFORCERD_BIN")
	if bin == "" {
		t.Fatal("ENFORCERD_BIN is not set")
	}
	return bin
}

// selected are the tools -compat.tools names (default every tool).
func selected(t *testing.T) []Tool {
	if *onlyTools == "" {
		return append([]Tool(nil), Tools...)
	}
	var ts []Tool
	for _, n := range strings.Split(*onlyTools, ",") {
		found := false
		for _, tool := range Tools {
			if tool.Name == n {
				ts, found = append(ts, tool), true
			}
		}
		if !found {
			t.Fatalf("-compat.tools: no tool %q", n)
		}
	}
	return ts
}

func prepareFixtures(t *testing.T, fix string) {
	t.Helper()
	start := time.Now()
	c := exec.Command("/bin/sh", "testdata/fixtures.sh")
	c.Env = append(os.Environ(), "FIX="+fix, "HOME="+fix+"/home")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("testdata/fixtures.sh: %v\n%s", err, out)
	}
	t.Logf("fixtures in %v:\n%s", time.Since(start).Round(time.Millisecond), out)
}

// cell is one tool × role run.
type cell struct {
	bin, self, tasks, fix, ws string
}

// run makes the workspace and runs the task under the role's ceiling:
// enforcerd run --role ROLE [--write-root WS] -- <driver> /bin/sh -eux TASK.
// Under write=false the workspace is the only write root.
func (c cell) run(t *testing.T, tool Tool, role string) Result {
	c.makeWorkspace(t)
	args := []string{"run", "--role", role}
	if !policy.RequestedCeiling(policy.Role(role), policy.DefaultSession()).Write {
		args = append(args, "--write-root", c.ws)
	}
	args = append(args, "--", c.self, "/bin/sh", "-eux", filepath.Join(c.tasks, tool.Name+".sh"))
	ctx, cancel := context.WithTimeout(context.Background(), cellTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = c.ws
	cmd.Env = c.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	exit := 0
	if err != nil {
		exit = -1
		if cmd.ProcessState != nil {
			exit = cmd.ProcessState.ExitCode()
		}
		if ctx.Err() != nil {
			fmt.Fprintf(&out, "\ncompat: timed out after %v\n", cellTimeout)
		}
	}
	r := Judge(tool.Name, role, Expect(tool, role), exit, out.String(), c.ws, c.fix)
	t.Logf("%s/%s: exit %d in %v", tool.Name, role, exit, time.Since(start).Round(time.Millisecond))
	if !r.OK {
		t.Logf("output:\n%s", tail(out.String(), 60))
	}
	return r
}

// makeWorkspace makes the workspace with its tmp and home directories.
func (c cell) makeWorkspace(t *testing.T) {
	t.Helper()
	for _, d := range []string{c.ws, c.ws + "/tmp", c.ws + "/home"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// env is the task's whole environment: the workspace is HOME and TMPDIR
// (so the tools' caches and temporary files land beneath the write root),
// git has an identity, tmux a terminal type.
func (c cell) env() []string {
	return []string{
		driverEnv + "=1",
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"LANG=C.UTF-8",
		"TERM=xterm",
		"HOME=" + c.ws + "/home",
		"TMPDIR=" + c.ws + "/tmp",
		"WS=" + c.ws,
		"FIX=" + c.fix,
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com",
		"GIT_CONFIG_NOSYSTEM=1",
	}
}

func tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = append([]string{"..."}, ls[len(ls)-n:]...)
	}
	return strings.Join(ls, "\n")
}
