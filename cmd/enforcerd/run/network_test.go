package run

// run --network=deny, partial coverage and nested runs, tri-state against a
// listener outside the sandbox.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/entry"
)

// tcpProbe runs `enforcerd run FLAGS -- <probe tcp-connect>` against a
// listener outside the sandbox. It returns run's result, the probe's result
// (ok=false when the probe printed none: it never ran) and whether the
// listener accepted a connection.
func tcpProbe(t *testing.T, flags ...string) (r clitest.Result, res probe.Result, ran, accepted bool) {
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
	r = clitest.Run(t, env, append(append([]string{"run", "--pin-dir", testPinDir}, flags...), "--", self)...)
	res, perr := probe.ParseResult([]byte(r.Stdout))
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
	r := clitest.Run(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Fields map[string]struct {
			Enforceable bool
			Unenforced  []struct{ Code string }
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, r.Stdout)
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
		if r.Code != 0 || !ran {
			t.Fatalf("deny=%v: exit %d, probe %v\nstdout: %s\nstderr: %s", deny, r.Code, res, r.Stdout, r.Stderr)
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
		// run's process layer (no BPF LSM) denies the socket in seccomp,
		// before the cgroup-BPF program could record it.
		if !strings.Contains(r.Stderr, "enforcerd: denied") && !withProcessLayer(r) {
			t.Errorf("no denial printed on stderr: %s", r.Stderr)
		}
		t.Logf("stderr: %s", r.Stderr)
	}
}

// withProcessLayer reports whether run said it restricts CMD with its
// process layer (Landlock, seccomp: no BPF LSM; denials there are
// EPERM or EACCES, and not records).
func withProcessLayer(r clitest.Result) bool {
	return strings.Contains(r.Stderr, "CMD restricts itself before its exec")
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
		if r.Code != 0 || !ran || res.Errno != unix.EPERM || strings.Contains(r.Stderr, "partial") {
			t.Fatalf("with BPF LSM: exit %d, probe %v (ran %v)\nstderr: %s", r.Code, res, ran, r.Stderr)
		}
		return
	}
	if fmt.Sprint(gaps) != "[network-non-inet tamper]" {
		t.Errorf("check: network=false gaps %v, want [network-non-inet tamper]", gaps)
	}
	// run adds its process layer (seccomp) where the host has one: its
	// own network gap, as check reports it for run.
	runGap := "network-non-inet"
	if fc := fbCheck(t).run["network"]; len(fc.Gaps) > 0 {
		runGap = fc.Gaps[0].Code
	}
	r, res, ran, accepted := tcpProbe(t, "--network=deny")
	if r.Code != cli.ExitCannotEnforce || ran || accepted {
		t.Fatalf("BYPASS: partial coverage without --allow-partial: exit %d (want %d), probe ran %v (%v), listener accepted %v\nstderr: %s",
			r.Code, cli.ExitCannotEnforce, ran, res, accepted, r.Stderr)
	}
	for _, want := range []string{runGap, "tamper", "--allow-partial"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("refusal does not name %q: %s", want, r.Stderr)
		}
	}
	r, res, ran, accepted = tcpProbe(t, "--network=deny", "--allow-partial")
	if r.Code != 0 || !ran || res.Errno != unix.EPERM || accepted {
		t.Fatalf("--allow-partial: exit %d, probe %v (ran %v), accepted %v\nstderr: %s", r.Code, res, ran, accepted, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "NOT enforced: "+runGap) {
		t.Errorf("--allow-partial does not say what is not enforced: %s", r.Stderr)
	}
	// -q silences the banner, not the enforcement.
	r, res, ran, accepted = tcpProbe(t, "--network=deny", "--allow-partial", "-q")
	if r.Code != 0 || !ran || res.Errno != unix.EPERM || accepted || strings.Contains(r.Stderr, "NOT enforced") {
		t.Errorf("--allow-partial -q: exit %d, probe %v (ran %v), accepted %v, stderr (want no banner): %s", r.Code, res, ran, accepted, r.Stderr)
	}
	for _, allow := range []bool{false, true} {
		sock := fakeDaemonStatus(t, map[string]any{"allow_partial": allow})
		r, res, ran, accepted = tcpProbe(t, "--network=deny", "--allow-partial", "--socket", sock)
		if !allow {
			if r.Code != cli.ExitCannotEnforce || ran || accepted || !strings.Contains(r.Stderr, "allow_partial") {
				t.Errorf("daemon with allow_partial=false: exit %d (want %d), probe ran %v, accepted %v\nstderr: %s", r.Code, cli.ExitCannotEnforce, ran, accepted, r.Stderr)
			}
			continue
		}
		if r.Code != 0 || !ran || res.Errno != unix.EPERM || accepted {
			t.Errorf("daemon with allow_partial=true: exit %d, probe %v (ran %v), accepted %v\nstderr: %s", r.Code, res, ran, accepted, r.Stderr)
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
	if r.Code != 0 || !ran || res.Errno != 0 || !accepted || strings.Contains(r.Stderr, "nested") {
		t.Fatalf("control (outer not registered): exit %d, probe %v, accepted %v\nstderr: %s", r.Code, res, accepted, r.Stderr)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	ceiling := policy.KernelCeiling{Network: false, Write: true, Shell: policy.ShellFull}
	if err := enf.Register(outer, entry.Entry{Ceiling: ceiling, AllowPartial: !full}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Unregister(outer.ID) })
	r, res, ran, accepted = tcpProbe(t, "--cgroup-parent", outer.Group)
	if r.Code != 0 || !ran {
		t.Fatalf("nested: exit %d, probe %v\nstderr: %s", r.Code, res, r.Stderr)
	}
	if res.Errno != unix.EPERM || accepted {
		t.Errorf("BYPASS: nested run inside a network=false cgroup connected: %v, accepted %v", res, accepted)
	}
	if !strings.Contains(r.Stderr, "nested in registered cgroup "+outer.Group) || !strings.Contains(r.Stderr, "network=false") {
		t.Errorf("nested run does not say the outer ceiling narrows it: %s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "by the ceiling of "+outer.String()) {
		t.Errorf("nested run does not print the outer ceiling's denial, attributed: %s", r.Stderr)
	}
	t.Logf("stderr: %s", r.Stderr)
}
