package main

// Tests of the enforcerd binary's run and check. They run natively (make
// unit, as root: cgroup-BPF works on these hosts, BPF LSM does not) and in
// the vmtest guest, where ENFORCERD_BIN names the binary, in both boots.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/enforcerd/enforcerd/internal/testing/probe"
	"github.com/enforcerd/enforcerd/internal/testing/vmtest"
)

var testPinDir, testPinShared = vmtest.PinDir("runtest")

func TestMain(m *testing.M) {
	probe.Main() // `enforcerd run -- <this binary>` runs a probe
	if sock := os.Getenv(floodEnv); sock != "" {
		os.Exit(floodMain(sock)) // a sandbox flooding the API (hook_flood_test.go)
	}
	code := m.Run()
	if !testPinShared {
		os.RemoveAll(testPinDir)
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

// enforcerdBin is $ENFORCERD_BIN (the vmtest guest sets it), else a binary
// built from this package once per test binary.
func enforcerdBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("ENFORCERD_BIN"); b != "" {
		return b
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "enforcerd-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "enforcerd")
		out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

type runResult struct {
	code           int
	stdout, stderr string
}

func enforcerd(t *testing.T, env []string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(enforcerdBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("enforcerd %v: %v", args, err)
	}
	return runResult{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// cli runs a command line in this process, stdin empty, and returns its
// exit status and output.
func cmdline(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = execute(args, streams{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}
