package main

// Tests of the enforcerd binary's run and check. They run natively (make
// unit, as root: cgroup-BPF works on these hosts, BPF LSM does not) and in
// the vmtest guest, where ENFORCERD_BIN names the binary, in both boots.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/probe"
	"github.com/enforcerd/enforcerd/internal/vmtest"
	"github.com/enforcerd/enforcerd/policy"
)

var testPinDir, testPinShared = vmtest.PinDir("runtest")

func TestMain(m *testing.M) {
	probe.Main() // `enforcerd run -- <this binary>` runs a probe
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

func TestRunBadInputExitCodes(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unknown flag value", []string{"run", "--network=maybe", "--", "true"}, exitUsage, "maybe"},
		{"unknown flag", []string{"run", "--bogus", "--", "true"}, exitUsage, "bogus"},
		{"missing --", []string{"run", "--write=deny", "true"}, exitUsage, "--"},
		{"missing -- only flags", []string{"run", "--write=deny"}, exitUsage, "missing --"},
		{"missing command", []string{"run", "--write=deny", "--"}, exitUsage, "missing command"},
		{"command not found", []string{"run", "--", "enforcerd-test-no-such-command"}, exitNotFound, "enforcerd-test-no-such-command"},
		{"command not executable", []string{"run", "--", notExec}, exitNotExecutable, notExec},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := enforcerd(t, nil, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d (stderr: %s)", r.code, c.code, r.stderr)
			}
			if !strings.Contains(r.stderr, c.says) {
				t.Errorf("stderr does not say %q: %s", c.says, r.stderr)
			}
		})
	}
}

// TestRunUnknownRoleIsAUsageError: a --role that is not a role name (a
// typo, a name nobody declared, an empty one) stops run with exit 2 and the
// valid names before anything is looked up or enforced: CMD would be 127
// (not found) had run got that far. Needs no privileges.
func TestRunUnknownRoleIsAUsageError(t *testing.T) {
	const missing = "/enforcerd-test-no-such-dir/cmd"
	for _, flags := range [][]string{
		{"--role", "reviwer"}, {"--role", "hacker"}, {"--role", ""}, {"--role=  "}, {"--role", "auditor"},
		{"--role", "wor\u212Aer"}, {"--network=deny", "--role", "explorer-x"},
	} {
		var stdout, stderr bytes.Buffer
		code := runRun(append(flags, "--", missing), &stdout, &stderr)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr: %s)", flags, code, exitUsage, stderr.String())
		}
		errs := stderr.String()
		if !strings.HasPrefix(errs, "enforcerd run: --role: ") ||
			!strings.Contains(errs, "valid names: roles advisor, custom, explore, general, implement, planner, reviewer, test;") ||
			strings.Contains(errs, missing) {
			t.Errorf("%q: stderr %q", flags, errs)
		}
		if _, err := parseRunArgs(append(flags, "--", "true"), &stderr); err == nil {
			t.Errorf("%q: parseRunArgs accepted", flags)
		}
	}
}

// TestRunRoleCeilings: a declared name, in any ASCII case, starts from its
// role's requested ceiling; without --role nothing is restricted.
func TestRunRoleCeilings(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  policy.KernelCeiling
	}{
		{nil, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}},
		{[]string{"--role", "Reviewer"}, policy.KernelCeiling{Shell: policy.ShellReadOnly}},
		{[]string{"--role=SCOUT"}, policy.KernelCeiling{Network: true, Shell: policy.ShellReadOnly}},
		{[]string{"--role", " advisor "}, policy.KernelCeiling{Network: true, Shell: policy.ShellNone}},
		{[]string{"--role", "manager", "--write=Deny"}, policy.KernelCeiling{Network: true, Shell: policy.ShellFull}},
		{[]string{"--role", "custom", "--network=FALSE", "--shell=Read_Only"}, policy.KernelCeiling{Write: true, Shell: policy.ShellReadOnly}},
	} {
		var stderr bytes.Buffer
		o, err := parseRunArgs(append(c.flags, "--", "true"), &stderr)
		if err != nil || o.ceiling != c.want || stderr.Len() != 0 {
			t.Errorf("%q: ceiling %v, %v (stderr %q); want %v", c.flags, o.ceiling, err, stderr.String(), c.want)
		}
	}
}

// TestRunNetworkDenyInet: `enforcerd run --network=deny` denies an inet
// connection (natively through cgroup-BPF; in the VM the LSM layer denies
// first), tri-state against a listener outside the sandbox.
func TestRunNetworkDenyInet(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, deny := range []bool{false, true} {
		l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal([]string{l.Addr().String()})
		env := []string{probe.EnvOp + "=tcp-connect", probe.EnvArgs + "=" + string(args)}
		flags := []string{"run", "--pin-dir", testPinDir}
		if deny {
			flags = append(flags, "--network=deny")
		}
		r := enforcerd(t, env, append(flags, "--", self)...)
		res, perr := probe.ParseResult([]byte(r.stdout))
		l.SetDeadline(time.Now().Add(200 * time.Millisecond))
		c, aerr := l.Accept()
		if aerr == nil {
			c.Close()
		}
		l.Close()
		if r.code != 0 || perr != nil || res.Setup != "" {
			t.Fatalf("deny=%v: exit %d, probe %v (%v)\nstdout: %s\nstderr: %s", deny, r.code, res, perr, r.stdout, r.stderr)
		}
		if !deny {
			if res.Errno != 0 || aerr != nil {
				t.Fatalf("control (no ceiling): %v, listener accepted: %v", res, aerr == nil)
			}
			continue
		}
		if res.Errno != unix.EPERM {
			t.Errorf("BYPASS: TCP connect under run --network=deny: %v, want EPERM", res)
		}
		if aerr == nil {
			t.Errorf("BYPASS: the listener outside accepted a connection under --network=deny")
		}
		if !strings.Contains(r.stderr, "enforcerd: denied") {
			t.Errorf("no denial printed on stderr: %s", r.stderr)
		}
		t.Logf("stderr: %s", r.stderr)
	}
}

// TestNoBPFLSMRunWriteDenyFailsClosed: without BPF LSM (the second vmtest
// boot, and these hosts, where LSM programs cannot load) `run --write=deny`
// exits 125 and the command never runs (threat model E5). With BPF LSM (the
// first vmtest boot) the command runs and its write is denied.
func TestNoBPFLSMRunWriteDenyFailsClosed(t *testing.T) {
	vmtest.RequireRoot(t)
	x := filepath.Join(t.TempDir(), "X")
	r := enforcerd(t, nil, "run", "--pin-dir", testPinDir, "--write=deny", "--", "touch", x)
	if _, err := os.Lstat(x); err == nil {
		t.Errorf("BYPASS: %s exists: touch ran unconfined (exit %d, stderr: %s)", x, r.code, r.stderr)
	}
	switch {
	case vmtest.NoBPFLSM():
		if r.code != exitCannotEnforce {
			t.Errorf("exit %d, want %d (stderr: %s)", r.code, exitCannotEnforce, r.stderr)
		}
	case vmtest.InVM():
		if r.code == 0 || r.code == exitCannotEnforce {
			t.Errorf("with BPF LSM: exit %d, want touch's own failure (stderr: %s)", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "enforcerd: denied") {
			t.Errorf("no denial printed on stderr: %s", r.stderr)
		}
		return
	case r.code != exitCannotEnforce:
		// A host where BPF LSM works: the write must have been denied.
		if r.code == 0 {
			t.Errorf("exit 0: touch succeeded under --write=deny (stderr: %s)", r.stderr)
		}
		return
	}
	if !strings.Contains(r.stderr, "write") {
		t.Errorf("exit 125 without saying that write cannot be enforced: %s", r.stderr)
	}
	t.Logf("stderr: %s", r.stderr)
}

// TestNoBPFLSMCheckReportsWrite: `enforcerd check` says whether write is
// enforceable and, when not, why; it exits non-zero when any field is not.
func TestNoBPFLSMCheckReportsWrite(t *testing.T) {
	vmtest.RequireRoot(t)
	r := enforcerd(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Fields map[string]struct {
			Enforceable bool
			By, Detail  string
		}
		BPFLSMActive bool `json:"bpf_lsm_active"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("check --json: exit %d, %v\nstdout: %s\nstderr: %s", r.code, err, r.stdout, r.stderr)
	}
	w, ok := rep.Fields["write"]
	if !ok {
		t.Fatalf("check --json has no write field: %s", r.stdout)
	}
	lsmWorks := vmtest.InVM() && !vmtest.NoBPFLSM()
	if lsmWorks {
		if !w.Enforceable {
			t.Errorf("with BPF LSM: write not enforceable: %s", w.Detail)
		}
		return
	}
	if w.Enforceable {
		if vmtest.NoBPFLSM() {
			t.Fatalf("without bpf in lsm=: check says write is enforceable (%s)", w.By)
		}
		return // a host where BPF LSM works
	}
	if r.code == 0 {
		t.Errorf("write not enforceable but check exited 0")
	}
	if w.Detail == "" {
		t.Errorf("write not enforceable, and check does not say why")
	}
	if vmtest.NoBPFLSM() && (rep.BPFLSMActive || !strings.Contains(w.Detail, "bpf")) {
		t.Errorf(`without bpf in lsm=: want bpf_lsm_active=false and a reason naming "bpf", got %v, %q`, rep.BPFLSMActive, w.Detail)
	}
	human := enforcerd(t, nil, "check", "--pin-dir", testPinDir)
	if !strings.Contains(human.stdout, "write:") || !strings.Contains(human.stdout, "NOT enforceable") {
		t.Errorf("check's report does not say write is NOT enforceable:\n%s", human.stdout)
	}
	t.Logf("write: %s (exit %s)", w.Detail, strconv.Itoa(r.code))
}
