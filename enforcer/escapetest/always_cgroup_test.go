package escapetest

// Always-on protections: the registered cgroup's own resource limits, and
// core dumps run by the kernel's pipe helper.

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// enableControllers enables want in the root cgroup's and this binary's
// root's subtree_control, and returns the controllers now available to the
// test's cgroups.
func enableControllers(t *testing.T, want ...string) map[string]bool {
	t.Helper()
	avail := map[string]bool{}
	for _, c := range strings.Fields(readAll(filepath.Join(kt.Mount(), "cgroup.controllers"))) {
		avail[c] = true
	}
	on := map[string]bool{}
	for _, c := range want {
		if !avail[c] {
			continue
		}
		if err := writeFile(filepath.Join(kt.Mount(), "cgroup.subtree_control"), "+"+c); err != nil {
			t.Logf("enable %s at the root: %v", c, err)
			continue
		}
		if err := writeFile(filepath.Join(kt.Mount(), kt.Root().Group, "cgroup.subtree_control"), "+"+c); err != nil {
			t.Logf("enable %s in %s: %v", c, kt.Root().Group, err)
			continue
		}
		on[c] = true
	}
	return on
}

// blockDevice is the MAJ:MIN of a disk for io.max.
func blockDevice() string {
	m, _ := filepath.Glob("/sys/block/*/dev")
	for _, p := range m {
		name := filepath.Base(filepath.Dir(p))
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") {
			continue
		}
		return strings.TrimSpace(readAll(p))
	}
	return ""
}

// 5. The registered cgroup's own resource limits.
func TestAlwaysOwnCgroupLimits(t *testing.T) {
	kt.Enforcer(t)
	on := enableControllers(t, "memory", "pids", "cpu", "io")
	hooks := []denial.Hook{denial.HookInodePermission, denial.HookFilePermission}
	rules := []denial.Rule{denial.RuleCgroupOwnLimits, denial.RuleKernelSetting}
	limit := func(name, controller, file string, value func(t *testing.T) string) kerneltest.Case {
		return kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			if controller != "" && !on[controller] {
				t.Fatalf("the %s controller is not available in the guest's cgroup root (controllers: %q): the VM must enable it", controller, readAll(filepath.Join(kt.Mount(), "cgroup.controllers")))
			}
			p := filepath.Join(sb.Cg.Path(), file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			orig := strings.TrimSpace(string(b))
			return sb.Probe(t, "write", p, value(t)), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: hooks, Rules: rules}}
	}
	v := func(s string) func(*testing.T) string { return func(*testing.T) string { return s } }
	cases := []kerneltest.Case{
		limit("own memory.max", "memory", "memory.max", v("104857600")),
		limit("own memory.high", "memory", "memory.high", v("104857600")),
		limit("own pids.max", "pids", "pids.max", v("100")),
		limit("own cpu.max", "cpu", "cpu.max", v("50000 100000")),
		limit("own io.max", "io", "io.max", func(t *testing.T) string {
			d := blockDevice()
			if d == "" {
				t.Fatal("no block device in the guest for io.max (the VM's ext4 disk)")
			}
			return d + " rbps=1048576"
		}),
		limit("own cgroup.max.descendants", "", "cgroup.max.descendants", v("1")),
		limit("own cgroup.max.depth", "", "cgroup.max.depth", v("1")),
	}
	runTamperOnly(t, cases)
}

// Positive: its own cgroup.procs and cgroup.subtree_control stay writable,
// and a sub-cgroup it creates has a writable memory.max.
func TestAlwaysOwnCgroupStillWritable(t *testing.T) {
	kt.Enforcer(t)
	if on := enableControllers(t, "memory"); !on["memory"] {
		t.Fatalf("the memory controller is not available in the guest's cgroup root (controllers: %q): the VM must enable it", readAll(filepath.Join(kt.Mount(), "cgroup.controllers")))
	}
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: tamperOnly})
	procs := filepath.Join(sb.Cg.Path(), "cgroup.procs")
	if r := sb.Probe(t, "move", procs); r.Setup != "" || r.Errno != 0 || r.Out != "0::"+sb.Cg.Group {
		t.Errorf("write of its own cgroup.procs: %v, want success", r)
	}
	sub := filepath.Join(sb.Cg.Path(), "sub", "memory.max")
	r := sb.Probe(t, "sub-then", "write-all", filepath.Join(sb.Cg.Path(), "cgroup.subtree_control"), "+memory", sub, "104857600")
	if r.Setup != "" || r.Errno != 0 || r.Out != "104857600" {
		t.Errorf("own cgroup.subtree_control, then a sub-cgroup's memory.max: %v, want success", r)
	}
}

// 6. Core dumps: the kernel's pipe helper runs as root outside every
// cgroup of ours.
func TestAlwaysCoreDump(t *testing.T) {
	kt.Enforcer(t)
	const helper = "/bin/vmtest-core-helper"
	if _, err := os.Stat(helper); err != nil {
		t.Fatalf("core dump helper %s missing: the VM must provide it (%v)", helper, err)
	}
	hdir := os.Getenv("ENFORCERD_VMTEST_HELPERS")
	if hdir == "" {
		t.Fatal("ENFORCERD_VMTEST_HELPERS is not set: the VM must provide the helpers' log directory")
	}
	bin := os.Getenv("ENFORCERD_BIN")
	if bin == "" {
		t.Fatal("ENFORCERD_BIN is not set: the core dump cases run the probe through enforcerd run")
	}
	logf := filepath.Join(hdir, "core.log")
	keepContent(t, "/proc/sys/kernel/core_pattern")
	if err := writeFile("/proc/sys/kernel/core_pattern", "|"+helper+" %p %e"); err != nil {
		t.Fatal(err)
	}
	lines := func() int { return strings.Count(readAll(logf), "\n") }
	ran := func(before int) (bool, string) {
		for i := 0; i < 50; i++ {
			if lines() > before {
				return true, "core dump helper ran: " + strings.TrimSpace(readAll(logf))
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false, "core dump helper ran"
	}

	// Control: a crash in an unregistered cgroup runs the helper.
	t.Run("control crash runs the helper", func(t *testing.T) {
		ctl := kt.Sandbox(t, "control")
		before := lines()
		// The probe dies before printing a result.
		cmd := exec.Command(kt.Self())
		cmd.Env = probe.Env("crash-dump", "none")
		cmd.SysProcAttr = cgroup.SysProcAttr(ctl.Dir)
		out, err := cmd.CombinedOutput()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != unix.SIGABRT {
			t.Fatalf("control: the probe did not crash: %v\n%.2000s", err, out)
		}
		if ok, what := ran(before); !ok {
			t.Fatalf("control (no ceiling): %s: no (the probe proves nothing)", what)
		}
	})
	// The product path: enforcerd run holds RLIMIT_CORE at 1, which makes
	// the kernel abort pipe dumps.
	for _, mode := range []string{"none", "raise", "zero"} {
		t.Run("crash under enforcerd run, rlimit "+mode, func(t *testing.T) {
			before := lines()
			out, code := enforcerdRun(t, bin, "crash-dump", mode)
			if !strings.Contains(out, "crash-dump: RLIMIT_CORE 1/1") {
				t.Errorf("the command did not start with RLIMIT_CORE 1/1: exit %d, stderr:\n%s", code, out)
			}
			if code != 128+int(unix.SIGABRT) {
				t.Errorf("enforcerd run: exit %d, want %d (the probe crashed): %s", code, 128+int(unix.SIGABRT), out)
			}
			if ok, what := ran(before); ok {
				t.Errorf("BYPASS crash (%s RLIMIT_CORE) under a ceiling: %s; stderr:\n%s", mode, what, out)
			}
			// Raising the hard limit needs CAP_SYS_RESOURCE, refused
			// before task_setrlimit; lowering the soft one reaches it.
			if mode == "raise" && !strings.Contains(out, "denied use-capability capability 24") && !strings.Contains(out, "denied change-resource-limit") {
				t.Errorf("BYPASS %s RLIMIT_CORE under a ceiling: no denial printed by enforcerd run:\n%s", mode, out)
			}
			if mode == "zero" && !strings.Contains(out, "denied change-resource-limit") {
				t.Errorf("BYPASS %s RLIMIT_CORE under a ceiling: no denial printed by enforcerd run:\n%s", mode, out)
			}
		})
	}
	// Raising RLIMIT_CORE under the ceiling is refused (the probe started
	// by the harness, whose hard limit allows raising without capability).
	kt.Run(t, []kerneltest.Case{
		{Name: "raise RLIMIT_CORE soft to 1024", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookTaskSetrlimit), Attempt: kerneltest.Op("rlimit-core", "1024")},
		{Name: "raise RLIMIT_CORE soft to unlimited", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookTaskSetrlimit), Attempt: kerneltest.Op("rlimit-core", "unlimited")},
	})
}

// enforcerdRun runs a probe op through the product (enforcerd run on this
// binary's pins, default ceiling), returning its stderr and exit status.
func enforcerdRun(t *testing.T, bin, op string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--pin-dir", kt.PinDir(), "--cgroup-parent", kt.Root().Group, "--", kt.Self())
	cmd.Env = append(probe.Env(op, args...), "PATH=/bin:/sbin:/usr/bin", "TMPDIR=/tmp")
	var stderr, stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("enforcerd run: %v", err)
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		t.Logf("stdout: %s", sc.Text())
	}
	return stderr.String(), code
}
