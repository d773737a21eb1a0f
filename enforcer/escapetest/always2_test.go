package escapetest

// Always-on protections, second round: kernel settings in procfs, attributes
// of kernel interfaces and pins, capabilities outside an allow list, SIGIO
// toward processes outside, the registered cgroup's own resource limits, and
// core dumps run by the kernel's pipe helper. Every case runs under
// tamperOnly: the ceiling allows everything else.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/kerneltest"
	"github.com/enforcerd/enforcerd/internal/probe"
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
	kset := []enforcer.Hook{enforcer.HookKernelSetting}
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
		}, Want: kerneltest.Want{Hooks: kset}},
		{Name: "/proc/irq/default_smp_affinity", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			const p = "/proc/irq/default_smp_affinity"
			orig := keepContent(t, p)
			return sb.Probe(t, "write", p, otherMask(orig)), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: kset}},
		{Name: "/proc/irq/N/smp_affinity", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p, orig := settableIRQ(t)
			return sb.Probe(t, "write", p, otherMask(orig)), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: kset}},
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
		}, Want: kerneltest.Want{Hooks: kset}},
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
		}, Want: kerneltest.Want{Hooks: kset}},
		{Name: "/proc/sys/vm/swappiness", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			const p = "/proc/sys/vm/swappiness"
			orig := keepContent(t, p)
			v := "37"
			if orig == v {
				v = "38"
			}
			return sb.Probe(t, "write", p, v), fileContent(p, orig)
		}, Want: kerneltest.Want{Hooks: kset}},
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

// Positive: the sandbox's own /proc/<pid> files stay writable.
func TestAlwaysProcfsOwnStillWritable(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
	for _, w := range [][2]string{{"/proc/self/oom_score_adj", "500"}, {"/proc/self/comm", "escapetest-own"}} {
		if r := sb.Probe(t, "write-read", w[0], w[1]); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("write of its own %s: %v, want success", w[0], r)
		}
	}
}

// 2. Attributes of kernel interfaces and pins.
func TestAlwaysSetattr(t *testing.T) {
	kt.Enforcer(t)
	setattr := []enforcer.Hook{enforcer.HookInodeSetattr}
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
		}, Want: kerneltest.Want{Hooks: []enforcer.Hook{enforcer.HookInodeSetxattr, enforcer.HookCapable}}},
		// cgroupfs keeps user.* xattrs (e.g. what a daemon tags a cgroup
		// with).
		// user.* is checked as a write (inode_permission) first.
		{Name: "setxattr user.* on a cgroup outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := kt.Sandbox(t, "outside").Cg.Path()
			return sb.Probe(t, "setxattr", p, "user.escapetest", "x"), xattrSet(p, "user.escapetest")
		}, Want: kerneltest.Want{Hooks: []enforcer.Hook{enforcer.HookInodeSetxattr, enforcer.HookInodePermission}}},
	}
	runTamperOnly(t, cases)

	// The kernel refuses these itself (chmod of a /proc/sys file: EPERM
	// from proc_sys_setattr; bpffs has no xattr handler), after the LSM
	// hook: no side effect is possible, so the case is that the ceiling
	// denies at the hook (EPERM and a record), not the kernel's own check.
	for _, c := range []struct {
		name  string
		hooks []enforcer.Hook
		op    []string
	}{
		{"chmod of a /proc/sys file", setattr, []string{"chmod", "/proc/sys/vm/swappiness", "666"}},
		// trusted.* needs CAP_SYS_ADMIN first.
		{"setxattr trusted.* on a bpffs pin", []enforcer.Hook{enforcer.HookInodeSetxattr, enforcer.HookCapable}, []string{"setxattr", filepath.Join(kt.PinDir(), "ceilings"), "trusted.escapetest", "x"}},
		{"setxattr user.* on a bpffs pin", []enforcer.Hook{enforcer.HookInodeSetxattr, enforcer.HookInodePermission}, []string{"setxattr", filepath.Join(kt.PinDir(), "ceilings"), "user.escapetest", "x"}},
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
			sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
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
	sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
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

// 3. Capabilities outside the allow list, in every user namespace.
func TestAlwaysCapabilities(t *testing.T) {
	kt.Enforcer(t)
	capable := []enforcer.Hook{enforcer.HookCapable}
	c := func(name string, capNum int, attempt kerneltest.Attempt) kerneltest.Case {
		w := kerneltest.Want{Hooks: capable}
		if capNum >= 0 {
			w.Cap = kerneltest.Cap(capNum)
		}
		return kerneltest.Case{Name: name, Attempt: attempt, Want: w}
	}
	cases := []kerneltest.Case{
		c("acct (CAP_SYS_PACCT)", 20, func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f := kt.TmpPath("acct")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _, _ = unix.Syscall(unix.SYS_ACCT, 0, 0, 0) })
			return sb.Probe(t, "acct", f), func() (bool, string) {
				st, err := os.Stat(f)
				return err == nil && st.Size() > 0, f + " got accounting records"
			}
		}),
		c("sched_setscheduler SCHED_FIFO (CAP_SYS_NICE)", 23, kerneltest.Op("sched-fifo")),
		c("raise a hard rlimit (CAP_SYS_RESOURCE)", 24, kerneltest.Op("raise-hard")),
		c("mlock with RLIMIT_MEMLOCK 0 (CAP_IPC_LOCK)", 14, kerneltest.Op("mlock-nolimit")),
		c("shmctl SHM_LOCK with RLIMIT_MEMLOCK 0 (CAP_IPC_LOCK)", 14, kerneltest.Op("shm-lock")),
		// In its own user namespace the process holds every capability
		// over its own network namespace: still denied.
		// Refused either at the namespace's creation (CAP_SYS_ADMIN over
		// the new user namespace, for the network namespace) or at
		// SIOCSIFFLAGS: any capability record.
		c("CAP_NET_ADMIN in its own user namespace", -1, kerneltest.Op("userns-lo-up")),
		c("AUDIT_SET (CAP_AUDIT_CONTROL)", 30, func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			orig, err := auditBacklogLimit()
			if err != nil {
				// No audit netlink (CONFIG_AUDIT off): nothing to reach.
				t.Skipf("audit netlink unavailable in this kernel: %v", err)
			}
			t.Cleanup(func() { _ = auditSetBacklogLimit(orig) })
			return sb.Probe(t, "audit-set-backlog", strconv.Itoa(int(orig)+17)), func() (bool, string) {
				now, err := auditBacklogLimit()
				return err == nil && now != orig, fmt.Sprintf("audit backlog limit %d -> %d (%v)", orig, now, err)
			}
		}),
	}
	runTamperOnly(t, cases)
}

// 4. SIGIO/SIGURG toward processes outside: through the compat entry, the
// other owner forms, and O_ASYNC on a descriptor whose owner was set outside.
func TestAlwaysSigio(t *testing.T) {
	kt.Enforcer(t)
	sig := []enforcer.Hook{enforcer.HookFileFcntl, enforcer.HookFileIoctl, enforcer.HookFileIoctlCompat}
	victim := func(name string, args func(o *outside) []string) kerneltest.Case {
		return kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			a := args(o)
			return sb.Probe(t, a[0], a[1:]...), o.dead()
		}, Want: kerneltest.Want{Hooks: sig}}
	}
	inherited := func(name, mode string) kerneltest.Case {
		return kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Owner and signal set here, outside the sandbox.
			if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETOWN, o.cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETSIG, int(unix.SIGKILL)); err != nil {
				t.Fatal(err)
			}
			files := []*os.File{os.NewFile(uintptr(fds[0]), "owned"), os.NewFile(uintptr(fds[1]), "peer")}
			return sb.ProbeFiles(t, files, "async-inherited", mode), o.dead()
		}, Want: kerneltest.Want{Hooks: sig}}
	}
	cases := []kerneltest.Case{
		victim("compat ioctl FIOSETOWN outside", func(o *outside) []string { return []string{"sigio-compat-ioctl", o.pid(), "fiosetown"} }),
		victim("compat ioctl SIOCSPGRP outside", func(o *outside) []string { return []string{"sigio-compat-ioctl", o.pid(), "siocspgrp"} }),
		victim("compat fcntl64 F_SETOWN outside", func(o *outside) []string { return []string{"sigio-compat-fcntl", o.pid()} }),
		victim("F_SETSIG SIGKILL and O_ASYNC first, then F_SETOWN outside", func(o *outside) []string { return []string{"sigio-setsig-first", o.pid()} }),
		victim("F_SETOWN_EX F_OWNER_PID outside", func(o *outside) []string { return []string{"sigio-setown-ex", o.pid(), "pid"} }),
		victim("F_SETOWN_EX F_OWNER_TID outside", func(o *outside) []string { return []string{"sigio-setown-ex", o.pid(), "tid"} }),
		{Name: "F_SETOWN of a process group outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutsidePgrp(t)
			return sb.Probe(t, "sigio-pgrp", o.pid()), o.dead()
		}, Want: kerneltest.Want{Hooks: sig}},
		{Name: "F_SETOWN_EX F_OWNER_PGRP outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutsidePgrp(t)
			return sb.Probe(t, "sigio-setown-ex", o.pid(), "pgrp"), o.dead()
		}, Want: kerneltest.Want{Hooks: sig}},
		inherited("F_SETFL O_ASYNC on an inherited fd owned outside", "fcntl"),
		inherited("FIOASYNC on an inherited fd owned outside", "fioasync"),
		inherited("compat FIOASYNC on an inherited fd owned outside", "compat-fioasync"),
	}
	runTamperOnly(t, cases)
}

// startOutsidePgrp runs busybox sleep outside, leading its own process group.
func startOutsidePgrp(t *testing.T) *outside {
	t.Helper()
	cmd := exec.Command("/bin/busybox", "sleep", "120")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &outside{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(o.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-o.done })
	return o
}

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
	hooks := []enforcer.Hook{enforcer.HookInodePermission, enforcer.HookKernelSetting}
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
		}, Want: kerneltest.Want{Hooks: hooks}}
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
	sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
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
		{Name: "raise RLIMIT_CORE soft to 1024", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookTaskSetrlimit), Attempt: kerneltest.Op("rlimit-core", "1024")},
		{Name: "raise RLIMIT_CORE soft to unlimited", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookTaskSetrlimit), Attempt: kerneltest.Op("rlimit-core", "unlimited")},
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
