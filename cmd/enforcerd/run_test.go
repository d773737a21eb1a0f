package main

// Tests of the enforcerd binary's run and check. They run natively (make
// unit, as root: cgroup-BPF works on these hosts, BPF LSM does not) and in
// the vmtest guest, where ENFORCERD_BIN names the binary, in both boots.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
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
	// Executable, but no "#!" and no binary format the kernel knows.
	noFormat := filepath.Join(dir, "noformat")
	if err := os.WriteFile(noFormat, []byte("echo hello\n"), 0o755); err != nil {
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
		{"exec format error", []string{"run", "--", noFormat}, exitNotExecutable, "exec format error"},
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

// tcpProbe runs `enforcerd run FLAGS -- <probe tcp-connect>` against a
// listener outside the sandbox. It returns run's result, the probe's result
// (ok=false when the probe printed none: it never ran) and whether the
// listener accepted a connection.
func tcpProbe(t *testing.T, flags ...string) (r runResult, res probe.Result, ran, accepted bool) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	args, _ := json.Marshal([]string{l.Addr().String()})
	env := []string{probe.EnvOp + "=tcp-connect", probe.EnvArgs + "=" + string(args)}
	r = enforcerd(t, env, append(append([]string{"run", "--pin-dir", testPinDir}, flags...), "--", self)...)
	res, perr := probe.ParseResult([]byte(r.stdout))
	l.SetDeadline(time.Now().Add(200 * time.Millisecond))
	c, aerr := l.Accept()
	if aerr == nil {
		c.Close()
	}
	return r, res, perr == nil && res.Setup == "", aerr == nil
}

// networkCoverage reads `enforcerd check --json`: whether network=false is
// enforced in full here, and the codes of what is not.
func networkCoverage(t *testing.T) (full bool, gaps []string) {
	t.Helper()
	r := enforcerd(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Fields map[string]struct {
			Enforceable bool
			Unenforced  []struct{ Code string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, r.stdout)
	}
	n := rep.Fields["network"]
	for _, g := range n.Unenforced {
		gaps = append(gaps, g.Code)
	}
	return n.Enforceable, gaps
}

// TestRunNetworkDenyInet: `enforcerd run --network=deny` denies an inet
// connection, tri-state against a listener outside the sandbox. With BPF LSM
// (the VM) the ceiling is enforced in full; without it (these hosts) only in
// part, so run needs --allow-partial (TestNoBPFLSMRunPartialCoverage tests
// the refusal) and cgroup-BPF denies the connection.
func TestRunNetworkDenyInet(t *testing.T) {
	vmtest.RequireRoot(t)
	full, _ := networkCoverage(t)
	for _, deny := range []bool{false, true} {
		var flags []string
		if deny {
			flags = append(flags, "--network=deny")
			if !full {
				flags = append(flags, "--allow-partial")
			}
		}
		r, res, ran, accepted := tcpProbe(t, flags...)
		if r.code != 0 || !ran {
			t.Fatalf("deny=%v: exit %d, probe %v\nstdout: %s\nstderr: %s", deny, r.code, res, r.stdout, r.stderr)
		}
		if !deny {
			if res.Errno != 0 || !accepted {
				t.Fatalf("control (no ceiling): %v, listener accepted: %v", res, accepted)
			}
			continue
		}
		if res.Errno != unix.EPERM {
			t.Errorf("BYPASS: TCP connect under run --network=deny: %v, want EPERM", res)
		}
		if accepted {
			t.Errorf("BYPASS: the listener outside accepted a connection under --network=deny")
		}
		if !strings.Contains(r.stderr, "enforcerd: denied") {
			t.Errorf("no denial printed on stderr: %s", r.stderr)
		}
		t.Logf("stderr: %s", r.stderr)
	}
}

// TestNoBPFLSMRunPartialCoverage: where network=false is enforced only in
// part (no BPF LSM: natively here, and the VM's second boot), `run
// --network=deny` is refused with exit 125 naming what would not be
// enforced, and CMD never runs; --allow-partial runs it (the inet connection
// is still denied) and says what is not enforced; a daemon whose
// configuration does not allow partial coverage caps --allow-partial. With
// BPF LSM the ceiling is enforced in full and no flag is needed.
func TestNoBPFLSMRunPartialCoverage(t *testing.T) {
	vmtest.RequireRoot(t)
	full, gaps := networkCoverage(t)
	if full {
		if vmtest.NoBPFLSM() {
			t.Fatalf("without bpf in lsm=: check says network=false is enforced in full")
		}
		r, res, ran, _ := tcpProbe(t, "--network=deny")
		if r.code != 0 || !ran || res.Errno != unix.EPERM || strings.Contains(r.stderr, "partial") {
			t.Fatalf("with BPF LSM: exit %d, probe %v (ran %v)\nstderr: %s", r.code, res, ran, r.stderr)
		}
		return
	}
	if fmt.Sprint(gaps) != "[network-non-inet tamper]" {
		t.Errorf("check: network=false gaps %v, want [network-non-inet tamper]", gaps)
	}
	r, res, ran, accepted := tcpProbe(t, "--network=deny")
	if r.code != exitCannotEnforce || ran || accepted {
		t.Fatalf("BYPASS: partial coverage without --allow-partial: exit %d (want %d), probe ran %v (%v), listener accepted %v\nstderr: %s",
			r.code, exitCannotEnforce, ran, res, accepted, r.stderr)
	}
	for _, want := range []string{"network-non-inet", "tamper", "--allow-partial"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("refusal does not name %q: %s", want, r.stderr)
		}
	}
	r, res, ran, accepted = tcpProbe(t, "--network=deny", "--allow-partial")
	if r.code != 0 || !ran || res.Errno != unix.EPERM || accepted {
		t.Fatalf("--allow-partial: exit %d, probe %v (ran %v), accepted %v\nstderr: %s", r.code, res, ran, accepted, r.stderr)
	}
	if !strings.Contains(r.stderr, "NOT enforced: network-non-inet") {
		t.Errorf("--allow-partial does not say what is not enforced: %s", r.stderr)
	}
	for _, allow := range []bool{false, true} {
		sock := fakeDaemonStatus(t, map[string]any{"allow_partial": allow})
		r, res, ran, accepted = tcpProbe(t, "--network=deny", "--allow-partial", "--socket", sock)
		if !allow {
			if r.code != exitCannotEnforce || ran || accepted || !strings.Contains(r.stderr, "allow_partial") {
				t.Errorf("daemon with allow_partial=false: exit %d (want %d), probe ran %v, accepted %v\nstderr: %s", r.code, exitCannotEnforce, ran, accepted, r.stderr)
			}
			continue
		}
		if r.code != 0 || !ran || res.Errno != unix.EPERM || accepted {
			t.Errorf("daemon with allow_partial=true: exit %d, probe %v (ran %v), accepted %v\nstderr: %s", r.code, res, ran, accepted, r.stderr)
		}
	}
}

// fakeDaemonStatus serves GET /v1/status with body on a unix socket.
func fakeDaemonStatus(t *testing.T, body map[string]any) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// TestRunNested: a run whose --cgroup-parent lies inside a registered
// cgroup says that the outer ceiling narrows its own, and prints the
// denials the outer ceiling decides for its command, attributed to the
// outer cgroup. Tri-state: the same command without the outer registration
// connects.
func TestRunNested(t *testing.T) {
	vmtest.RequireRoot(t)
	full, _ := networkCoverage(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	self, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	outer, err := cgroup.Create(mount, path.Join(self, fmt.Sprintf("enforcerd-test-outer-%d", os.Getpid())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outer.Remove(5 * time.Second) })
	r, res, ran, accepted := tcpProbe(t, "--cgroup-parent", outer.Group)
	if r.code != 0 || !ran || res.Errno != 0 || !accepted || strings.Contains(r.stderr, "nested") {
		t.Fatalf("control (outer not registered): exit %d, probe %v, accepted %v\nstderr: %s", r.code, res, accepted, r.stderr)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	ceiling := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	if err := enf.Register(outer, enforcer.Entry{Ceiling: ceiling, AllowPartial: !full}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Unregister(outer.ID) })
	r, res, ran, accepted = tcpProbe(t, "--cgroup-parent", outer.Group)
	if r.code != 0 || !ran {
		t.Fatalf("nested: exit %d, probe %v\nstderr: %s", r.code, res, r.stderr)
	}
	if res.Errno != unix.EPERM || accepted {
		t.Errorf("BYPASS: nested run inside a network=false cgroup connected: %v, accepted %v", res, accepted)
	}
	if !strings.Contains(r.stderr, "nested in registered cgroup "+outer.Group) || !strings.Contains(r.stderr, "network=false") {
		t.Errorf("nested run does not say the outer ceiling narrows it: %s", r.stderr)
	}
	if !strings.Contains(r.stderr, "by the ceiling of "+outer.String()) {
		t.Errorf("nested run does not print the outer ceiling's denial, attributed: %s", r.stderr)
	}
	t.Logf("stderr: %s", r.stderr)
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
