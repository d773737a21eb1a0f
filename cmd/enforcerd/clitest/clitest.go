// Package clitest is the harness of the enforcerd command packages'
// tests (cmd/enforcerd/...): each package's TestMain, the enforcerd binary
// built once per test binary and run as a child, and a command line run
// in this process. The tests run natively (make unit, as root:
// cgroup-BPF works on these hosts, BPF LSM does not) and in the vmtest
// guest, where ENFORCERD_BIN names the binary, in both boots. It may
// import the product and the harness; no product package imports it.
package clitest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/testroot"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// Main is a command package's TestMain: a probe when the test binary runs
// as one (`enforcerd run -- <this binary>`), else the tests, then the
// built binary is removed and each cleanup run (a package's pin
// directory, vmtest.PinDir).
func Main(m *testing.M, cleanup ...func()) {
	probe.Main()
	code := m.Run()
	for _, f := range cleanup {
		f()
	}
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Bin is $ENFORCERD_BIN (the vmtest guest sets it), else a binary built
// from cmd/enforcerd once per test binary.
func Bin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("ENFORCERD_BIN"); b != "" {
		return b
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "enforcerd-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "enforcerd")
		out, err := exec.Command("go", "build", "-o", built.bin, "github.com/enforcerd/enforcerd/cmd/enforcerd").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// Result is how a run of the binary ended: its exit status and output.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the binary with args, env added to the environment.
func Run(t *testing.T, env []string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(Bin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("enforcerd %v: %v", args, err)
	}
	return Result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// Cmdline runs a command line in this process with execute, stdin
// empty, and returns its exit status and output.
func Cmdline(execute func([]string, cli.Streams) int, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = execute(args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// Candidates are the completion candidates "enforcerd __complete ARGS"
// prints when run by execute (without descriptions and the directive
// line).
func Candidates(t *testing.T, execute func([]string, cli.Streams) int, args ...string) []string {
	t.Helper()
	code, out, _ := Cmdline(execute, append([]string{"__complete"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("__complete %q: exit %d", args, code)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		name, _, _ := strings.Cut(l, "\t")
		got = append(got, name)
	}
	return got
}

// ServeAPI serves the daemon's API over reg on a fresh socket until the
// test ends and returns the socket. peerGroup is the cgroup every peer is
// attributed to ("": each peer's own, as the daemon does). The API serves
// only uid 0 peers (SO_PEERCRED), so without root the test is skipped.
func ServeAPI(t *testing.T, reg *registry.Registry, peerGroup string) string {
	t.Helper()
	testroot.Require(t, "the daemon's API serves only uid 0 peers (SO_PEERCRED)")
	srv := &api.Server{Reg: reg, Hub: audit.NewHub()}
	if peerGroup != "" {
		srv.PeerGroup = func(int) (string, error) { return peerGroup, nil }
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := api.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.NewHTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return sock
}
