package escapetest

// E4: process groups shared with processes outside. Signals the kernel
// sends to a whole process group (job control's SIGTTIN/SIGTTOU, and the
// SIGHUP+SIGCONT an exit sends to a group it orphans with a stopped
// member) skip task_kill, so a sandbox may not join a group with a member
// outside (task_setpgid). Its own groups, and I/O signal owners that are
// groups wholly inside, keep working.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// pgrp-join PGID: a group of its own, then setpgid(0, PGID).
		// Effect: the probe is in PGID afterwards.
		"pgrp-join": func(r *probe.Result, a []string) {
			if !r.Require(unix.Setpgid(0, 0), "setpgid(0, 0)") {
				return
			}
			g := atoi(a[0])
			if !r.Check(unix.Setpgid(0, g), "setpgid(0, "+a[0]+")") {
				return
			}
			sid, _ := unix.Getsid(0)
			r.Out = fmt.Sprintf("pid %d, group %d, session %d", unix.Getpid(), unix.Getpgrp(), sid)
			r.Effect = unix.Getpgrp() == g
		},
		// pgrp-join-own-child: a child in a group of its own, then the
		// probe joins that group (a shell's job with two processes).
		"pgrp-join-own-child": func(r *probe.Result, a []string) {
			c := exec.Command("/bin/busybox", "sleep", "30")
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if !r.Require(c.Start(), "child") {
				return
			}
			defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
			r.Check(unix.Setpgid(0, c.Process.Pid), "setpgid into the child's group")
		},
		// sigio-own-pgrp: a group of its own as a pipe's I/O signal
		// owner (F_SETOWN of the negative group id, F_SETSIG SIGUSR1):
		// the signal arrives.
		"sigio-own-pgrp": func(r *probe.Result, a []string) {
			if !r.Require(unix.Setpgid(0, 0), "setpgid(0, 0)") {
				return
			}
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGUSR1)
			defer signal.Stop(ch)
			var p [2]int
			if !r.Require(unix.Pipe(p[:]), "pipe") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, -unix.Getpgrp()); !r.Check(err, "F_SETOWN of the own group") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGUSR1)); !r.Check(err, "F_SETSIG") {
				return
			}
			if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
				return
			}
			if _, err := unix.Write(p[1], []byte("x")); !r.Require(err, "write") {
				return
			}
			select {
			case <-ch:
				r.Effect = true
			case <-time.After(2 * time.Second):
			}
		},
		// pgrp-leader-shell OP ARGS...: outside, as a new session's
		// leader: run probe OP in the cgroup on fd 3 ($PGRP in ARGS: this
		// process's group), then stay 3 s.
		"pgrp-leader-shell": func(r *probe.Result, a []string) {
			pg := strconv.Itoa(unix.Getpgrp())
			args := make([]string, 0, len(a)-1)
			for _, s := range a[1:] {
				args = append(args, strings.ReplaceAll(s, "$PGRP", pg))
			}
			in, err := probe.Exec(os.NewFile(3, "cgroup"), probe.Cmd{Op: a[0], Args: args})
			if !r.Require(err, "inner probe") {
				return
			}
			r.Errno, r.Setup, r.Out, r.Effect = in.Errno, in.Setup, in.Out, in.Effect
			time.Sleep(3 * time.Second)
		},
		// pgrp-tcsetpgrp: a group of its own made the foreground of the
		// controlling terminal (TIOCSPGRP, SIGTTOU ignored). Effect: the
		// terminal's foreground is that group afterwards.
		"pgrp-tcsetpgrp": func(r *probe.Result, a []string) {
			signal.Ignore(syscall.SIGTTOU)
			fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			if !r.Require(err, "open /dev/tty") {
				return
			}
			defer unix.Close(fd)
			if !r.Require(unix.Setpgid(0, 0), "setpgid(0, 0)") {
				return
			}
			if !r.Check(unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, unix.Getpgrp()), "TIOCSPGRP") {
				return
			}
			fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
			r.Effect = err == nil && fg == unix.Getpgrp()
		},
		// pgrp-orphan PGRP REPORT: a group of its own, a child that stops
		// itself in the session leader's group PGRP, then exit: the
		// leader's group is orphaned with a stopped member. REPORT gets
		// the stopped child's pid.
		"pgrp-orphan": func(r *probe.Result, a []string) {
			s := atoi(a[0])
			if !r.Require(unix.Setpgid(0, 0), "setpgid(0, 0)") {
				return
			}
			c := exec.Command("/bin/busybox", "sh", "-c", "kill -STOP $$; sleep 30")
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: s}
			if !r.Check(c.Start(), "a child in process group "+a[0]) {
				return
			}
			_ = os.WriteFile(a[1], []byte(strconv.Itoa(c.Process.Pid)), 0o644)
			var ws unix.WaitStatus
			if _, err := unix.Wait4(c.Process.Pid, &ws, unix.WUNTRACED, nil); !r.Require(err, "wait4") {
				return
			}
			if !ws.Stopped() {
				r.Setup = fmt.Sprintf("child %d not stopped: %v", c.Process.Pid, ws)
			}
		},
	})
}

func TestProcessGroupsOutside(t *testing.T) {
	kt.Enforcer(t)
	// The sandbox is started by a session leader outside (a login shell
	// running enforcerd run): the leader's group has a member outside.
	leaderTriState(t, false, kerneltest.Hooks(denial.HookTaskSetpgid).Rule(denial.RuleSignalOutside), "pgrp-join", "$PGRP")
	for name, op := range map[string]string{
		"a process group of its own child joined":      "pgrp-join-own-child",
		"its own process group as an I/O signal owner": "sigio-own-pgrp",
	} {
		t.Run(name+" allowed", func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: tamperOnly})
			r := sb.Probe(t, op)
			if r.Setup != "" || r.Errno != 0 || (op == "sigio-own-pgrp" && !r.Effect) {
				t.Errorf("%s under %v: %v, want success; records %v", op, tamperOnly, r, kt.Records(t, sb.Cg.ID))
			}
		})
	}
}

// leaderShell runs op with args in sb from a new session's leader
// outside (tty, when set, its controlling terminal) and returns the
// leader's output and exit status.
func leaderShell(t *testing.T, sb *kerneltest.Sandbox, tty *os.File, op string, args ...string) (string, syscall.WaitStatus) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append([]string{"PATH=/bin:/sbin:/usr/bin", "TMPDIR=/tmp"}, probe.Env("pgrp-leader-shell", append([]string{op}, args...)...)...)
	cmd.ExtraFiles = []*os.File{sb.Dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if tty != nil {
		cmd.Stdin = tty
		cmd.SysProcAttr.Setctty = true
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return out.String(), cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// TestForegroundGroupInSharedSession: in a session whose leader is
// outside (a login shell running enforcerd run), the sandbox may not make
// a process group the terminal's foreground: the argument is read again
// after any check of it, and the foreground group gets the terminal's
// signals (SIGWINCH, SIGTTIN/SIGTTOU, the keyboard's).
func TestForegroundGroupInSharedSession(t *testing.T) {
	kt.Enforcer(t)
	leaderTriState(t, true, kerneltest.Hooks(denial.HookFileIoctl).Rule(denial.RuleSignalOutside), "pgrp-tcsetpgrp")
}

// leaderTriState runs probe op with args in a sandbox started by a
// session leader outside (with ownTTY, a host pty is the leader's
// controlling terminal and the sandbox's own terminal): allowed with an
// effect without a ceiling, denied without one under tamperOnly, with
// the record want.
func leaderTriState(t *testing.T, ownTTY bool, want kerneltest.Want, op string, args ...string) {
	t.Helper()
	for _, ceiling := range []bool{false, true} {
		var tty *os.File
		en := entry.Entry{Ceiling: tamperOnly}
		if ownTTY {
			p := newHostPty(t)
			tty = p.slave
			en.Terminals = []entry.Terminal{p.terminal(t)}
		}
		sb := kt.Sandbox(t, "case")
		if ceiling {
			sb.Register(t, en)
		}
		out, ws := leaderShell(t, sb, tty, op, args...)
		r, err := probe.ParseResult([]byte(out))
		t.Logf("ceiling=%v: leader %v: %v (%v)", ceiling, ws, r, err)
		if err != nil || r.Setup != "" {
			t.Fatalf("setup: %q", out)
		}
		if !ceiling && (r.Errno != 0 || !r.Effect) {
			t.Fatalf("control: %v: the probe proves nothing", r)
		}
		if ceiling {
			if !r.Denied() || r.Effect {
				t.Errorf("BYPASS (E4) %s under %v: %v", op, tamperOnly, r)
			}
			kt.Expect(t, sb.Cg.ID, want)
		}
	}
}

// TestOrphanedProcessGroupHangup: an exit that orphans a process group
// with a stopped member makes the kernel send SIGHUP and SIGCONT to it
// (kill_orphaned_pgrp). From a sandbox started by a session leader
// outside (a login shell running enforcerd run), a child placed in the
// leader's group and stopped there, then the sandbox's exit, would hang
// up the login shell: the placement is refused.
func TestOrphanedProcessGroupHangup(t *testing.T) {
	kt.Enforcer(t)
	for _, ceiling := range []bool{false, true} {
		sb := kt.Sandbox(t, "case")
		if ceiling {
			sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		}
		report := kt.TmpPath(fmt.Sprintf("orphan-%d", kt.Seq()))
		out, ws := leaderShell(t, sb, nil, "pgrp-orphan", "$PGRP", report)
		if b, err := os.ReadFile(report); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		hup := ws.Signaled() && ws.Signal() == syscall.SIGHUP
		t.Logf("ceiling=%v: the session leader outside ended %v; output %q", ceiling, ws, out)
		if !ceiling && !hup {
			t.Fatalf("control: the session leader outside got no SIGHUP: the probe proves nothing")
		}
		if ceiling {
			if hup {
				t.Errorf("BYPASS (E4, kernel-sent signal): an exit in the sandbox orphaned the outside session leader's process group: SIGHUP")
			}
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(denial.HookTaskSetpgid).Rule(denial.RuleSignalOutside))
		}
	}
}
