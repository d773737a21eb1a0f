package escapetest

// Harness: one load of the programs per test binary (private pin dir), one
// fresh cgroup per run, probes started directly inside it with
// CLONE_INTO_CGROUP. Every registration is Pending, so the probe's own exec
// is the entrypoint (the first exec after registration): under shell=none it
// is the allowed entrypoint, under shell=read_only it is not write-denied.
//
// Each case is tri-state (docs/threat-model.md): (a) a control run in
// an unregistered cgroup succeeds and has its side effect; (b) under the
// ceiling the operation fails with EPERM/EACCES; (c) the side effect is
// absent. A probe that could not attempt the operation fails the test.

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
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/vmtest"
	"github.com/enforcerd/enforcerd/policy"
)

func TestMain(m *testing.M) {
	probeMain() // a re-executed probe exits here
	code := m.Run()
	if shared.enf != nil {
		if sv := shared.survive.cg; sv.ID != 0 {
			_ = shared.enf.Unregister(sv.ID)
			_ = sv.Remove(5 * time.Second)
		}
		if err := shared.enf.Uninstall(); err != nil {
			fmt.Fprintln(os.Stderr, "uninstall test pins:", err)
			code = 1
		}
		_ = unix.Rmdir(filepath.Join(shared.mount, shared.root))
	}
	if shared.tmp != "" {
		os.RemoveAll(shared.tmp)
	}
	os.Exit(code)
}

var shared struct {
	once  sync.Once
	enf   *enforcer.Enforcer
	err   error
	mount string
	pin   string
	root  string // cgroup group of every cgroup this binary creates
	rd    *enforcer.Reader
	self  string // this test binary (the entrypoint of every probe)
	tmp   string // files the test (outside any sandbox) prepared
	// allowed is a copy of this binary made by the test: a different
	// inode, on the exec allow list of shell=none cases.
	allowed string
	// bbAllowed is a copy of busybox made by the test, allowed where a case
	// needs an allowed interpreter (awk) that is not /bin/sh's inode.
	bbAllowed string
	// survive: what probes saw in the cgroup registered by the killed
	// loader, before this process opened any BPF object.
	survive struct {
		cg      cgroup.Cgroup
		results []result
		killed  bool // the outside process died
	}
}

// loadAndKill runs the loader subprocess on the shared pin dir, SIGKILLs it
// once it registered a cgroup, and probes that cgroup.
func loadAndKill() error {
	cg, err := cgroup.Create(shared.mount, shared.root+"/survive")
	if err != nil {
		return err
	}
	shared.survive.cg = cg
	cmd := exec.Command(shared.self)
	b, _ := json.Marshal([]string{shared.pin, shared.mount, cg.Group})
	cmd.Env = []string{envOp + "=loader", envArgs + "=" + string(b)}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	_ = cmd.Process.Signal(unix.SIGKILL)
	_ = cmd.Wait()
	if !strings.Contains(line, "registered") {
		return fmt.Errorf("loader: %q", line)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		return err
	}
	defer dir.Close()
	sleep := exec.Command("/bin/busybox", "sleep", "120")
	if err := sleep.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = sleep.Wait(); close(done) }()
	for _, c := range [][]string{{"bpf-map-next-id"}, {"kill", fmt.Sprint(sleep.Process.Pid)}, {"move", "/sys/fs/cgroup/cgroup.procs"}} {
		r, err := probeRun(dir, nil, c[0], c[1:]...)
		if err != nil {
			return err
		}
		shared.survive.results = append(shared.survive.results, r)
	}
	select {
	case <-done:
		shared.survive.killed = true
	case <-time.After(300 * time.Millisecond):
	}
	_ = sleep.Process.Kill()
	<-done
	return nil
}

func openShared() error {
	shared.once.Do(func() {
		if shared.mount, shared.err = cgroup.Mountpoint(); shared.err != nil {
			return
		}
		shared.root = fmt.Sprintf("/escapetest-%d", os.Getpid())
		shared.pin = fmt.Sprintf("/sys/fs/bpf/escapetest-%d", os.Getpid())
		if shared.self, shared.err = os.Executable(); shared.err != nil {
			return
		}
		if shared.tmp, shared.err = os.MkdirTemp("", "escapetest"); shared.err != nil {
			return
		}
		shared.allowed = filepath.Join(shared.tmp, "allowed")
		if shared.err = copyPath(shared.self, shared.allowed); shared.err != nil {
			return
		}
		shared.bbAllowed = filepath.Join(shared.tmp, "busybox-allowed")
		if shared.err = copyPath("/bin/busybox", shared.bbAllowed); shared.err != nil {
			return
		}
		// The programs are loaded, and a cgroup registered, by a separate
		// process that is SIGKILLed (TestEnforcementSurvivesLoaderKilled);
		// this process then re-adopts the pins.
		start := time.Now()
		if shared.err = loadAndKill(); shared.err != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "escapetest: programs loaded by a killed loader in %v\n", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		shared.enf, shared.err = enforcer.Open(enforcer.Options{PinDir: shared.pin, CgroupMount: shared.mount})
		if shared.err != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "escapetest: programs loaded in %v\n", time.Since(start).Round(time.Millisecond))
		if shared.err = shared.enf.LayerError(enforcer.LayerLSM); shared.err != nil {
			return
		}
		shared.rd, shared.err = shared.enf.NewReader()
	})
	return shared.err
}

// kernel returns the shared enforcer, or skips (host) / fails (VM).
func kernel(t *testing.T) *enforcer.Enforcer {
	t.Helper()
	vmtest.RequireLSM(t, openShared)
	return shared.enf
}

func copyPath(src, dst string) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if err := copyFile(f, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var seq atomic.Int64

// tmpPath is a fresh path in the test's temp dir.
func tmpPath(name string) string {
	return filepath.Join(shared.tmp, fmt.Sprintf("%s-%d", name, seq.Add(1)))
}

func fileID(t *testing.T, path string) enforcer.FileID {
	t.Helper()
	id, err := enforcer.FileIDOf(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type sandbox struct {
	cg  cgroup.Cgroup
	dir *os.File
}

// newCgroup creates a fresh cgroup below this binary's root.
func newCgroup(t *testing.T, kind string) *sandbox {
	t.Helper()
	return cgroupAt(t, fmt.Sprintf("%s/%s-%d", shared.root, kind, seq.Add(1)))
}

// cgroupAt creates the cgroup group (below this binary's root), removed
// and unregistered when the test ends.
func cgroupAt(t *testing.T, group string) *sandbox {
	t.Helper()
	cg, err := cgroup.Create(shared.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cg.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	sb := &sandbox{cg: cg, dir: dir}
	t.Cleanup(func() {
		dir.Close()
		_ = shared.enf.Unregister(cg.ID)
		if err := cg.Remove(5 * time.Second); err != nil {
			t.Errorf("remove %s: %v", cg, err)
		}
	})
	return sb
}

// register installs en (always Pending: the probe is the entrypoint) and
// drops older records.
func (sb *sandbox) register(t *testing.T, en enforcer.Entry) {
	t.Helper()
	en.Pending = true
	if err := shared.enf.Register(sb.cg, en); err != nil {
		t.Fatal(err)
	}
	records(t, 0)
}

// probe runs op in the cgroup and returns its result.
func probe(t *testing.T, dir *os.File, files []*os.File, op string, args ...string) result {
	t.Helper()
	r, err := probeRun(dir, files, op, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func probeRun(dir *os.File, files []*os.File, op string, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, _ := json.Marshal(args)
	cmd := exec.CommandContext(ctx, shared.self)
	cmd.Env = []string{envOp + "=" + op, envArgs + "=" + string(b), "PATH=/bin:/sbin:/usr/bin", "TMPDIR=/tmp"}
	cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	cmd.ExtraFiles = files
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return result{}, fmt.Errorf("start probe %s: %v", op, err)
	}
	err = cmd.Wait()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var r result
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &r); jerr != nil {
		return r, fmt.Errorf("probe %s %v: no result (%v): stdout %q stderr %q", op, args, err, stdout.String(), stderr.String())
	}
	return r, nil
}

// records returns the records decided by ceiling cgroup id since the last
// call (every probe has exited, so all of its records are in the ring).
func records(t *testing.T, ceiling uint64) []enforcer.Denial {
	t.Helper()
	if err := shared.rd.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	var out []enforcer.Denial
	for {
		d, err := shared.rd.Read()
		if errors.Is(err, enforcer.ErrFlushed) {
			return out
		}
		if err != nil {
			t.Fatalf("read records: %v", err)
		}
		if ceiling == 0 || d.CeilingCgroupID == ceiling {
			out = append(out, d)
		}
	}
}

// effect observes a side effect from outside: happened, and a description.
type effect func() (bool, string)

func fileExists(path string) effect {
	return func() (bool, string) {
		_, err := os.Lstat(path)
		return err == nil, path + " exists"
	}
}

func fileGone(path string) effect {
	return func() (bool, string) {
		_, err := os.Lstat(path)
		return errors.Is(err, os.ErrNotExist), path + " removed"
	}
}

// tcase is one threat-model case.
type tcase struct {
	name    string
	ceiling policy.KernelCeiling
	// prep runs before each run (control and ceiling), before allow.
	prep func(t *testing.T)
	// allow builds the shell=none allow list (called after prep).
	allow func(t *testing.T) []enforcer.FileID
	// attempt runs the operation in dir and returns the result and how to
	// see its side effect (nil: only the result and probe's Effect count).
	attempt func(t *testing.T, dir *os.File) (result, effect)
	// nested: the denied operation is an exec inside a program the probe
	// ran (awk's system(), busybox touch): judge by side effect and record.
	nested bool
	hook   enforcer.Hook
}

func happened(r result, eff effect) (bool, string) {
	if eff == nil {
		return r.Effect, "probe-observed effect"
	}
	return eff()
}

// triState runs c without a ceiling, then under it.
func triState(t *testing.T, c tcase) {
	t.Helper()
	kernel(t)
	// (a) control: an unregistered cgroup.
	ctl := newCgroup(t, "control")
	if c.prep != nil {
		c.prep(t)
	}
	r, eff := c.attempt(t, ctl.dir)
	if r.Setup != "" {
		t.Fatalf("control: probe could not attempt the operation (a test bug, not a pass): %v", r)
	}
	if r.Errno != 0 || r.Exit > 0 {
		t.Fatalf("control (no ceiling): %v, want success", r)
	}
	if eff != nil || c.nested {
		if ok, what := happened(r, eff); !ok {
			t.Fatalf("control (no ceiling): %v but no side effect (%s): the probe proves nothing", r, what)
		}
	}

	// (b), (c): under the ceiling.
	sb := newCgroup(t, "case")
	if c.prep != nil {
		c.prep(t)
	}
	en := enforcer.Entry{Ceiling: c.ceiling}
	if c.allow != nil {
		en.ExecAllow = c.allow(t)
	}
	sb.register(t, en)
	r, eff = c.attempt(t, sb.dir)
	if r.Setup != "" {
		t.Fatalf("ceiling: probe could not attempt the operation (a test bug, not a pass): %v", r)
	}
	if !c.nested && !r.denied() {
		t.Errorf("BYPASS %s under %v: %v, want EPERM or EACCES", c.name, c.ceiling, r)
	}
	if eff != nil || c.nested || r.Effect {
		if ok, what := happened(r, eff); ok {
			t.Errorf("BYPASS %s under %v: side effect happened: %s (%v)", c.name, c.ceiling, what, r)
		}
	}
	if c.hook != 0 {
		checkRecord(t, sb.cg.ID, c.hook, false)
	}
}

func checkRecord(t *testing.T, ceiling uint64, hook enforcer.Hook, audited bool) {
	t.Helper()
	ds := records(t, ceiling)
	var seen []string
	for _, d := range ds {
		if d.Hook == hook && d.Audited == audited {
			if !audited && d.Errno != unix.EPERM {
				t.Errorf("record %s: errno %v, want EPERM", d.Hook, d.Errno)
			}
			return
		}
		seen = append(seen, fmt.Sprintf("%s/%s", d.Hook, d.Decision()))
	}
	t.Errorf("no %s record (audited=%v) for ceiling cgroup %d; records: %v", hook, audited, ceiling, seen)
}

func runCases(t *testing.T, cases []tcase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { triState(t, c) })
	}
}

// op is the common attempt: one probe op with fixed args.
func op(name string, args ...string) func(*testing.T, *os.File) (result, effect) {
	return func(t *testing.T, dir *os.File) (result, effect) {
		return probe(t, dir, nil, name, args...), nil
	}
}

// outside is a process the test started outside every sandbox.
type outside struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startOutside runs busybox sleep in dir's cgroup (nil: the test's own).
func startOutside(t *testing.T, dir *os.File) *outside {
	t.Helper()
	cmd := exec.Command("/bin/busybox", "sleep", "120")
	if dir != nil {
		cmd.SysProcAttr = cgroup.SysProcAttr(dir)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &outside{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(o.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-o.done })
	return o
}

func (o *outside) pid() string { return fmt.Sprint(o.cmd.Process.Pid) }

// dead is the side effect of a kill.
func (o *outside) dead() effect {
	return func() (bool, string) {
		select {
		case <-o.done:
			return true, fmt.Sprintf("outside process %d died (%v)", o.cmd.Process.Pid, o.cmd.ProcessState)
		case <-time.After(500 * time.Millisecond):
			return false, fmt.Sprintf("outside process %d died", o.cmd.Process.Pid)
		}
	}
}

func readAll(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	return string(b)
}
