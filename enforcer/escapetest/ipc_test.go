package escapetest

// SysV IPC objects and kernel keys created outside the sandbox (bpf/ipc.bpf.c),
// for every enforced process whatever its ceiling: here the ceiling allows
// everything else. The objects are created by this test process, outside
// every sandbox.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/enforcer"
)

// outsideShm creates a segment holding "host" (removed at cleanup).
func outsideShm(t *testing.T) int {
	t.Helper()
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatalf("shmget: %v", err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	b, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatalf("shmat: %v", err)
	}
	copy(b, "host\x00")
	_ = unix.SysvShmDetach(b)
	return id
}

// shmWritten: the segment's first bytes are no longer "host".
func shmWritten(id int) effect {
	return func() (bool, string) {
		b, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
		if err != nil {
			return false, fmt.Sprintf("segment %d written (attach from outside: %v)", id, err)
		}
		defer func() { _ = unix.SysvShmDetach(b) }()
		got := string(b[:5])
		return got != "host\x00", fmt.Sprintf("segment %d written (starts %q)", id, got)
	}
}

func shmGone(id int) effect {
	return func() (bool, string) {
		_, err := unix.SysvShmCtl(id, unix.IPC_STAT, &unix.SysvShmDesc{})
		return err != nil, fmt.Sprintf("segment %d removed (IPC_STAT: %v)", id, err)
	}
}

func TestIPC(t *testing.T) {
	kernel(t)
	cases := []tcase{
		{name: "shmat read-write of an outside segment, write", hook: enforcer.HookIPCPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			id := outsideShm(t)
			return probe(t, dir, nil, "shm-write", strconv.Itoa(id), "pwned"), shmWritten(id)
		}},
		{name: "shmctl IPC_RMID of an outside segment", hook: enforcer.HookIPCPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			id := outsideShm(t)
			return probe(t, dir, nil, "shm-rmid", strconv.Itoa(id)), shmGone(id)
		}},
		{name: "shmget of an outside segment's key", hook: enforcer.HookIPCPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			key := 0x6e660000 + int(seq.Add(1))
			id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
			if err != nil {
				t.Fatalf("shmget: %v", err)
			}
			t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
			return probe(t, dir, nil, "shm-get", strconv.Itoa(key)), nil
		}},
		{name: "msgsnd to an outside queue", hook: enforcer.HookIPCPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			id, err := msgGet()
			if err != nil {
				t.Fatalf("msgget: %v", err)
			}
			t.Cleanup(func() { ipcRmid(unix.SYS_MSGCTL, id) })
			return probe(t, dir, nil, "msgsnd", strconv.Itoa(id), "pwned"), func() (bool, string) {
				m, err := msgRcv(id)
				return err == nil, fmt.Sprintf("queue %d got a message (%q, %v)", id, m, err)
			}
		}},
		{name: "semop on an outside semaphore set", hook: enforcer.HookIPCPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			id, err := semGet()
			if err != nil {
				t.Fatalf("semget: %v", err)
			}
			t.Cleanup(func() { ipcRmid(unix.SYS_SEMCTL, id) })
			return probe(t, dir, nil, "semop", strconv.Itoa(id)), func() (bool, string) {
				v, err := semVal(id)
				return err == nil && v != 0, fmt.Sprintf("semaphore %d is %d (%v)", id, v, err)
			}
		}},
	}
	for i := range cases {
		cases[i].ceiling = tamperOnly
	}
	runCases(t, cases)

	// Objects the sandbox creates keep working.
	for _, op := range []string{"shm-own", "msg-own"} {
		t.Run(op+" inside allowed", func(t *testing.T) {
			sb := newCgroup(t, "case")
			sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
			if r := probe(t, sb.dir, nil, op); r.Setup != "" || r.Errno != 0 || !r.Effect {
				t.Errorf("%s in the sandbox: %v, want success", op, r)
			}
		})
	}
	// Created in the cgroup before its registration (a runtime's init does
	// that): the sandbox's own.
	t.Run("segment created before the registration allowed", func(t *testing.T) {
		sb := newCgroup(t, "case")
		r := probe(t, sb.dir, nil, "shm-create")
		if r.Setup != "" {
			t.Fatalf("create a segment in the cgroup: %v", r)
		}
		id, _ := strconv.Atoi(r.Out)
		t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
		if r := probe(t, sb.dir, nil, "shm-write", r.Out, "inside"); r.Setup != "" || r.Errno != 0 {
			t.Errorf("shmat of the sandbox's own segment: %v, want success", r)
		}
	})
	// A nested registration: the outer sandbox's objects are outside it.
	t.Run("segment of the outer sandbox from a nested one", func(t *testing.T) {
		outer := newCgroup(t, "case")
		outer.register(t, enforcer.Entry{Ceiling: tamperOnly})
		r := probe(t, outer.dir, nil, "shm-create")
		if r.Setup != "" {
			t.Fatalf("create a segment in the outer sandbox: %v", r)
		}
		id, _ := strconv.Atoi(r.Out)
		t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		if r := probe(t, outer.dir, nil, "shm-write", r.Out, "outer"); r.Setup != "" || r.Errno != 0 {
			t.Errorf("shmat of the outer sandbox's own segment: %v, want success", r)
		}
		inner := newSubCgroup(t, outer, "inner")
		inner.register(t, enforcer.Entry{Ceiling: tamperOnly})
		if r := probe(t, inner.dir, nil, "shm-write", r.Out, "inner"); !r.denied() {
			t.Errorf("BYPASS shmat of the outer sandbox's segment from a nested sandbox: %v, want EPERM or EACCES", r)
		}
	})
}

// newSubCgroup creates a cgroup below parent's.
func newSubCgroup(t *testing.T, parent *sandbox, name string) *sandbox {
	t.Helper()
	return cgroupAt(t, parent.cg.Group+"/"+name)
}

// hostKey adds a "user" key to root's user keyring, from outside.
func hostKey(t *testing.T, payload string) int {
	t.Helper()
	desc := fmt.Sprintf("escapetest-host-%d", seq.Add(1))
	serial, err := unix.AddKey("user", desc, []byte(payload), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Fatalf("add_key to the user keyring: %v", err)
	}
	t.Cleanup(func() { _, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, serial, 0, 0, 0) })
	return serial
}

// requestKeyLog is where /sbin/request-key records its runs: the guest's
// stub when there is one, else a stub this test installs for its duration.
func requestKeyLog(t *testing.T) string {
	t.Helper()
	const helper = "/sbin/request-key"
	dir := os.Getenv("ENFORCERD_VMTEST_HELPERS")
	if _, err := os.Stat(helper); err == nil {
		if dir == "" {
			t.Fatalf("%s exists but ENFORCERD_VMTEST_HELPERS is not set: cannot see whether it ran", helper)
		}
		return filepath.Join(dir, "request-key.log")
	}
	if dir == "" {
		dir = shared.tmp
	}
	log := filepath.Join(dir, "request-key.log")
	script := fmt.Sprintf("#!/bin/sh\necho \"request-key $*\" >>%s\nexit 1\n", log)
	if err := os.MkdirAll(filepath.Dir(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helper, []byte(script), 0o755); err != nil {
		t.Fatalf("install a stub %s: %v", helper, err)
	}
	t.Cleanup(func() { os.Remove(helper) })
	return log
}

func lineCount(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}

// keyReadRefused: keyctl(KEYCTL_READ) reports any refused lookup of the key
// as ENOKEY (keyctl_read_key). When the key exists (read from here, outside)
// that ENOKEY is the refusal: reported as EACCES; the record check of the
// case shows which hook refused it.
func keyReadRefused(r result, serial int) result {
	if r.Errno != unix.ENOKEY {
		return r
	}
	if _, err := keyRead(serial); err == nil {
		r.Errno = unix.EACCES
		r.Out = "ENOKEY from keyctl_read_key for an existing key: the lookup was refused"
	}
	return r
}

func TestKeys(t *testing.T) {
	kernel(t)
	log := requestKeyLog(t)
	cases := []tcase{
		{name: "keyctl read of a host key in root's user keyring", hook: enforcer.HookKeyPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			serial := hostKey(t, "host-secret")
			r := keyReadRefused(probe(t, dir, nil, "key-read", strconv.Itoa(serial)), serial)
			return r, func() (bool, string) {
				return r.Out == "host-secret", fmt.Sprintf("probe read the host key's payload (%q)", r.Out)
			}
		}},
		{name: "keyctl update of a host key in root's user keyring", hook: enforcer.HookKeyPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			serial := hostKey(t, "host-secret")
			return probe(t, dir, nil, "key-update", strconv.Itoa(serial), "pwned"), func() (bool, string) {
				p, err := keyRead(serial)
				return err == nil && p != "host-secret", fmt.Sprintf("host key payload is %q (%v)", p, err)
			}
		}},
		{name: "request_key upcall to /sbin/request-key", hook: enforcer.HookKeyAlloc, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			before := lineCount(log)
			r := probe(t, dir, nil, "request-key", fmt.Sprintf("escapetest-upcall-%d", seq.Add(1)))
			return r, func() (bool, string) {
				after := lineCount(log)
				return after > before, fmt.Sprintf("/sbin/request-key ran (%s: %d lines, %d before)", log, after, before)
			}
		}},
		// Every user keyring is outside, whoever created it first.
		{name: "keyctl read of root's user keyring", hook: enforcer.HookKeyPermission, attempt: func(t *testing.T, dir *os.File) (result, effect) {
			hostKey(t, "host-secret")
			return keyReadRefused(probe(t, dir, nil, "key-read", strconv.Itoa(unix.KEY_SPEC_USER_KEYRING)), unix.KEY_SPEC_USER_KEYRING), nil
		}},
	}
	for i := range cases {
		cases[i].ceiling = tamperOnly
	}
	runCases(t, cases)

	t.Run("add_key into a keyring the sandbox created allowed", func(t *testing.T) {
		sb := newCgroup(t, "case")
		sb.register(t, enforcer.Entry{Ceiling: tamperOnly})
		if r := probe(t, sb.dir, nil, "key-own"); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("add_key and read in the sandbox's own session keyring: %v, want success; records %v", r, records(t, sb.cg.ID))
		}
	})
}
