package escapetest

// Always-on protections: capabilities outside the allow list, and SIGIO
// toward processes outside.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// 3. Capabilities outside the allow list, in every user namespace.
func TestAlwaysCapabilities(t *testing.T) {
	kt.Enforcer(t)
	capable := []denial.Hook{denial.HookCapable}
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
	sig := []denial.Hook{denial.HookFileFcntl, denial.HookFileIoctl, denial.HookFileIoctlCompat, denial.HookFileSendSigiotask}
	sigRule := []denial.Rule{denial.RuleSigioOwner}
	victim := func(name string, args func(o *outside) []string) kerneltest.Case {
		return kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			a := args(o)
			return sb.Probe(t, a[0], a[1:]...), o.dead()
		}, Want: kerneltest.Want{Hooks: sig, Rules: sigRule}}
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
		}, Want: kerneltest.Want{Hooks: sig, Rules: sigRule}}
	}
	cases := []kerneltest.Case{
		victim("compat ioctl FIOSETOWN outside", func(o *outside) []string { return []string{"sigio-compat-ioctl", o.pid(), "fiosetown"} }),
		victim("compat ioctl SIOCSPGRP outside", func(o *outside) []string { return []string{"sigio-compat-ioctl", o.pid(), "siocspgrp"} }),
		victim("compat fcntl64 F_SETOWN outside", func(o *outside) []string { return []string{"sigio-compat-fcntl", o.pid()} }),
		victim("F_SETSIG SIGKILL and O_ASYNC first, then F_SETOWN outside", func(o *outside) []string { return []string{"sigio-setsig-first", o.pid()} }),
		victim("F_SETOWN_EX F_OWNER_PID outside", func(o *outside) []string { return []string{"sigio-setown-ex", o.pid(), "pid"} }),
		victim("F_SETOWN_EX F_OWNER_TID outside", func(o *outside) []string { return []string{"sigio-setown-ex", o.pid(), "tid"} }),
		// A process group is decided member by member where the signal
		// is delivered (a group wholly inside stays a valid owner): the
		// owner is set, the signal never arrives.
		{Name: "F_SETOWN of a process group outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutsidePgrp(t)
			return sb.Probe(t, "sigio-pgrp", o.pid()), o.dead()
		}, Delivered: true, Want: kerneltest.Want{Hooks: sig, Rules: sigRule}},
		{Name: "F_SETOWN_EX F_OWNER_PGRP outside", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutsidePgrp(t)
			return sb.Probe(t, "sigio-setown-ex", o.pid(), "pgrp"), o.dead()
		}, Delivered: true, Want: kerneltest.Want{Hooks: sig, Rules: sigRule}},
		inherited("F_SETFL O_ASYNC on an inherited fd owned outside", "fcntl"),
		inherited("FIOASYNC on an inherited fd owned outside", "fioasync"),
		inherited("compat FIOASYNC on an inherited fd owned outside", "compat-fioasync"),
	}
	runTamperOnly(t, cases)
}

// startOutsidePgrp runs busybox sleep outside, leading its own process group.
func startOutsidePgrp(t *testing.T) *outside {
	t.Helper()
	return startOutsideWith(t, &syscall.SysProcAttr{Setpgid: true}, nil)
}

// K10 through NETLINK_AUDIT: CAP_AUDIT_WRITE is on the capability allow
// list, and with network=true AF_NETLINK sockets are allowed: a user
// message (AUDIT_USER_AVC passes even with audit disabled) goes to the
// host's audit trail, or with no auditd into the kernel log (kauditd
// prints held records).
func TestAttackAuditUserMessage(t *testing.T) {
	kt.Enforcer(t)
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		marker := fmt.Sprintf("escapetest-audit-%d", kt.Seq())
		r := sb.Probe(t, "audit-user-msg", marker)
		return r, func() (bool, string) {
			for i := 0; i < 50; i++ {
				buf := make([]byte, 1<<20)
				n, err := unix.Klogctl(3, buf) // SYSLOG_ACTION_READ_ALL
				if err == nil {
					for _, l := range strings.Split(string(buf[:n]), "\n") {
						if strings.Contains(l, marker) {
							return true, "kernel log: " + strings.TrimSpace(l)
						}
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			return false, "marker " + marker + " in the kernel log"
		}
	}
	kt.Run(t, []kerneltest.Case{
		{Name: "K10 AUDIT_USER_AVC over NETLINK_AUDIT reaches the kernel log", Ceiling: tamperOnly, Attempt: attempt},
	})
}
