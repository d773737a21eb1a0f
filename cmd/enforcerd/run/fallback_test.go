package run

// The process layer of `enforcerd run` on a host without BPF LSM (the
// vmtest boot without "bpf" in lsm=, and development hosts whose kernel
// refuses LSM programs): every case it claims, tri-state, and every gap it
// reports, shown to be real (the operation still succeeds: the report is
// honest). With BPF LSM (the first vmtest boot) the BPF LSM layer must
// deny every one of them, gaps included.

import (
	"bytes"
	"encoding/json"
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

	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
	"github.com/enforcerd/enforcerd/coverage"
)

// fbCase is one operation under one ceiling.
type fbCase struct {
	name  string
	flags []string // the ceiling (run flags)
	op    string
	// setup prepares dir and returns the op's arguments.
	setup func(t *testing.T, dir string) []string
	// effect reports whether the operation's side effect is there (nil:
	// the probe's Result, success or Effect, is the effect).
	effect func(dir string) bool
	// gap: the code of the reported gap this case shows; the fallback
	// lets it through. "": a claim, denied.
	gap string
	// minABI: the claim needs Landlock ABI >= minABI; below it the case
	// shows gapBelow instead.
	minABI   int
	gapBelow string
	// allowed: the ceiling allows it (a writable root, /dev/null): it
	// must succeed with the ceiling too.
	allowed bool
	stdin   bool // the probe's stdin is dir/stdin, opened read-write
	// processOnly: a claim of the process layer only (io_uring_setup,
	// memfd_create): the BPF LSM layer lets the call through and denies
	// what is done with it (the enforcer's own tests); with it only (a)
	// runs.
	processOnly bool
}

func fbFile(name, content string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{p}
	}
}

func fbContains(name, s string) func(string) bool {
	return func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return err == nil && strings.Contains(string(b), s)
	}
}

func fbExists(name string) func(string) bool {
	return func(dir string) bool { _, err := os.Lstat(filepath.Join(dir, name)); return err == nil }
}

func fbCases(t *testing.T) []fbCase {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox not found: the VM has it; on a host, scripts/setup-deps installs busybox-static")
	}
	wd := []string{"--write=deny"}
	return []fbCase{
		{name: "write: create", flags: wd, op: "create",
			setup: func(_ *testing.T, dir string) []string { return []string{filepath.Join(dir, "new")} }, effect: fbExists("new")},
		{name: "write: write an existing file", flags: wd, op: "fb-write-path", setup: fbFile("f", "keep"), effect: fbContains("f", probe.Payload)},
		{name: "write: unlink", flags: wd, op: "unlink", setup: fbFile("f", "keep"),
			effect: func(dir string) bool { return !fbExists("f")(dir) }},
		{name: "write: chmod", flags: wd, op: "chmod", setup: fbFile("f", "keep"),
			effect: func(dir string) bool {
				st, err := os.Stat(filepath.Join(dir, "f"))
				return err == nil && st.Mode().Perm() == 0o777
			}},
		{name: "write: chown", flags: wd, op: "chown", setup: fbFile("f", "keep"),
			effect: func(dir string) bool {
				var st unix.Stat_t
				return unix.Stat(filepath.Join(dir, "f"), &st) == nil && st.Uid == 4242
			}},
		{name: "write: utimes", flags: wd, op: "fb-utimes", setup: fbFile("f", "keep"),
			effect: func(dir string) bool {
				st, err := os.Stat(filepath.Join(dir, "f"))
				return err == nil && st.ModTime().Unix() == 1
			}},
		{name: "write: io_uring", flags: wd, op: "fb-io-uring", processOnly: true},
		{name: "write: truncate", flags: wd, op: "fb-truncate", setup: fbFile("f", "keep"),
			effect: func(dir string) bool { return !fbContains("f", "keep")(dir) }, minABI: 3, gapBelow: coverage.GapWriteTruncate},
		{name: "write: inherited descriptor", flags: wd, op: "fb-write-stdin", stdin: true,
			effect: fbContains("stdin", probe.Payload), gap: coverage.GapWriteInheritedFDs},
		{name: "write: create beneath a writable root", flags: wd, op: "create", allowed: true,
			setup: func(_ *testing.T, dir string) []string { return []string{filepath.Join(dir, "new")} }, effect: fbExists("new")},
		{name: "write: /dev/null", flags: wd, op: "fb-write-path", allowed: true,
			setup: func(*testing.T, string) []string { return []string{"/dev/null"} }},

		{name: "network: netlink socket", flags: []string{"--network=deny"}, op: "fb-socket",
			setup: func(*testing.T, string) []string {
				return []string{strconv.Itoa(unix.AF_NETLINK), strconv.Itoa(unix.SOCK_RAW)}
			}},
		{name: "network: inet6 udp socket", flags: []string{"--network=deny"}, op: "fb-socket",
			setup: func(*testing.T, string) []string {
				return []string{strconv.Itoa(unix.AF_INET6), strconv.Itoa(unix.SOCK_DGRAM)}
			}},
		{name: "network: io_uring", flags: []string{"--network=deny"}, op: "fb-io-uring", processOnly: true},
		{name: "network: unix socket to a listener outside", flags: []string{"--network=deny"}, op: "fb-unix-connect",
			setup: fbListen, effect: fbReceived, gap: coverage.GapNetworkUnix},

		{name: "shell=none: exec a file not allowed", flags: []string{"--shell=none"}, op: "exec",
			setup: func(t *testing.T, dir string) []string {
				b, err := os.ReadFile(busybox)
				if err != nil {
					t.Fatal(err)
				}
				bb := filepath.Join(dir, "busybox")
				if err := os.WriteFile(bb, b, 0o755); err != nil {
					t.Fatal(err)
				}
				return []string{bb, "touch", filepath.Join(dir, "marker")}
			}, effect: fbExists("marker")},
		{name: "shell=none: memfd_create", flags: []string{"--shell=none"}, op: "fb-memfd", processOnly: true},
		{name: "shell=none: map a written file executable", flags: []string{"--shell=none"}, op: "fb-write-map-exec",
			setup: func(_ *testing.T, dir string) []string { return []string{filepath.Join(dir, "code")} }, gap: coverage.GapShellCodeMapping},
		{name: "shell=read_only: an exec'd program writes", flags: []string{"--shell=read_only"}, op: "exec",
			setup: func(_ *testing.T, dir string) []string {
				return []string{busybox, "touch", filepath.Join(dir, "marker")}
			}, effect: fbExists("marker"), gap: coverage.GapShellReadOnly},
	}
}

// fbListen listens on dir/sock and copies what the first connection sends
// to dir/received; the op's argument is the socket's path.
func fbListen(t *testing.T, dir string) []string {
	p := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted, done := make(chan struct{}), make(chan struct{})
	fbListeners.Store(dir, [2]chan struct{}{accepted, done})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		close(accepted)
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		_ = os.WriteFile(filepath.Join(dir, "received"), b[:n], 0o644)
	}()
	return []string{p}
}

// fbListeners: per case directory, fbListen's accepted and done channels.
var fbListeners sync.Map

// fbReceived is fbListen's effect: the listener received the payload. The
// listener writes "received" after its read returns, which may be after
// the probe has exited: a connection that was made is accepted from the
// backlog and read to its end (the probe's close) before the file is
// looked at; one that was refused is never accepted (a second's wait).
func fbReceived(dir string) bool {
	if v, ok := fbListeners.Load(dir); ok {
		ch := v.([2]chan struct{})
		select {
		case <-ch[0]:
			select {
			case <-ch[1]:
			case <-time.After(10 * time.Second):
			}
		case <-time.After(time.Second):
		}
	}
	return fbContains("received", probe.Payload)(dir)
}

// fbHost is what check --json says of this host.
type fbHost struct {
	lsm bool // the BPF LSM layer is attached
	abi int  // Landlock ABI
	run map[string]coverage.Field
}

func fbCheck(t *testing.T) fbHost {
	r := clitest.Run(t, nil, "check", "--json", "--pin-dir", testPinDir)
	var rep struct {
		Layers   map[string]struct{ OK bool }
		Host     coverage.HostMechanisms
		Coverage map[string][]coverage.Field
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("check --json: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	h := fbHost{lsm: rep.Layers["bpf-lsm"].OK, abi: rep.Host.LandlockABI, run: map[string]coverage.Field{}}
	for _, fc := range rep.Coverage["run"] {
		h.run[fc.Field] = fc
	}
	return h
}

// fbProbe runs op under `enforcerd run FLAGS -- <this binary>`.
func fbProbe(t *testing.T, c fbCase, dir string, args []string, flags ...string) (clitest.Result, probe.Result) {
	t.Helper()
	a, _ := json.Marshal(args)
	cmd := exec.Command(clitest.Bin(t), append(append([]string{"run", "--pin-dir", testPinDir, "-q"}, flags...), "--", selfExe(t))...)
	cmd.Env = append(os.Environ(), probe.EnvOp+"="+c.op, probe.EnvArgs+"="+string(a))
	if c.stdin {
		f, err := os.OpenFile(filepath.Join(dir, "stdin"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	r := clitest.Result{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	res, _ := probe.ParseResult(stdout.Bytes())
	return r, res
}

func selfExe(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// TestNoBPFLSMRunProcessLayer: tri-state for every case of fbCases.
// (a) without a ceiling the operation succeeds and has its effect;
// (b) with the ceiling and without --allow-partial run refuses (125) and
// nothing happens; (c) with --allow-partial a claim is denied (EPERM or
// EACCES) and its effect absent, a gap case succeeds and its code is in
// run's report (check --json, coverage.run), an allowed case succeeds.
// With the BPF LSM layer every case but the allowed ones is denied.
func TestNoBPFLSMRunProcessLayer(t *testing.T) {
	vmtest.RequireRoot(t)
	h := fbCheck(t)
	if vmtest.NoBPFLSM() && (h.lsm || h.abi < 1) {
		t.Fatalf("boot without bpf in lsm=: bpf-lsm layer ok=%v, Landlock ABI %d: want no BPF LSM and Landlock", h.lsm, h.abi)
	}
	if !h.lsm && h.abi < 1 {
		vmtest.Skip(t, "no BPF LSM and no Landlock: no process layer to test")
	}
	t.Logf("BPF LSM layer: %v, Landlock ABI %d", h.lsm, h.abi)
	for _, c := range fbCases(t) {
		t.Run(c.name, func(t *testing.T) {
			fbRunCase(t, h, c)
		})
	}
}

func fbRunCase(t *testing.T, h fbHost, c fbCase) {
	happened := func(dir string, res probe.Result) bool {
		if c.effect != nil {
			return c.effect(dir)
		}
		return res.Setup == "" && res.Errno == 0 && res.Exit <= 0
	}
	fresh := func() (string, []string) {
		dir := t.TempDir()
		var args []string
		if c.setup != nil {
			args = c.setup(t, dir)
		}
		return dir, args
	}
	// (a) Without a ceiling.
	dir, args := fresh()
	r, res := fbProbe(t, c, dir, args)
	if r.Code != 0 || res.Setup != "" || res.Errno != 0 || !happened(dir, res) {
		t.Fatalf("(a) without a ceiling: exit %d, %v, effect %v (stderr: %s)", r.Code, res, happened(dir, res), r.Stderr)
	}
	if c.processOnly && h.lsm {
		t.Logf("with BPF LSM the call itself is allowed (what is done with it is denied: the enforcer's tests); (a) only")
		return
	}
	// (b) Refused without --allow-partial where the host enforces the
	// ceiling only in part.
	dir, args = fresh()
	ceiling := append([]string(nil), c.flags...)
	if c.allowed && c.op == "create" {
		// The writable root is the case's own directory.
		ceiling = append(ceiling, "--write-root", dir)
	}
	if !h.lsm {
		r, res = fbProbe(t, c, dir, args, ceiling...)
		if r.Code != cli.ExitCannotEnforce || res.Op != "" {
			t.Fatalf("(b) without --allow-partial: exit %d, want %d, CMD never run (probe %v; stderr: %s)", r.Code, cli.ExitCannotEnforce, res, r.Stderr)
		}
		if c.effect != nil && c.effect(dir) && !c.allowed {
			t.Fatalf("(b) refused, yet the effect happened")
		}
	}
	// (c) With the ceiling (and --allow-partial).
	dir, args = fresh()
	ceiling = append([]string(nil), c.flags...)
	if c.allowed && c.op == "create" {
		// The writable root is the case's own directory.
		ceiling = append(ceiling, "--write-root", dir)
	}
	r, res = fbProbe(t, c, dir, args, append(ceiling, "--allow-partial")...)
	if res.Op == "" || res.Setup != "" {
		t.Fatalf("(c) the probe did not run the operation: exit %d, %v (stderr: %s)", r.Code, res, r.Stderr)
	}
	gap := c.gap
	if c.minABI > 0 && h.abi < c.minABI {
		gap = c.gapBelow
	}
	switch {
	case c.allowed:
		if !(res.Errno == 0 && res.Exit <= 0 && happened(dir, res)) {
			t.Errorf("allowed by the ceiling, yet: exit %d, %v, effect %v (stderr: %s)", r.Code, res, happened(dir, res), r.Stderr)
		}
	case gap != "" && !h.lsm:
		if !(res.Errno == 0 && res.Exit <= 0 && happened(dir, res)) {
			t.Errorf("gap %s reported, but the operation did not succeed: %v, effect %v: the report should not name it (stderr: %s)", gap, res, happened(dir, res), r.Stderr)
		}
		if !fbReports(h, gap) {
			t.Errorf("the operation went through, and check does not report gap %s for run: %v", gap, h.run)
		}
	default:
		denied := res.Denied() || (c.op == "exec" && res.Exit > 0)
		if !denied || happened(dir, res) {
			t.Errorf("BYPASS: with the ceiling %v: %v, effect %v, want EPERM/EACCES and no effect (stderr: %s)", ceiling, res, happened(dir, res), r.Stderr)
		}
		if !h.lsm && (c.gap != "" || (c.minABI > 0 && fbReports(h, c.gapBelow))) {
			t.Errorf("denied, yet check reports gap %s%s for it", c.gap, c.gapBelow)
		}
	}
}

// fbReports reports whether check's coverage of run lists gap code.
func fbReports(h fbHost, code string) bool {
	for _, fc := range h.run {
		for _, g := range fc.Gaps {
			if g.Code == code {
				return true
			}
		}
	}
	return false
}
