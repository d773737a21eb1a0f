package escapetest

// E4: signals the tty core sends (SEND_SIG_PRIV: task_kill never runs).
// TIOCSWINSZ on the sandbox's own terminal makes tty_do_resize send
// SIGWINCH to the terminal's foreground process group, which under
// `enforcerd run` from an interactive shell is run's own job, outside
// the sandbox: the resize is refused when that group has a member
// outside, and allowed when the terminal's foreground is the sandbox's
// own (or it has none).

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
)

func TestOwnTerminalResizeSignalsOutside(t *testing.T) {
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
		for i := 0; i < 20 && !got; i++ {
			_, err := os.Stat(mark)
			got = err == nil
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("ceiling=%v: TIOCSWINSZ on the own terminal: %v; outside shell got SIGWINCH: %v", ceiling, r, got)
		if r.Setup != "" {
			t.Fatalf("setup: %v", r)
		}
		if !ceiling && (r.Errno != 0 || !got) {
			t.Fatalf("control: %v, got=%v: proves nothing", r, got)
		}
		if ceiling {
			if !r.Denied() || got {
				t.Errorf("BYPASS (E4, kernel-sent signal): TIOCSWINSZ %v; the outside foreground process group got SIGWINCH: %v", r, got)
			}
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(denial.HookFileIoctl).Rule(denial.RuleSignalOutside))
		}
	}
	t.Run("own terminal without a foreground group outside allowed", func(t *testing.T) {
		p := newHostPty(t) // no session: no foreground process group
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly, Terminals: []entry.Terminal{p.terminal(t)}})
		if r := sb.ProbeFiles(t, []*os.File{p.slave}, "tty-fd-ioctl", "winsz"); r.Setup != "" || r.Errno != 0 {
			t.Errorf("TIOCSWINSZ on an own terminal nobody outside has in the foreground: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
		}
	})
}
