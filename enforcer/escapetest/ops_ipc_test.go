package escapetest

// Probe ops and raw syscalls for SysV IPC and kernel keys (ipc_test.go).

import (
	"errors"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

const (
	semGetVal = 12 // GETVAL
	msgType   = 1
)

type sembuf struct {
	num uint16
	op  int16
	flg int16
}

func msgGet() (int, error) {
	id, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0)
	if e != 0 {
		return -1, e
	}
	return int(id), nil
}

func msgSnd(id int, text string) error {
	buf := make([]byte, 8+len(text))
	*(*int64)(unsafe.Pointer(&buf[0])) = msgType
	copy(buf[8:], text)
	_, _, e := unix.Syscall6(unix.SYS_MSGSND, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(text)), unix.IPC_NOWAIT, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// msgRcv takes one message without waiting.
func msgRcv(id int) (string, error) {
	buf := make([]byte, 8+256)
	n, _, e := unix.Syscall6(unix.SYS_MSGRCV, uintptr(id), uintptr(unsafe.Pointer(&buf[0])), 256, 0, unix.IPC_NOWAIT, 0)
	if e != 0 {
		return "", e
	}
	return string(buf[8 : 8+n]), nil
}

func ipcRmid(sys uintptr, id int) {
	_, _, _ = unix.Syscall(sys, uintptr(id), unix.IPC_RMID, 0)
}

func semGet() (int, error) {
	id, _, e := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, unix.IPC_CREAT|0o600)
	if e != 0 {
		return -1, e
	}
	return int(id), nil
}

func semOp(id int, op int16) error {
	s := sembuf{num: 0, op: op, flg: unix.IPC_NOWAIT}
	_, _, e := unix.Syscall(unix.SYS_SEMOP, uintptr(id), uintptr(unsafe.Pointer(&s)), 1)
	if e != 0 {
		return e
	}
	return nil
}

func semVal(id int) (int, error) {
	v, _, e := unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, semGetVal, 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(v), nil
}

// joinNewSession gives the process a new anonymous session keyring (created
// by the process itself: inside its sandbox).
func joinNewSession() error {
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func keyRead(serial int) (string, error) {
	buf := make([]byte, 256)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, serial, buf, 0)
	if err != nil {
		return "", err
	}
	if n > len(buf) {
		n = len(buf)
	}
	return string(buf[:n]), nil
}

func argInt(r *probe.Result, s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, r.Require(err, "argument "+s)
}

func init() {
	// shm-write ID DATA: attach an existing segment read-write, write DATA.
	probe.Register("shm-write", func(r *probe.Result, a []string) {
		id, ok := argInt(r, a[0])
		if !ok {
			return
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if !r.Check(err, "shmat") {
			return
		}
		copy(b, a[1])
		_ = unix.SysvShmDetach(b)
	})
	// shm-rmid ID: remove a segment.
	probe.Register("shm-rmid", func(r *probe.Result, a []string) {
		id, ok := argInt(r, a[0])
		if !ok {
			return
		}
		_, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		r.Check(err, "shmctl")
	})
	// shm-get KEY: shmget of an existing key (associate).
	probe.Register("shm-get", func(r *probe.Result, a []string) {
		key, ok := argInt(r, a[0])
		if !ok {
			return
		}
		_, err := unix.SysvShmGet(key, 0, 0)
		r.Check(err, "shmget")
	})
	// shm-create: a new segment that outlives the probe; Out is its id.
	probe.Register("shm-create", func(r *probe.Result, a []string) {
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if r.Require(err, "shmget") {
			r.Out = strconv.Itoa(id)
		}
	})
	// shm-own: create, attach, write, read back and remove a segment.
	probe.Register("shm-own", func(r *probe.Result, a []string) {
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
		if !r.Check(err, "shmget") {
			return
		}
		defer func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) }()
		b, err := unix.SysvShmAttach(id, 0, 0)
		if !r.Check(err, "shmat") {
			return
		}
		copy(b, "inside")
		r.Effect = string(b[:6]) == "inside"
		_ = unix.SysvShmDetach(b)
	})
	// msgsnd ID TEXT
	probe.Register("msgsnd", func(r *probe.Result, a []string) {
		id, ok := argInt(r, a[0])
		if !ok {
			return
		}
		r.Check(msgSnd(id, a[1]), "msgsnd")
	})
	// msg-own: create a queue, send and receive a message, remove it.
	probe.Register("msg-own", func(r *probe.Result, a []string) {
		id, err := msgGet()
		if !r.Check(err, "msgget") {
			return
		}
		defer ipcRmid(unix.SYS_MSGCTL, id)
		if !r.Check(msgSnd(id, "inside"), "msgsnd") {
			return
		}
		m, err := msgRcv(id)
		if r.Check(err, "msgrcv") {
			r.Effect = m == "inside"
		}
	})
	// semop ID: +1 on semaphore 0.
	probe.Register("semop", func(r *probe.Result, a []string) {
		id, ok := argInt(r, a[0])
		if !ok {
			return
		}
		r.Check(semOp(id, 1), "semop")
	})
	// key-read SERIAL: Out is the payload.
	probe.Register("key-read", func(r *probe.Result, a []string) {
		serial, ok := argInt(r, a[0])
		if !ok {
			return
		}
		p, err := keyRead(serial)
		if r.Check(err, "keyctl read") {
			r.Out = p
		}
	})
	// key-update SERIAL DATA
	probe.Register("key-update", func(r *probe.Result, a []string) {
		serial, ok := argInt(r, a[0])
		if !ok {
			return
		}
		_, err := unix.KeyctlBuffer(unix.KEYCTL_UPDATE, serial, []byte(a[1]), 0)
		r.Check(err, "keyctl update")
	})
	// request-key DESC: in a new session keyring of its own (so that the
	// destination keyring is the sandbox's), request a "user" key nobody
	// has: the kernel calls /sbin/request-key. A helper that declines
	// leaves a negative key: ENOKEY counts as the request having been made.
	probe.Register("request-key", func(r *probe.Result, a []string) {
		if !r.Require(joinNewSession(), "join a new session keyring") {
			return
		}
		_, err := unix.RequestKey("user", a[0], "escapetest-callout", unix.KEY_SPEC_SESSION_KEYRING)
		if errors.Is(err, unix.ENOKEY) {
			r.Out = "ENOKEY: the helper did not instantiate the key"
			return
		}
		r.Check(err, "request_key")
	})
	// key-own: add a key to a session keyring the probe created, read it.
	probe.Register("key-own", func(r *probe.Result, a []string) {
		if !r.Require(joinNewSession(), "join a new session keyring") {
			return
		}
		serial, err := unix.AddKey("user", "escapetest-own", []byte("inside"), unix.KEY_SPEC_SESSION_KEYRING)
		if !r.Check(err, "add_key") {
			r.Out = "add_key"
			return
		}
		p, err := keyRead(serial)
		if !r.Check(err, "keyctl read") {
			r.Out = "keyctl read"
		} else {
			r.Out = p
			r.Effect = p == "inside"
		}
	})
}
