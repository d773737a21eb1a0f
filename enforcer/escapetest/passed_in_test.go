package escapetest

// K8, N11: descriptors passed in (SCM_RIGHTS) of objects whose later use
// passes no hook that decides it: a POSIX message queue made outside
// (mq_timedsend and mq_timedreceive reach no LSM hook) and, under
// network=false, a host process's FIFO. file_receive refuses them as
// their open would be refused; the kernel then truncates the control
// message (MSG_CTRUNC) and the receiver gets no descriptor.

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// recv-fd-use mq-send TEXT | mq-receive | write TEXT: receive one
		// descriptor over the unix socket on fd 3 (SCM_RIGHTS), then
		// send to the queue, receive from it, or write to it. Errno
		// EPERM when the kernel truncated the control message without
		// a descriptor (file_receive refused it).
		"recv-fd-use": func(r *probe.Result, a []string) {
			buf := make([]byte, 16)
			oob := make([]byte, unix.CmsgSpace(4))
			_, oobn, flags, _, err := unix.Recvmsg(3, buf, oob, 0)
			if !r.Require(err, "recvmsg") {
				return
			}
			var fd = -1
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) > 0 {
				if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) > 0 {
					fd = fds[0]
				}
			}
			if fd < 0 {
				if flags&unix.MSG_CTRUNC != 0 {
					r.Errno = unix.EPERM
					r.Out = "no descriptor: the control message was truncated (MSG_CTRUNC)"
					return
				}
				r.Setup = "no descriptor in the message"
				return
			}
			defer unix.Close(fd)
			switch a[0] {
			case "mq-send":
				r.Check(mqSend(fd, a[1]), "mq_timedsend")
			case "mq-receive":
				m, err := mqReceive(fd)
				if r.Check(err, "mq_timedreceive") {
					r.Out = m
				}
			default:
				_, err := unix.Write(fd, []byte(a[1]))
				r.Check(err, "write")
			}
		},
	})
}

// passIn sends fd over a fresh socket pair and returns the end the probe
// receives it from (its fd 3).
func passIn(t *testing.T, fd int) *os.File {
	t.Helper()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(sp[0]), "sender"), os.NewFile(uintptr(sp[1]), "receiver")
	t.Cleanup(func() { mine.Close(); theirs.Close() })
	if err := unix.Sendmsg(sp[0], []byte("x"), unix.UnixRights(fd), nil, 0); err != nil {
		t.Fatalf("sendmsg SCM_RIGHTS: %v", err)
	}
	return theirs
}

func TestDescriptorsPassedIn(t *testing.T) {
	kt.Enforcer(t)
	mqWant := kerneltest.Hooks(denial.HookFileReceive).Rule(denial.RuleIPCOutside)
	queue := func(flags int, op string, args []string, eff func(q string) kerneltest.Effect, msgs ...string) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t, msgs...)
			fd, err := mqOpen(q, flags|unix.O_NONBLOCK|unix.O_CLOEXEC, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			return sb.ProbeFiles(t, []*os.File{passIn(t, fd)}, "recv-fd-use", append([]string{op}, args...)...), eff(q)
		}
	}
	cases := []kerneltest.Case{
		{Name: "K8 mq_timedsend on an outside queue's descriptor received over SCM_RIGHTS", Ceiling: tamperOnly, Want: mqWant,
			Attempt: queue(unix.O_WRONLY, "mq-send", []string{"pwned"}, func(q string) kerneltest.Effect { return queueCountIsNot(q, 0) })},
		{Name: "K8 mq_timedreceive of a host message through an outside queue's descriptor received over SCM_RIGHTS", Ceiling: tamperOnly, Want: mqWant,
			Attempt: queue(unix.O_RDONLY, "mq-receive", nil, func(q string) kerneltest.Effect { return queueCountIsNot(q, 1) }, "host-secret")},
		{Name: "N11 write to a host process's FIFO received over SCM_RIGHTS", Ceiling: netOff,
			Want: kerneltest.Hooks(denial.HookFileReceive).Rule(denial.RuleNetwork),
			Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
				p, rd := outsideFIFO(t, kt.TmpDir())
				wr, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Close(wr) })
				return sb.ProbeFiles(t, []*os.File{passIn(t, wr)}, "recv-fd-use", "write", "token"), fifoReceived(rd)
			}},
	}
	kt.Run(t, cases)
}
