package escapetest

// Outside attacks, second batch.
//  - K8: a POSIX message queue made outside, its descriptor opened
//    outside and passed in (SCM_RIGHTS, inherited, or held from before the
//    registration): mq_timedsend/mq_timedreceive pass no LSM hook, so only
//    opens are decided.
//  - W10: a shared lock (flock LOCK_SH, F_RDLCK) under write=false on a
//    host lock file makes every exclusive lock elsewhere fail or wait,
//    the same stall an exclusive one causes.

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// zz-mq-fd send TEXT | receive: on fd 3, a queue descriptor.
		"zz-mq-fd": func(r *probe.Result, a []string) {
			if a[0] == "send" {
				r.Check(mqSend(3, a[1]), "mq_timedsend")
				return
			}
			m, err := mqReceive(3)
			if r.Check(err, "mq_timedreceive") {
				r.Out = m
			}
		},
		// zz-lock-sh-hold PATH flock|posix: a shared lock on PATH opened
		// read-only, then Sync (the test looks), then release.
		"zz-lock-sh-hold": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if !r.Require(err, "open") {
				return
			}
			defer unix.Close(fd)
			if a[1] == "posix" {
				lk := unix.Flock_t{Type: unix.F_RDLCK}
				r.Check(unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lk), "F_SETLK F_RDLCK")
			} else {
				r.Check(unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB), "flock LOCK_SH")
			}
			probe.Sync()
		},
	})
}

func TestZZAttackMqueueDescriptorPassedIn(t *testing.T) {
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "K8 mq_timedsend on an outside queue's descriptor passed in", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t)
			fd, err := mqOpen(q, unix.O_WRONLY|unix.O_NONBLOCK, nil)
			if err != nil {
				t.Fatal(err)
			}
			return sb.ProbeFiles(t, []*os.File{os.NewFile(uintptr(fd), "mq")}, "zz-mq-fd", "send", "pwned"), queueCountIsNot(q, 0)
		}},
		{Name: "K8 mq_timedreceive of a host secret through an outside queue's descriptor passed in", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t, "host-secret")
			fd, err := mqOpen(q, unix.O_RDONLY|unix.O_NONBLOCK, nil)
			if err != nil {
				t.Fatal(err)
			}
			return sb.ProbeFiles(t, []*os.File{os.NewFile(uintptr(fd), "mq")}, "zz-mq-fd", "receive"), queueCountIsNot(q, 1)
		}},
	}
	runTamperOnly(t, cases)
}

func TestZZAttackSharedLockStallsHost(t *testing.T) {
	kt.Enforcer(t)
	attempt := func(mode string) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := lockFile(t)
			var blocked bool
			var what string
			look := func() {
				fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC, 0)
				if err != nil {
					what = err.Error()
					return
				}
				defer unix.Close(fd)
				if mode == "posix" {
					lk := unix.Flock_t{Type: unix.F_WRLCK}
					err = unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lk)
				} else {
					err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
				}
				blocked = err != nil
				what = fmt.Sprintf("a host exclusive lock (%s) on %s: %v", mode, p, err)
			}
			r := sb.Run(t, probe.Cmd{Op: "zz-lock-sh-hold", Args: []string{p, mode}, Between: look, Timeout: 30 * time.Second})
			return r, func() (bool, string) { return blocked, what }
		}
	}
	cases := []kerneltest.Case{
		{Name: "W10 flock LOCK_SH on a host lock file: the host's LOCK_EX fails", Attempt: attempt("flock")},
		{Name: "W10 F_RDLCK on a host lock file: the host's F_WRLCK fails", Attempt: attempt("posix")},
	}
	for i := range cases {
		cases[i].Ceiling = fullNoWrite
	}
	kt.Run(t, cases)
	_ = strconv.Itoa
}
