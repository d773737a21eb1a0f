package escapetest

// Escape and tamper (threat model X3, E1-E4), for every enforced process
// whatever its ceiling: here the ceiling allows everything else. Mounts,
// the host's state and the audit path are in host_test.go.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
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
		{Name: "X3 TIOCSTI", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookFileIoctl, denial.HookFileIoctlCompat).Rule(denial.RuleTTYInject), Attempt: kerneltest.Op("tiocsti")},
		// compat_sys_ioctl calls security_file_ioctl_compat, not
		// security_file_ioctl, on kernels with that hook.
		{Name: "X3 TIOCSTI via 32-bit ioctl", Ceiling: tamperOnly, Attempt: kerneltest.Op("tiocsti-compat")},
	})
}

func TestCgroupEscape(t *testing.T) {
	kt.Enforcer(t)
	out := kt.Sandbox(t, "outside")
	cases := []kerneltest.Case{
		{Name: "E2 move to the root cgroup", Want: kerneltest.Hooks(denial.HookInodePermission).Rule(denial.RuleCgroupOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		{Name: "E2 move to a sibling outside", Want: kerneltest.Hooks(denial.HookInodePermission).Rule(denial.RuleCgroupOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "move", filepath.Join(out.Cg.Path(), "cgroup.procs"))
			return r, inCgroup(&r, out.Cg.Group)
		}},
		{Name: "E2 clone3 CLONE_INTO_CGROUP outside", Want: kerneltest.Hooks(denial.HookInodePermission).Rule(denial.RuleCgroupOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "clone-into", out.Cg.Path())
			return r, inCgroup(&r, out.Cg.Group)
		}},
		// Entering the init cgroup namespace (the one a new namespace would
		// have to escape to), then moving out.
		{Name: "E2 setns to the init cgroup namespace, then move out", Want: kerneltest.Hooks(denial.HookPtraceAccessCheck), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "setns-move", "/sys/fs/cgroup/cgroup.procs")
			return r, inCgroup(&r, "/")
		}},
		// E1: a sub-cgroup the child creates and enters is still enforced.
		{Name: "E1 sub-cgroup, then bpf()", Want: kerneltest.Hooks(denial.HookBPF), Attempt: kerneltest.Op("sub-then", "bpf-map-next-id")},
		{Name: "E1 sub-cgroup, then move to the root", Want: kerneltest.Hooks(denial.HookInodePermission).Rule(denial.RuleCgroupOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
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
	sb.Register(t, entry.Entry{Ceiling: tamperOnly})
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
	sb.Register(t, entry.Entry{Ceiling: tamperOnly})
	r := sb.Probe(t, "sub-then", "cgroup")
	if r.Setup != "" || r.Errno != 0 || r.Out != "0::"+sb.Cg.Group+"/sub" {
		t.Errorf("move into a sub-cgroup inside: %v, want success and %s/sub", r, sb.Cg.Group)
	}
}

func TestBPF(t *testing.T) {
	kt.Enforcer(t)
	kt.Run(t, []kerneltest.Case{
		{Name: "E3 BPF_MAP_GET_NEXT_ID", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookBPF), Attempt: kerneltest.Op("bpf-map-next-id")},
		{Name: "E3 BPF_PROG_GET_NEXT_ID", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookBPF), Attempt: kerneltest.Op("bpf-prog-next-id")},
		{Name: "E3 BPF_OBJ_GET of the pinned ceiling map", Ceiling: tamperOnly, Want: kerneltest.Hooks(denial.HookBPF), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
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
		{Name: "E4 ptrace attach outside", Want: kerneltest.Hooks(denial.HookPtraceAccessCheck), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "ptrace-seize", o.pid()), nil
		}},
		// Refused at the inode (writes to /proc/<pid> of an outsider),
		// before the ptrace check would refuse it too.
		{Name: "E4 /proc/pid/mem write open outside", Want: kerneltest.Hooks(denial.HookInodePermission).Rule(denial.RuleProcOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "mem-open", o.pid()), nil
		}},
		{Name: "E4 SIGKILL outside", Want: kerneltest.Hooks(denial.HookTaskKill).Rule(denial.RuleSignalOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
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
		{Name: "E4 renice a process outside", Want: kerneltest.Hooks(denial.HookTaskSetnice).Rule(denial.RuleProcessOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "setpriority", o.pid()), niceChanged(o.cmd.Process.Pid)
		}},
		{Name: "E4 RLIMIT_CPU of a process outside", Want: kerneltest.Hooks(denial.HookTaskPrlimit).Rule(denial.RuleProcessOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			return sb.Probe(t, "prlimit-cpu", o.pid()), cpuLimited(o.cmd.Process.Pid)
		}},
		{Name: "E4 oom_score_adj of a process outside", Want: kerneltest.Hooks(denial.HookInodePermission).Rule(denial.RuleProcOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			f := fmt.Sprintf("/proc/%d/oom_score_adj", o.cmd.Process.Pid)
			return sb.Probe(t, "write", f, "1000"), fileContent(f, "0")
		}},
		{Name: "E4 unlink a pin", Want: kerneltest.Hooks(denial.HookInodeUnlink).Rule(denial.RulePinRemoval), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := dummyPin(t)
			return sb.Probe(t, "unlink", p), kerneltest.FileGone(p)
		}},
		{Name: "E4 rename a pin", Want: kerneltest.Hooks(denial.HookInodeRename).Rule(denial.RulePinRemoval), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
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
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
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

// E4 through the session autogroup: /proc/self/autogroup is the sandbox's
// own /proc/<pid> entry, but the nice level written there is that of the
// session's autogroup (a scheduling group), which every process of the
// session shares, inside the sandbox or not. A session leader outside
// (setsid: its own autogroup) starts a process that stays outside, then
// moves itself into the sandbox and execs the probe (the entrypoint).
func TestAttackAutogroupNice(t *testing.T) {
	kt.Enforcer(t)
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Fatalf("no /proc/self/autogroup (CONFIG_SCHED_AUTOGROUP): %v", err)
	}
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		pidFile := kt.TmpPath("outside-pid")
		script := "/bin/busybox sleep 30 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile + "; echo $$ > /proc/self/fd/3/cgroup.procs && exec " + kt.Self()
		cmd := exec.Command("/bin/busybox", "sh", "-c", script)
		cmd.Env = append(probe.Env("autogroup-nice", "19"), "PATH=/bin:/sbin:/usr/bin")
		cmd.ExtraFiles = []*os.File{sb.Dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.Output()
		r, perr := probe.ParseResult(out)
		if perr != nil {
			t.Fatalf("autogroup probe: no result (%v): %q", err, out)
		}
		pb, _ := os.ReadFile(pidFile)
		pid := strings.TrimSpace(string(pb))
		if pid == "" {
			t.Fatal("no outside pid")
		}
		t.Cleanup(func() {
			if n, err := strconv.Atoi(pid); err == nil {
				_ = unix.Kill(n, unix.SIGKILL)
			}
		})
		return r, func() (bool, string) {
			s := strings.TrimSpace(readAll("/proc/" + pid + "/autogroup"))
			return strings.Contains(s, "nice 19"), "outside process " + pid + " autogroup: " + s
		}
	}
	kt.Run(t, []kerneltest.Case{{Name: "E4: nice 19 on the session autogroup shared with a process outside", Ceiling: tamperOnly, Attempt: attempt}})
}
