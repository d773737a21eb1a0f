package escapetest

// The binary's harness (test/kerneltest): programs loaded in a private
// pin dir by a loader that is then killed (TestEnforcementSurvivesLoaderKilled),
// one fresh cgroup per run, probes started directly inside it with
// CLONE_INTO_CGROUP. Every registration is pending, so the probe's own exec
// is the entrypoint (the first exec after registration): under shell=none
// it is the allowed entrypoint, under shell=read_only it is not
// write-denied. The probes' operations are in *probe*_test.go.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

var kt = kerneltest.New(kerneltest.Config{Name: "escapetest", PrivatePins: true, Pending: true, BeforeOpen: prepare})

func TestMain(m *testing.M) { kt.Main(m) }

// fx holds what the binary prepares once, before the programs are opened.
var fx struct {
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
		results []probe.Result
		killed  bool // the outside process died
	}
}

func prepare(h *kerneltest.Harness) error {
	fx.allowed = h.TmpPath("allowed")
	if err := copyPath(h.Self(), fx.allowed); err != nil {
		return err
	}
	fx.bbAllowed = h.TmpPath("busybox-allowed")
	if err := copyPath("/bin/busybox", fx.bbAllowed); err != nil {
		return err
	}
	// The programs are loaded, and a cgroup registered, by a separate
	// process that is SIGKILLed; this process then re-adopts the pins.
	start := time.Now()
	if err := loadAndKill(h); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "escapetest: programs loaded by a killed loader in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// loadAndKill runs the loader probe on the binary's pin dir, SIGKILLs it
// once it registered a cgroup, and probes that cgroup.
func loadAndKill(h *kerneltest.Harness) error {
	cg, err := cgroup.Create(h.Mount(), h.Root().Group+"/survive")
	if err != nil {
		return err
	}
	fx.survive.cg = cg
	o := h.Options()
	p, err := probe.Start(nil, probe.Cmd{Op: "loader", Args: []string{o.PinDir, o.CgroupMount, o.CgroupAttach, cg.Group}})
	if err != nil {
		return err
	}
	// Loading every program under TCG takes a while.
	for deadline := time.After(10 * time.Minute); len(p.Lines()) == 0; {
		select {
		case <-p.Done():
		case <-deadline:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	if l := p.Lines(); len(l) == 0 || !strings.Contains(l[0], "registered") {
		_ = p.Kill()
		r, err := p.Wait()
		return fmt.Errorf("loader: %q, %v (%v)", l, r, err)
	}
	_ = p.Kill()
	_, _ = p.Wait()
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
		r, err := probe.Exec(dir, probe.Cmd{Op: c[0], Args: c[1:]})
		if err != nil {
			return err
		}
		fx.survive.results = append(fx.survive.results, r)
	}
	select {
	case <-done:
		fx.survive.killed = true
	case <-time.After(300 * time.Millisecond):
	}
	_ = sleep.Process.Kill()
	<-done
	return nil
}

func init() {
	// loader PIN MOUNT ATTACH GROUP: load (cgroup-BPF programs at ATTACH),
	// register GROUP (tamper only), print "registered", wait to be killed.
	probe.Register("loader", func(r *probe.Result, a []string) {
		e, err := enforcer.Open(enforcer.Options{PinDir: a[0], CgroupMount: a[1], CgroupAttach: a[2]})
		if !r.Require(err, "open") {
			return
		}
		cg, err := cgroup.Open(a[1], a[3])
		if !r.Require(err, "cgroup") {
			return
		}
		if !r.Require(e.Register(cg, entry.Entry{Ceiling: tamperOnly}), "register") {
			return
		}
		fmt.Println("registered")
		time.Sleep(time.Hour)
	})
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

func fileID(t *testing.T, path string) entry.FileID {
	t.Helper()
	id, err := entry.FileIDOf(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// outside is a process the test started outside every sandbox.
type outside struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startOutside runs busybox sleep in dir's cgroup (nil: the test's own).
func startOutside(t *testing.T, dir *os.File) *outside {
	t.Helper()
	var attr *syscall.SysProcAttr
	if dir != nil {
		attr = cgroup.SysProcAttr(dir)
	}
	return startOutsideWith(t, attr, nil)
}

// startOutsideWith runs busybox sleep outside with attr (nil: none) and
// stdin (nil: none); killed at cleanup.
func startOutsideWith(t *testing.T, attr *syscall.SysProcAttr, stdin *os.File) *outside {
	t.Helper()
	cmd := exec.Command("/bin/busybox", "sleep", "120")
	cmd.SysProcAttr = attr
	if stdin != nil {
		cmd.Stdin = stdin
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
func (o *outside) dead() kerneltest.Effect {
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
