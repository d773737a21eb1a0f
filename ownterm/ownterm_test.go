package ownterm

import (
	"errors"
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

	"github.com/enforcerd/enforcerd/entry"
)

// openPty makes a new pty (posix_openpt, unlockpt, ptsname) and returns
// its master and slave and the slave's terminal identity.
func openPty(t *testing.T) (master, slave *os.File, want entry.Terminal) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		t.Skipf("no pty support here: %v", err)
	}
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	master = os.NewFile(uintptr(m), "ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := unix.Open("/dev/pts/"+strconv.Itoa(n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/pts/%d: %v", n, err)
	}
	slave = os.NewFile(uintptr(s), "pts")
	t.Cleanup(func() { slave.Close() })
	var st unix.Stat_t
	if err := unix.Fstat(s, &st); err != nil {
		t.Fatal(err)
	}
	want = entry.Terminal{Dev: kdev(st.Rdev), PtsDev: kdev(st.Dev)}
	if got := want.Dev >> 20; got < ptsMajorFirst || got > ptsMajorLast {
		t.Fatalf("pty slave major %d", got)
	}
	return master, slave, want
}

// start runs cmd and kills it at the end of the test.
func start(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// TestOfPty: a process whose stdio and controlling terminal are a pty the
// test opened declares that pty once, with its devpts instance.
func TestOfPty(t *testing.T) {
	_, slave, want := openPty(t)
	cmd := exec.Command("sleep", "30")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	pid := start(t, cmd)
	got, err := Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("Of(pty child) = %s, want [%s]", Strings(got), String(want))
	}
}

// TestOfDevTTY: stdin opened from /dev/tty (5:0) is the controlling
// terminal it reaches; a controlling pty no stdio descriptor holds is not
// declared (its devpts instance is unknown). Each case has a pty of its
// own: taking one that a live session holds as its controlling terminal
// (TIOCSCTTY's steal) needs CAP_SYS_ADMIN, and the test runs as any user.
func TestOfDevTTY(t *testing.T) {
	for _, c := range []struct {
		script   string
		declared bool
	}{
		{"exec 0</dev/tty 1>/dev/null; exec sleep 30", true},
		{"exec 0</dev/tty 1>/dev/null 2>/dev/null; exec sleep 30", false},
	} {
		_, slave, pty := openPty(t)
		var want []entry.Terminal
		if c.declared {
			want = []entry.Terminal{pty}
		}
		cmd := exec.Command("/bin/sh", "-c", c.script)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		pid := start(t, cmd)
		waitExec(t, pid, "sleep")
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d/fd/0", pid), &st); err != nil || st.Rdev != unix.Mkdev(5, 0) {
			t.Fatalf("stdin of %q: rdev %d:%d, %v", c.script, unix.Major(st.Rdev), unix.Minor(st.Rdev), err)
		}
		got, err := Of(pid)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: Of = %s, want %s", c.script, Strings(got), Strings(want))
		}
	}
}

// TestOfPipes: pipes, /dev/null and no controlling terminal declare
// nothing.
func TestOfPipes(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd.Stdout, cmd.Stderr = w, nil // stderr: /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	pid := start(t, cmd)
	got, err := Of(pid)
	if err != nil || len(got) != 0 {
		t.Errorf("Of(pipes) = %s, %v; want none", Strings(got), err)
	}
}

func TestOfGone(t *testing.T) {
	if _, err := Of(0); err == nil {
		t.Error("Of(0): no error")
	}
	if _, err := (Reader{Proc: t.TempDir(), Sys: "/sys"}).Of(12345); err == nil {
		t.Error("Of(a pid without /proc entry): no error")
	}
}

// TestRedirects: /dev/console, /dev/tty0 and /dev/tty resolve to the
// terminal they reach, read from a fake procfs and sysfs; /dev/ptmx and a
// redirect that cannot be resolved declare nothing.
func TestRedirects(t *testing.T) {
	for _, p := range []string{"/dev/console", "/dev/tty0", "/dev/tty", "/dev/ptmx", "/dev/null"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s: %v", p, err)
		}
	}
	sys := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(sys, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("class/tty/ttyS0/dev", "4:64\n")
	write("class/tty/tty3/dev", "4:3\n")
	write("class/tty/tty0/active", "tty3\n")
	if err := os.MkdirAll(filepath.Join(sys, "dev/char/4:64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../class/tty", filepath.Join(sys, "dev/char/4:64/subsystem")); err != nil {
		t.Fatal(err)
	}
	ttyS0 := entry.Terminal{Dev: 4<<20 | 64}
	tty3 := entry.Terminal{Dev: 4<<20 | 3}
	for _, c := range []struct {
		name    string
		fds     []string
		ttyNr   uint64
		console string
		want    []entry.Terminal
	}{
		{"console on a serial line", []string{"/dev/console", "/dev/console", "/dev/console"}, 0, "tty0 ttyS0", []entry.Terminal{ttyS0}},
		{"console on the virtual consoles", []string{"/dev/console"}, 0, "ttyS0 tty0", []entry.Terminal{tty3}},
		{"console unknown", []string{"/dev/console"}, 0, "", nil},
		{"tty0", []string{"/dev/tty0"}, 0, "", []entry.Terminal{tty3}},
		{"dev/tty to a serial controlling tty", []string{"/dev/tty", "/dev/null"}, unix.Mkdev(4, 64), "", []entry.Terminal{ttyS0}},
		{"controlling tty only", []string{"/dev/null", "/dev/null", "/dev/null"}, unix.Mkdev(4, 64), "", []entry.Terminal{ttyS0}},
		{"dev/tty without a controlling tty", []string{"/dev/tty"}, 0, "", nil},
		{"ptmx", []string{"/dev/ptmx"}, 0, "", nil},
		{"closed stdio", nil, 0, "", nil},
	} {
		proc := t.TempDir()
		dir := filepath.Join(proc, "7")
		if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, f := range c.fds {
			if err := os.Symlink(f, filepath.Join(dir, "fd", strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		stat := fmt.Sprintf("7 (a (b) c) S 1 7 7 %d -1 4194560 0 0 0 0\n", c.ttyNr)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(sys, "class/tty/console/active"))
		if c.console != "" {
			write("class/tty/console/active", c.console+"\n")
		}
		got, err := (Reader{Proc: proc, Sys: sys}).Of(7)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: Of = %s, want %s", c.name, Strings(got), Strings(c.want))
		}
	}
}

func TestString(t *testing.T) {
	if s := String(entry.Terminal{Dev: 136<<20 | 3, PtsDev: 25}); s != "c 136:3 (devpts 0:25)" {
		t.Errorf("String = %q", s)
	}
	if s := String(entry.Terminal{Dev: 4<<20 | 64}); s != "c 4:64" {
		t.Errorf("String = %q", s)
	}
}

// waitExec waits until pid runs comm (its shell exec'd it).
func waitExec(t *testing.T, pid int, comm string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pid %d did not exec %s", pid, comm)
}
