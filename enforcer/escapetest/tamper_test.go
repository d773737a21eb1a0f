package escapetest

// Escape and tamper (threat model X3, E1-E4, E6), for every enforced process
// whatever its ceiling: here the ceiling allows everything else.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/policy"
)

var tamperOnly = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}

// inCgroup: the probe's /proc/self/cgroup names group (probe-observed).
func inCgroup(r *result, group string) effect {
	return func() (bool, string) {
		in := strings.TrimSpace(r.Out) == "0::"+group || strings.Contains(r.Out, `"0::`+group+`"`)
		return in, "process now in " + group + " (" + r.Out + ")"
	}
}

func TestTerminalInjection(t *testing.T) {
	kernel(t)
	runCases(t, []tcase{
		{name: "X3 TIOCSTI", ceiling: tamperOnly, hook: enforcer.HookTTYIoctl, attempt: op("tiocsti")},
		// compat_sys_ioctl calls security_file_ioctl_compat, not
		// security_file_ioctl, on kernels with that hook.
		{name: "X3 TIOCSTI via 32-bit ioctl", ceiling: tamperOnly, attempt: op("tiocsti-compat")},
	})
}

func TestCgroupEscape(t *testing.T) {
	kernel(t)
	out := newCgroup(t, "outside")
	cases := []tcase{
		{name: "E2 move to the root cgroup", hook: enforcer.HookInodePermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			r := probe(t, dir, nil, "move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		{name: "E2 move to a sibling outside", hook: enforcer.HookInodePermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			r := probe(t, dir, nil, "move", filepath.Join(out.cg.Path(), "cgroup.procs"))
			return r, inCgroup(&r, out.cg.Group)
		}},
		{name: "E2 clone3 CLONE_INTO_CGROUP outside", hook: enforcer.HookInodePermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			r := probe(t, dir, nil, "clone-into", out.cg.Path())
			return r, inCgroup(&r, out.cg.Group)
		}},
		// Entering the init cgroup namespace (the one a new namespace would
		// have to escape to), then moving out.
		{name: "E2 setns to the init cgroup namespace, then move out", hook: enforcer.HookPtraceAccessCheck, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			r := probe(t, dir, nil, "setns-move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		// E1: a sub-cgroup the child creates and enters is still enforced.
		{name: "E1 sub-cgroup, then bpf()", hook: enforcer.HookBPF, attempt: op("sub-then", "bpf-map-next-id")},
		{name: "E1 sub-cgroup, then move to the root", hook: enforcer.HookInodePermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			r := probe(t, dir, nil, "sub-then", "move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		// Killing every process of a cgroup outside (the daemon's) through
		// its cgroup.kill file: the kernel sends SIGKILL itself, so
		// task_kill never runs.
		{name: "E4 cgroup.kill of a cgroup outside", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			victim := newCgroup(t, "outside")
			o := startOutside(t, victim.dir)
			return probe(t, dir, nil, "write", filepath.Join(victim.cg.Path(), "cgroup.kill"), "1"), o.dead()
		}},
	}
	for i := range cases {
		cases[i].ceiling = tamperOnly
	}
	runCases(t, cases)
}

// A new cgroup namespace widens nothing: the kernel itself refuses a move
// outside the namespace root (ENOENT, also without a ceiling), and under the
// ceiling the process stays inside.
func TestNewCgroupNamespace(t *testing.T) {
	kernel(t)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
	r := probe(t, sb.dir, nil, "unshare-move", "/sys/fs/cgroup/cgroup.procs")
	if strings.Contains(r.Setup, "unshare(CLONE_NEWCGROUP): operation not permitted") {
		// Closed one step earlier: a new cgroup namespace needs
		// CAP_SYS_ADMIN, which every enforced process is refused.
		return
	}
	if r.Setup != "" || (r.Errno != unix.EPERM && r.Errno != unix.EACCES && r.Errno != unix.ENOENT) {
		t.Errorf("BYPASS unshare(CLONE_NEWCGROUP) then move out: %v, want EPERM/EACCES/ENOENT", r)
	}
	if r.Out != "0::/" {
		t.Errorf("BYPASS unshare(CLONE_NEWCGROUP) then move out: now in %q, want the namespace root (the sandbox)", r.Out)
	}
}

// E1: moving into a sub-cgroup inside the sandbox stays allowed.
func TestSubCgroupMoveAllowed(t *testing.T) {
	kernel(t)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
	r := probe(t, sb.dir, nil, "sub-then", "cgroup")
	if r.Setup != "" || r.Errno != 0 || r.Out != "0::"+sb.cg.Group+"/sub" {
		t.Errorf("move into a sub-cgroup inside: %v, want success and %s/sub", r, sb.cg.Group)
	}
}

func TestBPF(t *testing.T) {
	kernel(t)
	runCases(t, []tcase{
		{name: "E3 BPF_MAP_GET_NEXT_ID", ceiling: tamperOnly, hook: enforcer.HookBPF, attempt: op("bpf-map-next-id")},
		{name: "E3 BPF_PROG_GET_NEXT_ID", ceiling: tamperOnly, hook: enforcer.HookBPF, attempt: op("bpf-prog-next-id")},
		{name: "E3 BPF_OBJ_GET of the pinned ceiling map", ceiling: tamperOnly, hook: enforcer.HookBPF, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			return probe(t, dir, nil, "bpf-obj-get", filepath.Join(shared.pin, "ceilings")), nil
		}},
	})
}

// dummyPin pins a fresh map in the private pin dir (a pin the control run
// may remove).
func dummyPin(t *testing.T) string {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := filepath.Join(shared.pin, fmt.Sprintf("dummy-%d", seq.Add(1)))
	if err := m.Pin(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	return p
}

func TestProcessesOutside(t *testing.T) {
	kernel(t)
	cases := []tcase{
		{name: "E4 ptrace attach outside", hook: enforcer.HookPtraceAccessCheck, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "ptrace-seize", o.pid()), nil
		}},
		// Refused at the inode (writes to /proc/<pid> of an outsider),
		// before the ptrace check would refuse it too.
		{name: "E4 /proc/pid/mem write open outside", hook: enforcer.HookProcWrite, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "mem-open", o.pid()), nil
		}},
		{name: "E4 SIGKILL outside", hook: enforcer.HookTaskKill, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "kill", o.pid()), o.dead()
		}},
		// fcntl(F_SETOWN outside pid) + F_SETSIG(SIGKILL) + O_ASYNC: the
		// kernel's send_sigio delivers the signal; task_kill never runs.
		{name: "E4 SIGKILL outside via F_SETOWN/F_SETSIG", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "sigio-kill", o.pid()), o.dead()
		}},
		{name: "E4 SIGKILL outside via FIOSETOWN/F_SETSIG", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "sigio-ioctl", o.pid()), o.dead()
		}},
		{name: "E4 renice a process outside", hook: enforcer.HookTaskSetsched, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "setpriority", o.pid()), niceChanged(o.cmd.Process.Pid)
		}},
		{name: "E4 RLIMIT_CPU of a process outside", hook: enforcer.HookTaskSetsched, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			return probe(t, dir, nil, "prlimit-cpu", o.pid()), cpuLimited(o.cmd.Process.Pid)
		}},
		{name: "E4 oom_score_adj of a process outside", hook: enforcer.HookProcWrite, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			o := startOutside(t, nil)
			f := fmt.Sprintf("/proc/%d/oom_score_adj", o.cmd.Process.Pid)
			return probe(t, dir, nil, "write", f, "1000"), fileContent(f, "0")
		}},
		{name: "E4 unlink a pin", hook: enforcer.HookBPFFSUnlink, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			p := dummyPin(t)
			return probe(t, dir, nil, "unlink", p), fileGone(p)
		}},
		{name: "E4 rename a pin", hook: enforcer.HookBPFFSUnlink, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			p := dummyPin(t)
			t.Cleanup(func() { os.Remove(p + "_moved") }) // bpffs refuses '.' in names
			return probe(t, dir, nil, "rename", p, p+"_moved"), fileGone(p)
		}},
	}
	for i := range cases {
		cases[i].ceiling = tamperOnly
	}
	runCases(t, cases)
	t.Run("kill inside allowed", func(t *testing.T) {
		sb := newCgroup(t, "case")
		sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
		if r := probe(t, sb.dir, nil, "kill-inside"); r.Errno != 0 || r.Setup != "" || !r.Effect {
			t.Errorf("kill of a process inside the sandbox: %v, want success", r)
		}
	})
	t.Run("real pins intact", func(t *testing.T) {
		for _, p := range []string{"ceilings", "events", "exec_allow"} {
			if _, err := os.Stat(filepath.Join(shared.pin, p)); err != nil {
				t.Errorf("pin %s: %v", p, err)
			}
		}
	})
}

// tmpMount mounts a small tmpfs at a fresh directory; ro bind-remounts it
// read-only at the mount (not superblock) level.
func tmpMount(t *testing.T, ro bool) string {
	t.Helper()
	d := tmpPath("mnt")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("escapetest", d, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for unix.Unmount(d, unix.MNT_DETACH) == nil {
		}
	})
	if ro {
		if err := unix.Mount("", d, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func readOnly(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}

func TestMounts(t *testing.T) {
	kernel(t)
	cases := []tcase{
		{name: "mount tmpfs", hook: enforcer.HookSbMount, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			d := tmpPath("mnt")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
			return probe(t, dir, nil, "mount-tmpfs", d), func() (bool, string) {
				return strings.Contains(readAll("/proc/self/mountinfo"), d+" "), d + " mounted"
			}
		}},
		// mount_setattr(2) changes mount attributes with no LSM hook in
		// its path: a read-only bind mount (e.g. /proc/sys in a container)
		// becomes writable.
		{name: "mount_setattr clears MOUNT_ATTR_RDONLY", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			d := tmpMount(t, true)
			return probe(t, dir, nil, "mount-setattr", d), func() (bool, string) {
				return !readOnly(d), d + " became writable"
			}
		}},
		// The new mount API's remount: fspick + fsconfig(RECONFIGURE).
		{name: "fspick + fsconfig RECONFIGURE remounts read-only", attempt: func(t *testing.T, dir *os.File) (result, effect) {
			d := tmpMount(t, false)
			return probe(t, dir, nil, "fspick-remount", d), func() (bool, string) {
				return readOnly(d), d + " remounted read-only"
			}
		}},
		// fsopen/fsmount: a new (detached) mount without sb_mount.
		{name: "fsopen + fsmount a new tmpfs", attempt: op("fsmount")},
	}
	for i := range cases {
		cases[i].ceiling = tamperOnly
	}
	runCases(t, cases)
}

// E2 "asking a host service to spawn for it": the kernel's core dump helper
// runs as root outside every cgroup of ours. With write=true and shell=none
// the sandbox sets core_pattern to a pipe and crashes: busybox runs.
func TestCorePatternHostSpawn(t *testing.T) {
	kernel(t)
	orig := readAll("/proc/sys/kernel/core_pattern")
	t.Cleanup(func() { _ = writeFile("/proc/sys/kernel/core_pattern", strings.TrimSpace(orig)) })
	runCases(t, []tcase{{name: "E2 core_pattern pipe helper runs outside", ceiling: shellNone, allow: allowList(),
		attempt: func(t *testing.T, dir *os.File) (result, effect) {
			f := tmpPath("core-helper-ran")
			r := probe(t, dir, nil, "core-pattern", "|/bin/busybox touch "+f)
			return r, func() (bool, string) {
				for i := 0; i < 30; i++ {
					if _, err := os.Stat(f); err == nil {
						return true, "core_pattern helper created " + f
					}
					time.Sleep(100 * time.Millisecond)
				}
				return false, "core_pattern helper created " + f
			}
		}}})
}

// Enforcement survives the loader: a separate process loaded the programs,
// registered a cgroup and was SIGKILLed (openShared, before this process
// opened any BPF object); fresh children in that cgroup were still denied.
func TestEnforcementSurvivesLoaderKilled(t *testing.T) {
	kernel(t)
	if len(shared.survive.results) != 3 {
		t.Fatalf("survive probes did not run: %v", shared.survive.results)
	}
	for _, r := range shared.survive.results {
		if !r.denied() {
			t.Errorf("BYPASS after the loader was SIGKILLed: %v, want EPERM", r)
		}
	}
	if shared.survive.killed {
		t.Errorf("BYPASS after the loader was SIGKILLed: a process outside was killed")
	}
}

func init() {
	// loader PIN MOUNT GROUP: load, register GROUP (tamper only), print
	// "registered", wait to be killed.
	ops["loader"] = func(r *result, a []string) {
		e, err := enforcer.Open(enforcer.Options{PinDir: a[0], CgroupMount: a[1]})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		cg, err := cgroup.Open(a[1], a[2])
		if err != nil {
			fmt.Println("cgroup:", err)
			os.Exit(1)
		}
		if err := e.Register(cg, enforcer.Entry{Ceiling: tamperOnly}); err != nil {
			fmt.Println("register:", err)
			os.Exit(1)
		}
		fmt.Println("registered")
		time.Sleep(time.Hour)
	}
}

// E6: a flood of denied operations: every one denied, lost records counted,
// enforcement intact afterwards.
func TestAuditFlood(t *testing.T) {
	e := kernel(t)
	const n = 200000
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
	lost0, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := probe(t, sb.dir, nil, "flood", strconv.Itoa(n))
	took := time.Since(start)
	if r.Setup != "" || r.Out != "0" {
		t.Errorf("flood of %d denied bpf() calls: %v (Out = calls not denied)", n, r)
	}
	lost, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	got := len(records(t, sb.cg.ID))
	t.Logf("flood: %d calls in %v, %d records read, %d lost", n, took.Round(time.Millisecond), got, lost-lost0)
	if uint64(got)+(lost-lost0) < n {
		t.Errorf("records read %d + lost %d < %d denials", got, lost-lost0, n)
	}
	if r := probe(t, sb.dir, nil, "bpf-map-next-id"); !r.denied() {
		t.Errorf("BYPASS after the flood: %v", r)
	}
}

// Audit-only: the operation is allowed and recorded as audited.
func TestAuditOnly(t *testing.T) {
	kernel(t)
	sb := newCgroup(t, "case")
	sb.register(t, enforcer.Entry{Ceiling: shellNone, AuditOnly: true, ExecAllow: allowList()(t)})
	f := tmpPath("touched")
	if r := probe(t, sb.dir, nil, "exec", "/bin/sh", "-c", "/bin/busybox touch "+f); r.Errno != 0 || r.Exit != 0 {
		t.Errorf("audit-only shell=none: exec /bin/sh: %v, want allowed", r)
	}
	if _, err := os.Stat(f); err != nil {
		t.Errorf("audit-only: side effect missing: %v", err)
	}
	checkRecord(t, sb.cg.ID, enforcer.HookBprmCheckSecurity, true)

	sb2 := newCgroup(t, "case")
	sb2.register(t, enforcer.Entry{Ceiling: tamperOnly, AuditOnly: true})
	if r := probe(t, sb2.dir, nil, "bpf-map-next-id"); r.Errno != 0 {
		t.Errorf("audit-only: bpf(): %v, want allowed", r)
	}
	checkRecord(t, sb2.cg.ID, enforcer.HookBPF, true)
}

// niceChanged: the process's nice value is no longer 0.
func niceChanged(pid int) effect {
	return func() (bool, string) {
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
		// getpriority returns 20-nice.
		return err == nil && prio != 20, fmt.Sprintf("nice of pid %d changed (getpriority=%d)", pid, prio)
	}
}

// cpuLimited: the process's RLIMIT_CPU is no longer unlimited.
func cpuLimited(pid int) effect {
	return func() (bool, string) {
		var old unix.Rlimit
		err := unix.Prlimit(pid, unix.RLIMIT_CPU, nil, &old)
		return err == nil && old.Cur != unix.RLIM_INFINITY, fmt.Sprintf("RLIMIT_CPU of pid %d is %d", pid, old.Cur)
	}
}

// fileContent: the effect is that path no longer holds want.
func fileContent(path, want string) effect {
	return func() (bool, string) {
		b, err := os.ReadFile(path)
		got := strings.TrimSpace(string(b))
		return err == nil && got != want, fmt.Sprintf("%s is %q", path, got)
	}
}

// The host itself: its network configuration, its clock, and the usermode
// helpers the kernel runs outside every sandbox (module autoload).
func TestHostStateOutside(t *testing.T) {
	kernel(t)
	runCases(t, []tcase{
		{name: "E2 interface flags via an AF_UNIX socket (CAP_NET_ADMIN)", ceiling: tamperOnly, hook: enforcer.HookCapable, attempt: op("ifflags")},
		{name: "E2 set the clock (CAP_SYS_TIME)", ceiling: tamperOnly, hook: enforcer.HookCapable, attempt: op("settime")},
		{name: "E6 write a line into the kernel log", ceiling: tamperOnly, hook: enforcer.HookKmsgWrite, attempt: op("write", "/dev/kmsg", "escapetest: forged kernel log line")},
		// The kernel ignores a failed autoload (socket() still says
		// EAFNOSUPPORT): judged by the helper not running and the record.
		{name: "E2 module autoload runs modprobe outside", ceiling: tamperOnly, hook: enforcer.HookKernelModuleRequest, nested: true,
			attempt: func(t *testing.T, dir *os.File) (result, effect) {
				marker := tmpPath("modprobe-ran")
				helper := tmpPath("modprobe.sh")
				if err := os.WriteFile(helper, []byte("#!/bin/sh\n/bin/busybox touch "+marker+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				old, err := os.ReadFile("/proc/sys/kernel/modprobe")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile("/proc/sys/kernel/modprobe", []byte(helper), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.WriteFile("/proc/sys/kernel/modprobe", old, 0o644) })
				// AF_ALG is a module in the guest kernels: socket()
				// asks for "net-pf-38".
				r := probe(t, dir, nil, "afsock", "38")
				return r, func() (bool, string) {
					// The helper runs asynchronously; give it a moment.
					for i := 0; i < 50; i++ {
						if _, err := os.Stat(marker); err == nil {
							return true, "modprobe helper ran outside the sandbox"
						}
						time.Sleep(20 * time.Millisecond)
					}
					return false, "helper did not run"
				}
			}},
	})
}
