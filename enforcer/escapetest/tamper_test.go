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
	"github.com/enforcerd/enforcerd/internal/kerneltest"
	"github.com/enforcerd/enforcerd/internal/probe"
	"github.com/enforcerd/enforcerd/policy"
)

var tamperOnly = policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}

// inCgroup: the probe's /proc/self/cgroup names group (probe-observed).
func inCgroup(r *probe.Result, group string) kerneltest.Effect {
	return func() (bool, string) {
		in := strings.TrimSpace(r.Out) == "0::"+group || strings.Contains(r.Out, `"0::`+group+`"`)
		return in, "process now in " + group + " (" + r.Out + ")"
	}
}

func TestTerminalInjection(t *testing.T) {
	kt.Enforcer(t)
	kt.Run(t, []kerneltest.Case{
		{Name: "X3 TIOCSTI", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookTTYIoctl), Attempt: kerneltest.Op("tiocsti")},
		// compat_sys_ioctl calls security_file_ioctl_compat, not
		// security_file_ioctl, on kernels with that hook.
		{Name: "X3 TIOCSTI via 32-bit ioctl", Ceiling: tamperOnly, Attempt: kerneltest.Op("tiocsti-compat")},
	})
}

func TestCgroupEscape(t *testing.T) {
	kt.Enforcer(t)
	out := kt.Sandbox(t, "outside")
	cases := []kerneltest.Case{
		{Name: "E2 move to the root cgroup", Want: kerneltest.Hooks(enforcer.HookInodePermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		{Name: "E2 move to a sibling outside", Want: kerneltest.Hooks(enforcer.HookInodePermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "move", filepath.Join(out.Cg.Path(), "cgroup.procs"))
			return r, inCgroup(&r, out.Cg.Group)
		}},
		{Name: "E2 clone3 CLONE_INTO_CGROUP outside", Want: kerneltest.Hooks(enforcer.HookInodePermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "clone-into", out.Cg.Path())
			return r, inCgroup(&r, out.Cg.Group)
		}},
		// Entering the init cgroup namespace (the one a new namespace would
		// have to escape to), then moving out.
		{Name: "E2 setns to the init cgroup namespace, then move out", Want: kerneltest.Hooks(enforcer.HookPtraceAccessCheck), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "setns-move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		// E1: a sub-cgroup the child creates and enters is still enforced.
		{Name: "E1 sub-cgroup, then bpf()", Want: kerneltest.Hooks(enforcer.HookBPF), Attempt: kerneltest.Op("sub-then", "bpf-map-next-id")},
		{Name: "E1 sub-cgroup, then move to the root", Want: kerneltest.Hooks(enforcer.HookInodePermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "sub-then", "move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		// Killing every process of a cgroup outside (the daemon's) through
		// its cgroup.kill file: the kernel sends SIGKILL itself, so
		// task_kill never runs.
		{Name: "E4 cgroup.kill of a cgroup outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			victim := kt.Sandbox(t, "outside")
			o := startOutside(t, victim.Dir)
			return sb.Probe(t, "write", filepath.Join(victim.Cg.Path(), "cgroup.kill"), "1"), o.dead()
		}},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)
}

// A new cgroup namespace widens nothing: the kernel itself refuses a move
// outside the namespace root (ENOENT, also without a ceiling), and under the
// ceiling the process stays inside.
func TestNewCgroupNamespace(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
	r := sb.Probe(t, "unshare-move", "/sys/fs/cgroup/cgroup.procs")
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
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
	r := sb.Probe(t, "sub-then", "cgroup")
	if r.Setup != "" || r.Errno != 0 || r.Out != "0::"+sb.Cg.Group+"/sub" {
		t.Errorf("move into a sub-cgroup inside: %v, want success and %s/sub", r, sb.Cg.Group)
	}
}

func TestBPF(t *testing.T) {
	kt.Enforcer(t)
	kt.Run(t, []kerneltest.Case{
		{Name: "E3 BPF_MAP_GET_NEXT_ID", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookBPF), Attempt: kerneltest.Op("bpf-map-next-id")},
		{Name: "E3 BPF_PROG_GET_NEXT_ID", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookBPF), Attempt: kerneltest.Op("bpf-prog-next-id")},
		{Name: "E3 BPF_OBJ_GET of the pinned ceiling map", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookBPF), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "bpf-obj-get", filepath.Join(kt.PinDir(), "ceilings")), nil
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
	p := filepath.Join(kt.PinDir(), fmt.Sprintf("dummy-%d", kt.Seq()))
	if err := m.Pin(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	return p
}

func TestProcessesOutside(t *testing.T) {
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "E4 ptrace attach outside", Want: kerneltest.Hooks(enforcer.HookPtraceAccessCheck), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "ptrace-seize", o.pid()), nil
		}},
		// Refused at the inode (writes to /proc/<pid> of an outsider),
		// before the ptrace check would refuse it too.
		{Name: "E4 /proc/pid/mem write open outside", Want: kerneltest.Hooks(enforcer.HookProcWrite), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "mem-open", o.pid()), nil
		}},
		{Name: "E4 SIGKILL outside", Want: kerneltest.Hooks(enforcer.HookTaskKill), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "kill", o.pid()), o.dead()
		}},
		// fcntl(F_SETOWN outside pid) + F_SETSIG(SIGKILL) + O_ASYNC: the
		// kernel's send_sigio delivers the signal; task_kill never runs.
		{Name: "E4 SIGKILL outside via F_SETOWN/F_SETSIG", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "sigio-kill", o.pid()), o.dead()
		}},
		{Name: "E4 SIGKILL outside via FIOSETOWN/F_SETSIG", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "sigio-ioctl", o.pid()), o.dead()
		}},
		{Name: "E4 renice a process outside", Want: kerneltest.Hooks(enforcer.HookTaskSetsched), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "setpriority", o.pid()), niceChanged(o.cmd.Process.Pid)
		}},
		{Name: "E4 RLIMIT_CPU of a process outside", Want: kerneltest.Hooks(enforcer.HookTaskSetsched), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "prlimit-cpu", o.pid()), cpuLimited(o.cmd.Process.Pid)
		}},
		{Name: "E4 oom_score_adj of a process outside", Want: kerneltest.Hooks(enforcer.HookProcWrite), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			f := fmt.Sprintf("/proc/%d/oom_score_adj", o.cmd.Process.Pid)
			return sb.Probe(t, "write", f, "1000"), fileContent(f, "0")
		}},
		{Name: "E4 unlink a pin", Want: kerneltest.Hooks(enforcer.HookBPFFSUnlink), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := dummyPin(t)
			return sb.Probe(t, "unlink", p), kerneltest.FileGone(p)
		}},
		{Name: "E4 rename a pin", Want: kerneltest.Hooks(enforcer.HookBPFFSUnlink), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := dummyPin(t)
			t.Cleanup(func() { os.Remove(p + "_moved") }) // bpffs refuses '.' in names
			return sb.Probe(t, "rename", p, p+"_moved"), kerneltest.FileGone(p)
		}},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)
	t.Run("kill inside allowed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "kill-inside"); r.Errno != 0 || r.Setup != "" || !r.Effect {
			t.Errorf("kill of a process inside the sandbox: %v, want success", r)
		}
	})
	t.Run("real pins intact", func(t *testing.T) {
		for _, p := range []string{"ceilings", "events", "exec_allow"} {
			if _, err := os.Stat(filepath.Join(kt.PinDir(), p)); err != nil {
				t.Errorf("pin %s: %v", p, err)
			}
		}
	})
}

// tmpMount mounts a small tmpfs at a fresh directory; ro bind-remounts it
// read-only at the mount (not superblock) level.
func tmpMount(t *testing.T, ro bool) string {
	t.Helper()
	d := kt.TmpPath("mnt")
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
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "mount tmpfs", Want: kerneltest.Hooks(enforcer.HookSbMount), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			d := kt.TmpPath("mnt")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(d, unix.MNT_DETACH) })
			return sb.Probe(t, "mount-tmpfs", d), func() (bool, string) {
				return strings.Contains(readAll("/proc/self/mountinfo"), d+" "), d + " mounted"
			}
		}},
		// mount_setattr(2) changes mount attributes with no LSM hook in
		// its path: a read-only bind mount (e.g. /proc/sys in a container)
		// becomes writable.
		{Name: "mount_setattr clears MOUNT_ATTR_RDONLY", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			d := tmpMount(t, true)
			return sb.Probe(t, "mount-setattr", d), func() (bool, string) {
				return !readOnly(d), d + " became writable"
			}
		}},
		// The new mount API's remount: fspick + fsconfig(RECONFIGURE).
		{Name: "fspick + fsconfig RECONFIGURE remounts read-only", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			d := tmpMount(t, false)
			return sb.Probe(t, "fspick-remount", d), func() (bool, string) {
				return readOnly(d), d + " remounted read-only"
			}
		}},
		// fsopen/fsmount: a new (detached) mount without sb_mount.
		{Name: "fsopen + fsmount a new tmpfs", Attempt: kerneltest.Op("fsmount")},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)
}

// E2 "asking a host service to spawn for it": the kernel's core dump helper
// runs as root outside every cgroup of ours. With write=true and shell=none
// the sandbox sets core_pattern to a pipe and crashes: busybox runs.
func TestCorePatternHostSpawn(t *testing.T) {
	kt.Enforcer(t)
	orig := readAll("/proc/sys/kernel/core_pattern")
	t.Cleanup(func() { _ = writeFile("/proc/sys/kernel/core_pattern", strings.TrimSpace(orig)) })
	kt.Run(t, []kerneltest.Case{{Name: "E2 core_pattern pipe helper runs outside", Ceiling: shellNone, Allow: allowList(),
		Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			f := kt.TmpPath("core-helper-ran")
			r := sb.Probe(t, "core-pattern", "|/bin/busybox touch "+f)
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
	kt.Enforcer(t)
	if len(fx.survive.results) != 3 {
		t.Fatalf("survive probes did not run: %v", fx.survive.results)
	}
	for _, r := range fx.survive.results {
		if !r.Denied() {
			t.Errorf("BYPASS after the loader was SIGKILLed: %v, want EPERM", r)
		}
	}
	if fx.survive.killed {
		t.Errorf("BYPASS after the loader was SIGKILLed: a process outside was killed")
	}
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
		if !r.Require(e.Register(cg, enforcer.Entry{Ceiling: tamperOnly}), "register") {
			return
		}
		fmt.Println("registered")
		time.Sleep(time.Hour)
	})
}

// E6: a flood of denied operations: every one denied, lost records counted,
// enforcement intact afterwards.
func TestAuditFlood(t *testing.T) {
	e := kt.Enforcer(t)
	const n = 200000
	sb := kt.Sandbox(t, "case")
	sb.Register(t, enforcer.Entry{Ceiling: tamperOnly})
	lost0, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := sb.Probe(t, "flood", strconv.Itoa(n))
	took := time.Since(start)
	if r.Setup != "" || r.Out != "0" {
		t.Errorf("flood of %d denied bpf() calls: %v (Out = calls not denied)", n, r)
	}
	lost, err := e.LostRecords()
	if err != nil {
		t.Fatal(err)
	}
	got := len(kt.Records(t, sb.Cg.ID))
	t.Logf("flood: %d calls in %v, %d records read, %d lost", n, took.Round(time.Millisecond), got, lost-lost0)
	if uint64(got)+(lost-lost0) < n {
		t.Errorf("records read %d + lost %d < %d denials", got, lost-lost0, n)
	}
	if r := sb.Probe(t, "bpf-map-next-id"); !r.Denied() {
		t.Errorf("BYPASS after the flood: %v", r)
	}
}

// Audit-only: the operation is allowed and recorded as audited.
func TestAuditOnly(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, enforcer.Entry{Ceiling: shellNone, AuditOnly: true, ExecAllow: allowList()(t)})
	f := kt.TmpPath("touched")
	if r := sb.Probe(t, "exec", "/bin/sh", "-c", "/bin/busybox touch "+f); r.Errno != 0 || r.Exit != 0 {
		t.Errorf("audit-only shell=none: exec /bin/sh: %v, want allowed", r)
	}
	if _, err := os.Stat(f); err != nil {
		t.Errorf("audit-only: side effect missing: %v", err)
	}
	kt.Expect(t, sb.Cg.ID, kerneltest.Want{Hooks: []enforcer.Hook{enforcer.HookBprmCheckSecurity}, Audited: true})

	sb2 := kt.Sandbox(t, "case")
	sb2.Register(t, enforcer.Entry{Ceiling: tamperOnly, AuditOnly: true})
	if r := sb2.Probe(t, "bpf-map-next-id"); r.Errno != 0 {
		t.Errorf("audit-only: bpf(): %v, want allowed", r)
	}
	kt.Expect(t, sb2.Cg.ID, kerneltest.Want{Hooks: []enforcer.Hook{enforcer.HookBPF}, Audited: true})
}

// niceChanged: the process's nice value is no longer 0.
func niceChanged(pid int) kerneltest.Effect {
	return func() (bool, string) {
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
		// getpriority returns 20-nice.
		return err == nil && prio != 20, fmt.Sprintf("nice of pid %d changed (getpriority=%d)", pid, prio)
	}
}

// cpuLimited: the process's RLIMIT_CPU is no longer unlimited.
func cpuLimited(pid int) kerneltest.Effect {
	return func() (bool, string) {
		var old unix.Rlimit
		err := unix.Prlimit(pid, unix.RLIMIT_CPU, nil, &old)
		return err == nil && old.Cur != unix.RLIM_INFINITY, fmt.Sprintf("RLIMIT_CPU of pid %d is %d", pid, old.Cur)
	}
}

// fileContent: the effect is that path no longer holds want.
func fileContent(path, want string) kerneltest.Effect {
	return func() (bool, string) {
		b, err := os.ReadFile(path)
		got := strings.TrimSpace(string(b))
		return err == nil && got != want, fmt.Sprintf("%s is %q", path, got)
	}
}

// The host itself: its network configuration, its clock, and the usermode
// helpers the kernel runs outside every sandbox (module autoload).
func TestHostStateOutside(t *testing.T) {
	kt.Enforcer(t)
	kt.Run(t, []kerneltest.Case{
		{Name: "E2 interface flags via an AF_UNIX socket (CAP_NET_ADMIN)", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookCapable), Attempt: kerneltest.Op("ifflags")},
		{Name: "E2 set the clock (CAP_SYS_TIME)", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookCapable), Attempt: kerneltest.Op("settime")},
		{Name: "E6 write a line into the kernel log", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookKmsgWrite), Attempt: kerneltest.Op("write", "/dev/kmsg", "escapetest: forged kernel log line")},
		// The kernel ignores a failed autoload (socket() still says
		// EAFNOSUPPORT): judged by the helper not running and the record.
		{Name: "E2 module autoload runs modprobe outside", Ceiling: tamperOnly, Want: kerneltest.Hooks(enforcer.HookKernelModuleRequest), Nested: true,
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				marker := kt.TmpPath("modprobe-ran")
				helper := kt.TmpPath("modprobe.sh")
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
				r := sb.Probe(t, "afsock", "38")
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
