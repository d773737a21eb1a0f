package escapetest

// Probe ops and raw syscalls for POSIX message queues, leases and locks,
// and the task name (ipc_posix_test.go).

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// mqAttr is struct mq_attr (include/uapi/linux/mqueue.h).
type mqAttr struct {
	Flags, Maxmsg, Msgsize, Curmsgs int64
	_                               [4]int64
}

// mqOpen is mq_open(2): name without the leading "/" (glibc strips it).
func mqOpen(name string, flags int, attr *mqAttr) (int, error) {
	p, err := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	if err != nil {
		return -1, err
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flags|unix.O_CLOEXEC), 0o600, uintptr(unsafe.Pointer(attr)), 0, 0)
	runtime.KeepAlive(attr)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func mqUnlink(name string) error {
	p, err := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0); e != 0 {
		return e
	}
	return nil
}

// mqSend sends text without waiting (the queue is opened O_NONBLOCK).
func mqSend(fd int, text string) error {
	b := []byte(text)
	if _, _, e := unix.Syscall6(unix.SYS_MQ_TIMEDSEND, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// mqReceive takes one message without waiting (O_NONBLOCK).
func mqReceive(fd int) (string, error) {
	b := make([]byte, mqMsgSize)
	n, _, e := unix.Syscall6(unix.SYS_MQ_TIMEDRECEIVE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	if e != 0 {
		return "", e
	}
	return string(b[:n]), nil
}

func mqGetattr(fd int) (mqAttr, error) {
	var a mqAttr
	if _, _, e := unix.Syscall(unix.SYS_MQ_GETSETATTR, uintptr(fd), 0, uintptr(unsafe.Pointer(&a))); e != 0 {
		return a, e
	}
	return a, nil
}

const mqMsgSize = 64

// mqCreate creates a new queue (O_EXCL) of 4 messages of mqMsgSize bytes,
// open read-write and non-blocking.
func mqCreate(name string) (int, error) {
	return mqOpen(name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NONBLOCK, &mqAttr{Maxmsg: 4, Msgsize: mqMsgSize})
}

// commPath: the task name file of the calling thread (locked to it).
func commPath() string { return fmt.Sprintf("/proc/self/task/%d/comm", unix.Gettid()) }

func readComm(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// lockedBy reports whether another open file description of path is kept
// from a shared flock (an exclusive one is held).
func lockedBy(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB) == unix.EWOULDBLOCK
}

// ofdLockedBy reports whether another open file description of path sees
// an OFD or POSIX lock in the way of a read lock (F_OFD_GETLK).
func ofdLockedBy(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	lk := unix.Flock_t{Type: unix.F_RDLCK}
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) == nil && lk.Type == unix.F_WRLCK
}

func init() {
	// mq-send NAME TEXT: open an existing queue write-only and send TEXT.
	probe.Register("mq-send", func(r *probe.Result, a []string) {
		fd, err := mqOpen(a[0], unix.O_WRONLY|unix.O_NONBLOCK, nil)
		if !r.Check(err, "mq_open") {
			return
		}
		defer unix.Close(fd)
		r.Check(mqSend(fd, a[1]), "mq_timedsend")
	})
	// mq-receive NAME: open an existing queue read-only, take a message
	// (Out).
	probe.Register("mq-receive", func(r *probe.Result, a []string) {
		fd, err := mqOpen(a[0], unix.O_RDONLY|unix.O_NONBLOCK, nil)
		if !r.Check(err, "mq_open") {
			return
		}
		defer unix.Close(fd)
		m, err := mqReceive(fd)
		if r.Check(err, "mq_timedreceive") {
			r.Out = m
		}
	})
	// mq-unlink NAME
	probe.Register("mq-unlink", func(r *probe.Result, a []string) {
		r.Check(mqUnlink(a[0]), "mq_unlink")
	})
	// mq-own NAME: create a queue, open it again by name, send and receive
	// a message through the two descriptors, unlink it.
	probe.Register("mq-own", func(r *probe.Result, a []string) {
		fd, err := mqCreate(a[0])
		if !r.Check(err, "mq_open O_CREAT") {
			return
		}
		defer unix.Close(fd)
		defer func() { _ = mqUnlink(a[0]) }()
		rd, err := mqOpen(a[0], unix.O_RDONLY|unix.O_NONBLOCK, nil)
		if !r.Check(err, "mq_open of the sandbox's own queue") {
			return
		}
		defer unix.Close(rd)
		if !r.Check(mqSend(fd, "inside"), "mq_timedsend") {
			return
		}
		m, err := mqReceive(rd)
		if !r.Check(err, "mq_timedreceive") {
			return
		}
		r.Effect = m == "inside"
		r.Check(mqUnlink(a[0]), "mq_unlink")
	})
	// read-file PATH: open read-only and read (Out: the bytes).
	probe.Register("read-file", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !r.Check(err, "open") {
			return
		}
		defer unix.Close(fd)
		b := make([]byte, 256)
		n, err := unix.Read(fd, b)
		if r.Check(err, "read") {
			r.Out = string(b[:n])
		}
	})
	// flock PATH ex|sh: open read-only, take an exclusive or shared flock
	// without waiting; Effect: another open file description is kept from
	// a shared lock (ex) / holds one alongside (sh).
	probe.Register("flock", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !r.Require(err, "open") {
			return
		}
		defer unix.Close(fd)
		how := unix.LOCK_SH
		if a[1] == "ex" {
			how = unix.LOCK_EX
		}
		if !r.Check(unix.Flock(fd, how|unix.LOCK_NB), "flock") {
			return
		}
		if a[1] == "ex" {
			r.Effect = lockedBy(a[0])
		} else {
			r.Effect = !lockedBy(a[0])
		}
	})
	// ofd-wrlck: an OFD write lock on the inherited descriptor (opened for
	// write outside); Effect: another open file description sees it.
	probe.Register("ofd-wrlck", func(r *probe.Result, a []string) {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		if !r.Check(unix.FcntlFlock(probe.InheritedFD, unix.F_OFD_SETLK, &lk), "F_OFD_SETLK") {
			return
		}
		r.Effect = ofdLockedBy(a[0])
	})
	// lease PATH: open read-only, take a read lease; Effect: F_GETLEASE
	// reports it.
	probe.Register("lease", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !r.Require(err, "open") {
			return
		}
		defer unix.Close(fd)
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK); !r.Check(err, "F_SETLEASE") {
			return
		}
		l, err := unix.FcntlInt(uintptr(fd), unix.F_GETLEASE, 0)
		r.Effect = err == nil && l == unix.F_RDLCK
	})
	// set-name prctl|proc|task NAME: name this thread (prctl PR_SET_NAME),
	// the process (/proc/self/comm) or this thread through procfs
	// (/proc/self/task/TID/comm, as pthread_setname_np(3) for another
	// thread); Effect: the name read back is NAME.
	probe.Register("set-name", func(r *probe.Result, a []string) {
		runtime.LockOSThread()
		name := a[1]
		path := commPath()
		switch a[0] {
		case "prctl":
			b := append([]byte(name), 0)
			r.Check(unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0), "prctl")
		case "proc", "task":
			if a[0] == "proc" {
				path = "/proc/self/comm"
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if !r.Check(err, "open "+path) {
				return
			}
			defer f.Close()
			_, err = f.WriteString(name)
			r.Check(err, "write "+path)
		default:
			r.Setup = "unknown way " + strconv.Quote(a[0])
			return
		}
		r.Out = readComm(path)
		r.Effect = r.Out == name
	})
	// fifo-write PATH TEXT: open a FIFO write-only without waiting (a
	// reader exists) and write TEXT.
	probe.Register("fifo-write", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if !r.Check(err, "open") {
			return
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(a[1]))
		r.Check(err, "write")
	})
	// fifo-link-write DIR HOSTFIFO TEXT failed|plain: link HOSTFIFO (a FIFO
	// made outside, on the same filesystem) as DIR/<name>, open that name
	// write-only without waiting and write TEXT. "failed" first makes the
	// name a mkfifo that the filesystem failed after inode_mknod: it fills
	// the disk (fallocate) and DIR's blocks (names, until ENOSPC), mkfifo
	// of the name must fail with ENOSPC (leaving its negative dentry
	// cached), then it frees the disk and links at once. It removes DIR's
	// files; Out: milliseconds from the failed mkfifo to the link.
	probe.Register("fifo-link-write", func(r *probe.Result, a []string) {
		// One thread: the mknod's note is in the task's storage, and
		// the attack links in the task that made it.
		runtime.LockOSThread()
		dir, host, text := a[0], a[1], a[2]
		if !r.Require(unix.Mkdir(dir, 0o755), "mkdir") {
			return
		}
		defer removeFiles(dir)
		target := dir + "/" + strings.Repeat("z", 200)
		var failedAt time.Time
		if a[3] == "failed" {
			if !r.Require(fifoFailedForSpace(dir, target), "a mkfifo failed for space") {
				return
			}
			failedAt = time.Now()
		}
		if !r.Check(unix.Link(host, target), "link") {
			return
		}
		if !failedAt.IsZero() {
			r.Out = strconv.FormatInt(time.Since(failedAt).Milliseconds(), 10) + " ms from the failed mkfifo to the link"
		}
		fd, err := unix.Open(target, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if !r.Check(err, "open") {
			return
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(text))
		r.Check(err, "write")
	})
	// fifo-read PATH: open a FIFO read-only without waiting.
	probe.Register("fifo-read", func(r *probe.Result, a []string) {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if r.Check(err, "open") {
			unix.Close(fd)
		}
	})
	// fifo-own PATH: make a FIFO, open it read-write, write and read back;
	// Effect: the bytes came back.
	probe.Register("fifo-own", func(r *probe.Result, a []string) {
		if !r.Check(unix.Mkfifo(a[0], 0o600), "mkfifo") {
			return
		}
		defer unix.Unlink(a[0])
		fd, err := unix.Open(a[0], unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if !r.Check(err, "open") {
			return
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, []byte("inside")); !r.Check(err, "write") {
			return
		}
		b := make([]byte, 16)
		n, err := unix.Read(fd, b)
		r.Effect = r.Check(err, "read") && string(b[:n]) == "inside"
	})
	// reopen-fd: open /proc/self/fd/<inherited> read-only (a pipe passed
	// in: the sandbox's own stdio).
	probe.Register("reopen-fd", func(r *probe.Result, a []string) {
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", probe.InheritedFD), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if r.Check(err, "open") {
			unix.Close(fd)
			r.Effect = true
		}
	})
	// prctl-other: an option other than PR_SET_NAME still acts
	// (PR_SET_PDEATHSIG read back): task_prctl's "no decision" must let
	// prctl(2) go on. Effect: the value read back.
	probe.Register("prctl-other", func(r *probe.Result, a []string) {
		if !r.Check(unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGUSR2), 0, 0, 0), "PR_SET_PDEATHSIG") {
			return
		}
		var sig int32
		if r.Check(unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0), "PR_GET_PDEATHSIG") {
			r.Effect = sig == int32(unix.SIGUSR2)
		}
	})
}

// fifoFailedForSpace fills the filesystem of dir (one fallocated file in
// dir) and then dir itself (empty files with long names until a new
// directory block cannot be had), makes mkfifo(target) fail with ENOSPC
// after inode_mknod ran, and frees the fallocated file. Only the long
// names stay (removeFiles takes them).
func fifoFailedForSpace(dir, target string) error {
	big := dir + "/big"
	fd, err := unix.Open(big, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", big, err)
	}
	defer func() { unix.Close(fd); unix.Unlink(big) }()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	var off int64
	for chunk := int64(st.Bsize) * int64(st.Bfree); chunk >= 1024; {
		if unix.Fallocate(fd, 0, off, chunk) == nil {
			off += chunk
		} else {
			chunk /= 2
		}
	}
	long := strings.Repeat("a", 200)
	for n := 0; ; n++ {
		if n == 100000 {
			return fmt.Errorf("%s still takes names after %d", dir, n)
		}
		f, err := unix.Open(fmt.Sprintf("%s/%05d%s", dir, n, long), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			return fmt.Errorf("name %d: %w", n, err)
		}
		unix.Close(f)
	}
	if err := unix.Mknod(target, unix.S_IFIFO|0o600, 0); !errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("mkfifo on a full directory: %v, want ENOSPC", err)
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		return fmt.Errorf("free the disk: %w", err)
	}
	return nil
}

// removeFiles removes dir's entries and dir (one level: what
// fifo-link-write made).
func removeFiles(dir string) {
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			unix.Unlink(dir + "/" + e.Name())
		}
	}
	unix.Rmdir(dir)
}
