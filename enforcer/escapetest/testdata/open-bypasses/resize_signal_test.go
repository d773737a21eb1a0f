package escapetest

// Kernel-sent signals skip task_kill: check_kill_permission returns
// before security_task_kill for a signal the kernel sends (SEND_SIG_PRIV:
// kill_pgrp(pgrp, sig, 1)). TIOCSWINSZ on the sandbox's own terminal
// makes tty_do_resize send SIGWINCH to the terminal's foreground process
// group, which under `enforcerd run` from an interactive shell is run's
// own job (outside the sandbox); SIGTTIN/SIGTTOU from job control go to
// the caller's process group the same way.

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/entry"
)

func TestZZAttackOwnTerminalResizeSignalsOutside(t *testing.T) {
	kt.Enforcer(t)
	for _, ceiling := range []bool{false, true} {
		p := newHostPty(t)
		mark := kt.TmpPath(fmt.Sprintf("winch-%d", kt.Seq()))
		cmd := exec.Command("/bin/busybox", "sh", "-c", "trap 'echo got > "+mark+"' WINCH; i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done")
		cmd.Stdin = p.slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		time.Sleep(300 * time.Millisecond)
		sb := kt.Sandbox(t, "case")
		if ceiling {
			sb.Register(t, entry.Entry{Ceiling: tamperOnly, Terminals: []entry.Terminal{p.terminal(t)}})
		}
		r := sb.ProbeFiles(t, []*os.File{p.slave}, "tty-fd-ioctl", "winsz")
		got := false
		for i := 0; i < 40 && !got; i++ {
			_, err := os.Stat(mark)
			got = err == nil
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("ceiling=%v: TIOCSWINSZ on the own terminal: %v; outside shell got SIGWINCH: %v", ceiling, r, got)
		if !ceiling && (r.Errno != 0 || !got) {
			t.Fatalf("control: %v, got=%v: proves nothing", r, got)
		}
		if ceiling && got {
			t.Errorf("BYPASS (E4, kernel-sent signal): the outside foreground process group got SIGWINCH from the sandbox's resize: %v", r)
		}
	}
}
