package escapetest

// E4: I/O signals decided where the kernel delivers them
// (file_send_sigiotask), whatever chose the owner:
//
//   - the tty core, which sets the owner itself when O_ASYNC is enabled
//     on a terminal (to its foreground process group), after the hooks
//     of fcntl and ioctl ran; the signal is then sent by whoever feeds the
//     terminal (the flush_to_ldisc worker), not by the sandbox. A foreign
//     pty may be opened O_RDONLY|O_NOCTTY under every ceiling (D2), and
//     the sandbox's own terminal may be shared with a foreground process
//     group outside (enforcerd run from an interactive shell);
//   - a second thread that changes F_SETOWN_EX's, FIOSETOWN's or
//     FIOASYNC's argument between the program's read of user memory and
//     the kernel's.
//
// The fcntl or ioctl itself may succeed (Delivered): what must not happen
// is the signal, and the record of its refusal must be there.

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// sigio-tty-async PATH sigkill|sigio HOLDMS: open PATH read-only
		// with O_NOCTTY (allowed on a foreign terminal), optionally
		// F_SETSIG SIGKILL (no owner yet: allowed), F_SETFL O_ASYNC
		// (tty_fasync sets the owner to the terminal's foreground
		// process group), hold the descriptor HOLDMS ms.
		"sigio-tty-async": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NOCTTY, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			if a[1] == "sigkill" {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
					return
				}
			}
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, unix.O_ASYNC|unix.O_RDONLY); !r.Check(err, "F_SETFL O_ASYNC") {
				return
			}
			own, _ := unix.FcntlInt(uintptr(fd), unix.F_GETOWN, 0)
			r.Out = "owner " + strconv.Itoa(own)
			ms, _ := strconv.Atoi(a[2])
			time.Sleep(time.Duration(ms) * time.Millisecond)
		},
		// sigio-tty-async-fd sigkill|sigio fcntl|fioasync HOLDMS: the same
		// on fd 3 (a terminal inherited, e.g. the sandbox's declared
		// own terminal), O_ASYNC by fcntl or FIOASYNC.
		"sigio-tty-async-fd": func(r *probe.Result, a []string) {
			if a[0] == "sigkill" {
				if _, err := unix.FcntlInt(3, unix.F_SETSIG, int(unix.SIGKILL)); !r.Check(err, "F_SETSIG") {
					return
				}
			}
			if a[1] == "fioasync" {
				if !r.Check(unix.IoctlSetPointerInt(3, fioAsync, 1), "FIOASYNC") {
					return
				}
			} else {
				fl, err := unix.FcntlInt(3, unix.F_GETFL, 0)
				if !r.Require(err, "F_GETFL") {
					return
				}
				if _, err := unix.FcntlInt(3, unix.F_SETFL, fl|unix.O_ASYNC); !r.Check(err, "F_SETFL O_ASYNC") {
					return
				}
			}
			own, _ := unix.FcntlInt(3, unix.F_GETOWN, 0)
			r.Out = "owner " + strconv.Itoa(own)
			ms, _ := strconv.Atoi(a[2])
			time.Sleep(time.Duration(ms) * time.Millisecond)
		},
		// sigio-race-owner setown-ex|fiosetown VICTIM SECONDS HOLDMS: fd 3
		// (a pipe's read end or a socket whose peer is held outside):
		// F_SETSIG SIGKILL, O_ASYNC, then the owner set again and again
		// from a word another thread flips between 0 and VICTIM, until
		// the kernel reports VICTIM as the owner or SECONDS pass; then
		// hold the descriptor HOLDMS ms. Errno: the last refusal when
		// the owner never became VICTIM.
		"sigio-race-owner": func(r *probe.Result, a []string) {
			victim, _ := strconv.Atoi(a[1])
			secs, _ := strconv.Atoi(a[2])
			hold, _ := strconv.Atoi(a[3])
			if _, err := unix.FcntlInt(3, unix.F_SETSIG, int(unix.SIGKILL)); !r.Require(err, "F_SETSIG") {
				return
			}
			fl, err := unix.FcntlInt(3, unix.F_GETFL, 0)
			if !r.Require(err, "F_GETFL") {
				return
			}
			if _, err := unix.FcntlInt(3, unix.F_SETFL, fl|unix.O_ASYNC); !r.Require(err, "F_SETFL O_ASYNC") {
				return
			}
			type ownerEx struct{ typ, pid int32 }
			word := new([64]int32) // the flipped words, off the stack
			ex := (*ownerEx)(unsafe.Pointer(&word[8]))
			ex.typ = 1 // F_OWNER_PID
			tries, ok, last := flipRace(&ex.pid, int32(victim), secs, func() (bool, syscall.Errno) {
				var e syscall.Errno
				if a[0] == "fiosetown" {
					_, _, e = unix.RawSyscall(unix.SYS_IOCTL, 3, fioSetown, uintptr(unsafe.Pointer(&ex.pid)))
				} else {
					_, _, e = unix.RawSyscall(unix.SYS_FCNTL, 3, unix.F_SETOWN_EX, uintptr(unsafe.Pointer(ex)))
				}
				if e != 0 {
					return false, e
				}
				own, err := unix.FcntlInt(3, unix.F_GETOWN, 0)
				return err == nil && own == victim, 0
			})
			r.Out = "tries " + strconv.Itoa(tries)
			if !ok {
				r.Errno = last
				return
			}
			r.Out += ", owner is " + a[1]
			time.Sleep(time.Duration(hold) * time.Millisecond)
		},
		// sigio-race-fioasync SECONDS HOLDMS: fd 3 is a socket whose owner
		// (a process outside) and signal (SIGKILL) were set outside.
		// FIOASYNC again and again from a word another thread flips
		// between 0 (not checked) and 1, until O_ASYNC is on or SECONDS
		// pass; then hold fd 3 HOLDMS ms.
		"sigio-race-fioasync": func(r *probe.Result, a []string) {
			secs, _ := strconv.Atoi(a[0])
			hold, _ := strconv.Atoi(a[1])
			word := new([64]int32) // the flipped word, off the stack
			tries, ok, last := flipRace(&word[8], 1, secs, func() (bool, syscall.Errno) {
				_, _, e := unix.RawSyscall(unix.SYS_IOCTL, 3, fioAsync, uintptr(unsafe.Pointer(&word[8])))
				if e != 0 {
					return false, e
				}
				fl, err := unix.FcntlInt(3, unix.F_GETFL, 0)
				return err == nil && fl&unix.O_ASYNC != 0, 0
			})
			r.Out = "tries " + strconv.Itoa(tries)
			if !ok {
				r.Errno = last
				return
			}
			r.Out += ", O_ASYNC on"
			time.Sleep(time.Duration(hold) * time.Millisecond)
		},
	})
}

// flipRace runs try again and again, from one locked thread, while
// another flips *word between 0 and v, until try reports the kernel took
// v or secs seconds pass. It returns the tries, whether one succeeded,
// and the last errno a try returned (EPERM when none did).
func flipRace(word *int32, v int32, secs int, try func() (bool, syscall.Errno)) (tries int, ok bool, last syscall.Errno) {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		for !stop.Load() {
			for i := 0; i < 64; i++ {
				atomic.StoreInt32(word, 0)
				atomic.StoreInt32(word, v)
			}
			atomic.StoreInt32(word, 0)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	last = unix.EPERM
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) && !ok {
		for i := 0; i < 256 && !ok; i++ {
			tries++
			var e syscall.Errno
			if ok, e = try(); e != 0 {
				last = e
			}
		}
	}
	stop.Store(true)
	<-done
	return tries, ok, last
}

// startTtyVictim runs busybox sleep outside as a session leader whose
// controlling terminal is p's slave: the terminal's foreground process
// group is the victim's.
func startTtyVictim(t *testing.T, p *hostPty) *outside {
	t.Helper()
	return startOutsideWith(t, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}, p.slave)
}

// feed writes to w every 50 ms until the returned stop is called.
func feed(t *testing.T, w *os.File, b []byte) (stop func()) {
	t.Helper()
	quit := make(chan struct{})
	fin := make(chan struct{})
	go func() {
		defer close(fin)
		for {
			select {
			case <-quit:
				return
			case <-time.After(50 * time.Millisecond):
				_, _ = w.Write(b)
			}
		}
	}()
	var once atomic.Bool
	stop = func() {
		if once.CompareAndSwap(false, true) {
			close(quit)
			<-fin
		}
	}
	t.Cleanup(stop)
	return stop
}

// sigioWant: the record of a signal refused at delivery, or of the
// arrangement refused at once (the early check of an owner named
// outside, when the racing thread lost).
var sigioWant = kerneltest.Want{
	Hooks: []denial.Hook{denial.HookFileSendSigiotask, denial.HookFileFcntl, denial.HookFileIoctl, denial.HookFileIoctlCompat},
	Rules: []denial.Rule{denial.RuleSigioOwner},
}

func TestAttackTtyFasyncOwner(t *testing.T) {
	kt.Enforcer(t)
	tty := func(sig string) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := newHostPty(t)
			o := startTtyVictim(t, p)
			time.Sleep(200 * time.Millisecond) // the victim took its terminal
			stop := feed(t, p.master, []byte("x\n"))
			r := sb.Probe(t, "sigio-tty-async", p.path, sig, "1500")
			stop()
			return r, o.dead()
		}
	}
	want := kerneltest.Want{Hooks: []denial.Hook{denial.HookFileSendSigiotask}, Rules: []denial.Rule{denial.RuleSigioOwner}}
	runTamperOnly(t, []kerneltest.Case{
		{Name: "E4 F_SETSIG SIGKILL, O_ASYNC on a foreign pty: its foreground process group outside is killed", Attempt: tty("sigkill"), Delivered: true, Want: want},
		{Name: "E4 O_ASYNC on a foreign pty: SIGIO kills its foreground process group outside", Attempt: tty("sigio"), Delivered: true, Want: want},
	})
}

// TestAttackOwnerDoubleFetch: the ceiling run passes whether or not the
// racing thread wins (it logs which); when it wins, the owner the kernel
// read is outside and only the delivery's decision stands between the
// I/O and the kill.
func TestAttackOwnerDoubleFetch(t *testing.T) {
	kt.Enforcer(t)
	race := func(mode string) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			o := startOutside(t, nil)
			var mine, peer *os.File
			if mode == "fiosetown" {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
				if err != nil {
					t.Fatal(err)
				}
				mine, peer = os.NewFile(uintptr(fds[0]), "mine"), os.NewFile(uintptr(fds[1]), "peer")
			} else {
				var err error
				mine, peer, err = os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { mine.Close(); peer.Close() })
			stop := feed(t, peer, []byte("x"))
			r := sb.ProbeFiles(t, []*os.File{mine}, "sigio-race-owner", mode, o.pid(), "8", "1000")
			stop()
			t.Logf("%s: %v", mode, r)
			return r, o.dead()
		}
	}
	inherited := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		o := startOutside(t, nil)
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		mine, peer := os.NewFile(uintptr(fds[0]), "owned"), os.NewFile(uintptr(fds[1]), "peer")
		t.Cleanup(func() { mine.Close(); peer.Close() })
		// Owner and signal set here, outside the sandbox.
		if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETOWN, o.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETSIG, int(unix.SIGKILL)); err != nil {
			t.Fatal(err)
		}
		stop := feed(t, peer, []byte("x"))
		r := sb.ProbeFiles(t, []*os.File{mine}, "sigio-race-fioasync", "8", "1000")
		stop()
		t.Logf("fioasync: %v", r)
		return r, o.dead()
	}
	runTamperOnly(t, []kerneltest.Case{
		{Name: "E4 F_SETOWN_EX owner flipped 0 -> outside between the program's read and the kernel's", Attempt: race("setown-ex"), Delivered: true, Want: sigioWant},
		{Name: "E4 FIOSETOWN owner flipped 0 -> outside between the program's read and the kernel's", Attempt: race("fiosetown"), Delivered: true, Want: sigioWant},
		{Name: "E4 FIOASYNC on a descriptor owned outside, its argument flipped 0 -> 1 after the program's read", Attempt: inherited, Delivered: true, Want: sigioWant},
	})
}

// TestAttackOwnTerminalFasyncOwner: the sandbox's declared own terminal
// (its entrypoint's stdio) is shared with a foreground process group
// outside (enforcerd run from an interactive shell: the job's other
// processes, enforcerd run itself). O_ASYNC / FIOASYNC on it, both
// allowed on an own terminal, make that process group the owner: the
// signal is refused where it is delivered.
func TestAttackOwnTerminalFasyncOwner(t *testing.T) {
	kt.Enforcer(t)
	for _, mode := range []string{"fcntl", "fioasync"} {
		t.Run(mode, func(t *testing.T) {
			for _, ceiling := range []bool{false, true} {
				p := newHostPty(t)
				o := startTtyVictim(t, p)
				time.Sleep(200 * time.Millisecond)
				sb := kt.Sandbox(t, "case")
				if ceiling {
					sb.Register(t, entry.Entry{Ceiling: tamperOnly, Terminals: []entry.Terminal{p.terminal(t)}})
				}
				stop := feed(t, p.master, []byte("x\n"))
				r := sb.ProbeFiles(t, []*os.File{p.slave}, "sigio-tty-async-fd", "sigkill", mode, "1500")
				stop()
				dead, what := o.dead()()
				t.Logf("ceiling=%v: %v; %s: %v", ceiling, r, what, dead)
				if r.Setup != "" {
					t.Fatalf("setup: %v", r)
				}
				if !ceiling && (r.Errno != 0 || !dead) {
					t.Fatalf("control: %v, dead=%v: the probe proves nothing", r, dead)
				}
				if ceiling {
					if dead {
						t.Errorf("BYPASS own terminal %s under %v: %v; %s", mode, tamperOnly, r, what)
					}
					kt.Expect(t, sb.Cg.ID, sigioWant)
				}
			}
		})
	}
}
