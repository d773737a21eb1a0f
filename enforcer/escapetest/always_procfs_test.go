package escapetest

// Always-on protections (every case under tamperOnly: the ceiling allows
// everything else): kernel settings in procfs, and attributes of kernel
// interfaces and pins.

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// runTamperOnly runs cases under tamperOnly.
func runTamperOnly(t *testing.T, cases []kerneltest.Case) {
	t.Helper()
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)
}

// modeChanged: the effect is that path's mode is no longer orig.
func modeChanged(path string, orig os.FileMode) kerneltest.Effect {
	return func() (bool, string) {
		st, err := os.Stat(path)
		return err == nil && st.Mode().Perm() != orig, fmt.Sprintf("mode of %s changed from %v", path, orig)
	}
}

// keepMode remembers path's mode (and owner) and restores it at cleanup.
func keepMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	t.Cleanup(func() {
		_ = os.Chmod(path, st.Mode().Perm())
		_ = os.Chown(path, int(sys.Uid), int(sys.Gid))
	})
	return st.Mode().Perm()
}

// keepContent restores path's content at cleanup and returns it.
func keepContent(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	orig := strings.TrimSpace(string(b))
	t.Cleanup(func() { _ = writeFile(path, orig) })
	return orig
}

// otherMask is a CPU mask different from orig (2 CPUs in the VM).
func otherMask(orig string) string {
	if strings.TrimLeft(orig, "0,") == "1" {
		return "2"
	}
	return "1"
}

// firstOf is the first existing path, or fails.
func firstOf(t *testing.T, what string, paths ...string) string {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no %s in this guest (tried %v)", what, paths)
	return ""
}

// 1. procfs: no kernel setting is writable, whatever the ceiling.
func TestAlwaysProcfsWrites(t *testing.T) {
	kt.Enforcer(t)
	kset := []denial.Hook{denial.HookInodePermission, denial.HookFilePermission}
	cases := []kerneltest.Case{
		{Name: "/proc/dynamic_debug/control", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			const ctl = "/proc/dynamic_debug/control"
			b, err := os.ReadFile(ctl)
			if err != nil {
				t.Skipf("kernel without dynamic debug (%v)", err)
			}
			// "init/main.c:1234 [main]fn =_ "fmt"": a site not enabled.
			var file, line string
			for _, l := range strings.Split(string(b), "\n") {
				f := strings.Fields(l)
				if len(f) >= 3 && f[2] == "=_" && strings.Contains(f[0], ":") {
					i := strings.LastIndex(f[0], ":")
					file, line = f[0][:i], f[0][i+1:]
					break
				}
			}
			if file == "" {
				t.Fatal("no disabled dynamic debug site")
			}
			site := fmt.Sprintf("%s:%s ", file, line)
			t.Cleanup(func() { _ = writeFile(ctl, fmt.Sprintf("file %s line %s -p", file, line)) })
			return sb.Probe(t, "write", ctl, fmt.Sprintf("file %s line %s +p", file, line)), func() (bool, string) {
				for _, l := range strings.Split(readAll(ctl), "\n") {
					if strings.HasPrefix(l, site) {
						return strings.Contains(l, " =p"), "dynamic debug enabled: " + l
					}
				}
				return false, "site " + site + " gone"
			}
		}, Want: kerneltest.Want{Hooks: kset, Rules: []denial.Rule{denial.RuleKernelSetting}}},
		{Name: "/proc/irq/default_smp_affinity", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			const p = "/proc/irq/default_smp_affinity"
			orig := keepContent(t, p)
			return sb.Probe(t, "write", p, otherMask(orig)), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: kset, Rules: []denial.Rule{denial.RuleKernelSetting}}},
		{Name: "/proc/irq/N/smp_affinity", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p, orig := settableIRQ(t)
			return sb.Probe(t, "write", p, otherMask(orig)), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: kset, Rules: []denial.Rule{denial.RuleKernelSetting}}},
		// PCI configuration space: the interrupt line register (0x3c) is a
		// scratch byte for the OS (QEMU keeps it writable).
		{Name: "/proc/bus/pci config space", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			m, _ := filepath.Glob("/proc/bus/pci/*/*")
			if len(m) == 0 {
				t.Fatal("no /proc/bus/pci device files in the guest")
			}
			p := m[0]
			b, err := os.ReadFile(p)
			if err != nil || len(b) <= 0x3c {
				t.Fatalf("read %s: %d bytes, %v", p, len(b), err)
			}
			orig := b[0x3c]
			t.Cleanup(func() {
				if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
					_, _ = f.WriteAt([]byte{orig}, 0x3c)
					f.Close()
				}
			})
			return sb.Probe(t, "pwrite", p, "0x3c", hex.EncodeToString([]byte{orig ^ 0x5})), func() (bool, string) {
				now, _ := os.ReadFile(p)
				return len(now) > 0x3c && now[0x3c] != orig, fmt.Sprintf("%s byte 0x3c %#x -> %#x", p, orig, now[0x3c])
			}
		}, Want: kerneltest.Want{Hooks: kset, Rules: []denial.Rule{denial.RuleKernelSetting}}},
		// sysrq '0'-'9' sets the console log level.
		{Name: "/proc/sysrq-trigger", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			const printk = "/proc/sys/kernel/printk"
			orig := keepContent(t, printk)
			level := strings.Fields(orig)[0]
			key := "5"
			if level == "5" {
				key = "4"
			}
			return sb.Probe(t, "write", "/proc/sysrq-trigger", key), func() (bool, string) {
				now := strings.Fields(readAll(printk))
				return len(now) > 0 && now[0] != level, fmt.Sprintf("console log level %s -> %v", level, now)
			}
		}, Want: kerneltest.Want{Hooks: kset, Rules: []denial.Rule{denial.RuleKernelSetting}}},
		{Name: "/proc/sys/vm/swappiness", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			const p = "/proc/sys/vm/swappiness"
			orig := keepContent(t, p)
			v := "37"
			if orig == v {
				v = "38"
			}
			return sb.Probe(t, "write", p, v), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: kset, Rules: []denial.Rule{denial.RuleKernelSetting}}},
	}
	runTamperOnly(t, cases)
}

// settableIRQ finds an /proc/irq/N/smp_affinity the kernel lets the test
// change (some interrupts refuse affinity changes).
func settableIRQ(t *testing.T) (string, string) {
	t.Helper()
	m, _ := filepath.Glob("/proc/irq/*/smp_affinity")
	for _, p := range m {
		orig := strings.TrimSpace(readAll(p))
		if writeFile(p, otherMask(orig)) != nil {
			continue
		}
		now := strings.TrimSpace(readAll(p))
		_ = writeFile(p, orig)
		if now != orig {
			t.Cleanup(func() { _ = writeFile(p, orig) })
			return p, orig
		}
	}
	t.Fatalf("no interrupt with a settable affinity among %d", len(m))
	return "", ""
}

// Positive: the sandbox's own /proc/<pid> files stay writable (comm, the
// task name, does not: TestTaskName).
func TestAlwaysProcfsOwnStillWritable(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: tamperOnly})
	for _, w := range [][2]string{{"/proc/self/oom_score_adj", "500"}, {"/proc/self/timerslack_ns", "50000"}} {
		if r := sb.Probe(t, "write-read", w[0], w[1]); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("write of its own %s: %v, want success", w[0], r)
		}
	}
}

// 2. Attributes of kernel interfaces and pins.
func TestAlwaysSetattr(t *testing.T) {
	kt.Enforcer(t)
	setattr := []denial.Hook{denial.HookInodeSetattr}
	sysfsFile := func(t *testing.T) string {
		return firstOf(t, "writable sysfs attribute", "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/uevent_helper", "/sys/module/printk/parameters/time")
	}
	chmodCase := func(name string, path func(t *testing.T) string) kerneltest.Case {
		return kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := path(t)
			orig := keepMode(t, p)
			mode := os.FileMode(0o666)
			if orig == mode {
				mode = 0o664
			}
			return sb.Probe(t, "chmod", p, fmt.Sprintf("%o", mode)), modeChanged(p, orig)
		}, Want: kerneltest.Want{Hooks: setattr}}
	}
	outsideCgroupFile := func(t *testing.T) string {
		return filepath.Join(kt.Sandbox(t, "outside").Cg.Path(), "cgroup.procs")
	}
	cases := []kerneltest.Case{
		chmodCase("chmod of a sysfs attribute", sysfsFile),
		chmodCase("chmod 0666 of the pinned ceilings map", func(*testing.T) string { return filepath.Join(kt.PinDir(), "ceilings") }),
		chmodCase("chmod of a cgroup file outside", outsideCgroupFile),
		// A generic procfs entry (not /proc/sys, not /proc/<pid>) takes
		// chmod: the sysrq trigger becomes world-writable.
		chmodCase("chmod of /proc/sysrq-trigger", func(*testing.T) string { return "/proc/sysrq-trigger" }),
		{Name: "chown of a cgroup file outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := outsideCgroupFile(t)
			return sb.Probe(t, "chown", p, "1000", "1000"), func() (bool, string) {
				st, err := os.Stat(p)
				return err == nil && st.Sys().(*syscall.Stat_t).Uid == 1000, p + " owned by uid 1000"
			}
		}, Want: kerneltest.Want{Hooks: setattr}},
		// trusted.* needs CAP_SYS_ADMIN (xattr_permission), checked
		// before inode_setxattr: either refusal closes it.
		{Name: "setxattr trusted.* on a sysfs attribute", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := sysfsFile(t)
			_ = unix.Removexattr(p, "trusted.escapetest") // the control's
			t.Cleanup(func() { _ = unix.Removexattr(p, "trusted.escapetest") })
			return sb.Probe(t, "setxattr", p, "trusted.escapetest", "x"), xattrSet(p, "trusted.escapetest")
		}, Want: kerneltest.Want{Hooks: []denial.Hook{denial.HookInodeSetxattr, denial.HookCapable}}},
		// cgroupfs keeps user.* xattrs (e.g. what a daemon tags a cgroup
		// with).
		// user.* is checked as a write (inode_permission) first.
		{Name: "setxattr user.* on a cgroup outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := kt.Sandbox(t, "outside").Cg.Path()
			return sb.Probe(t, "setxattr", p, "user.escapetest", "x"), xattrSet(p, "user.escapetest")
		}, Want: kerneltest.Want{Hooks: []denial.Hook{denial.HookInodeSetxattr, denial.HookInodePermission}}},
	}
	runTamperOnly(t, cases)

	// The kernel refuses these itself (chmod of a /proc/sys file: EPERM
	// from proc_sys_setattr; bpffs has no xattr handler), after the LSM
	// hook: no side effect is possible, so the case is that the ceiling
	// denies at the hook (EPERM and a record), not the kernel's own check.
	for _, c := range []struct {
		name  string
		hooks []denial.Hook
		op    []string
	}{
		{"chmod of a /proc/sys file", setattr, []string{"chmod", "/proc/sys/vm/swappiness", "666"}},
		// trusted.* needs CAP_SYS_ADMIN first.
		{"setxattr trusted.* on a bpffs pin", []denial.Hook{denial.HookInodeSetxattr, denial.HookCapable}, []string{"setxattr", filepath.Join(kt.PinDir(), "ceilings"), "trusted.escapetest", "x"}},
		{"setxattr user.* on a bpffs pin", []denial.Hook{denial.HookInodeSetxattr, denial.HookInodePermission}, []string{"setxattr", filepath.Join(kt.PinDir(), "ceilings"), "user.escapetest", "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			keepMode(t, "/proc/sys/vm/swappiness")
			ctl := kt.Sandbox(t, "control")
			r := ctl.Probe(t, c.op[0], c.op[1:]...)
			if r.Setup != "" {
				t.Fatalf("control: %v", r)
			}
			t.Logf("control (no ceiling): %v", r)
			sb := kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: tamperOnly})
			r = sb.Probe(t, c.op[0], c.op[1:]...)
			if !r.Denied() {
				t.Errorf("BYPASS %s: %v, want EPERM", c.name, r)
			}
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(c.hooks...))
		})
	}
}

func xattrSet(path, name string) kerneltest.Effect {
	return func() (bool, string) {
		buf := make([]byte, 64)
		n, err := unix.Getxattr(path, name, buf)
		return err == nil && n > 0, fmt.Sprintf("%s has xattr %s", path, name)
	}
}

// Positive: a file of a sub-cgroup the sandbox created takes chmod, and
// chown of its own file (CAP_CHOWN) works.
func TestAlwaysSetattrInsideAllowed(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: tamperOnly})
	p := filepath.Join(sb.Cg.Path(), "sub", "cgroup.procs")
	if r := sb.Probe(t, "sub-then", "chmod", p, "666"); r.Setup != "" || r.Errno != 0 {
		t.Errorf("chmod of %s (a sub-cgroup it created): %v, want success", p, r)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o666 {
		t.Errorf("chmod of %s: mode %v (%v), want 0666", p, st.Mode(), err)
	}
	f := kt.TmpPath("own-file")
	if r := sb.Probe(t, "create-chown", f, "1000", "1000"); r.Setup != "" || r.Errno != 0 {
		t.Errorf("chown of its own file (CAP_CHOWN): %v, want success", r)
	}
	if st, err := os.Stat(f); err != nil || st.Sys().(*syscall.Stat_t).Uid != 1000 {
		t.Errorf("chown of its own file: not owned by uid 1000 (%v)", err)
	}
}
