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

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
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
func shmWritten(id int) kerneltest.Effect {
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

func shmGone(id int) kerneltest.Effect {
	return func() (bool, string) {
		_, err := unix.SysvShmCtl(id, unix.IPC_STAT, &unix.SysvShmDesc{})
		return err != nil, fmt.Sprintf("segment %d removed (IPC_STAT: %v)", id, err)
	}
}

func TestIPC(t *testing.T) {
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "shmat read-write of an outside segment, write", Want: kerneltest.Hooks(denial.HookIPCPermission).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			id := outsideShm(t)
			return sb.Probe(t, "shm-write", strconv.Itoa(id), "pwned"), shmWritten(id)
		}},
		{Name: "shmctl IPC_RMID of an outside segment", Want: kerneltest.Hooks(denial.HookShmShmctl).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			id := outsideShm(t)
			return sb.Probe(t, "shm-rmid", strconv.Itoa(id)), shmGone(id)
		}},
		{Name: "shmget of an outside segment's key", Want: kerneltest.Hooks(denial.HookIPCPermission).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			key := 0x6e660000 + int(kt.Seq())
			id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
			if err != nil {
				t.Fatalf("shmget: %v", err)
			}
			t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
			return sb.Probe(t, "shm-get", strconv.Itoa(key)), nil
		}},
		{Name: "msgsnd to an outside queue", Want: kerneltest.Hooks(denial.HookIPCPermission).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			id, err := msgGet()
			if err != nil {
				t.Fatalf("msgget: %v", err)
			}
			t.Cleanup(func() { ipcRmid(unix.SYS_MSGCTL, id) })
			return sb.Probe(t, "msgsnd", strconv.Itoa(id), "pwned"), func() (bool, string) {
				m, err := msgRcv(id)
				return err == nil, fmt.Sprintf("queue %d got a message (%q, %v)", id, m, err)
			}
		}},
		{Name: "semop on an outside semaphore set", Want: kerneltest.Hooks(denial.HookIPCPermission).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			id, err := semGet()
			if err != nil {
				t.Fatalf("semget: %v", err)
			}
			t.Cleanup(func() { ipcRmid(unix.SYS_SEMCTL, id) })
			return sb.Probe(t, "semop", strconv.Itoa(id)), func() (bool, string) {
				v, err := semVal(id)
				return err == nil && v != 0, fmt.Sprintf("semaphore %d is %d (%v)", id, v, err)
			}
		}},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)

	// Objects the sandbox creates keep working.
	for _, op := range []string{"shm-own", "msg-own"} {
		t.Run(op+" inside allowed", func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: tamperOnly})
			if r := sb.Probe(t, op); r.Setup != "" || r.Errno != 0 || !r.Effect {
				t.Errorf("%s in the sandbox: %v, want success", op, r)
			}
		})
	}
	// Created in the cgroup before its registration (a runtime's init does
	// that): the sandbox's own.
	t.Run("segment created before the registration allowed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		r := sb.Probe(t, "shm-create")
		if r.Setup != "" {
			t.Fatalf("create a segment in the cgroup: %v", r)
		}
		id, _ := strconv.Atoi(r.Out)
		t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "shm-write", r.Out, "inside"); r.Setup != "" || r.Errno != 0 {
			t.Errorf("shmat of the sandbox's own segment: %v, want success", r)
		}
	})
	// A nested registration: the outer sandbox's objects are outside it.
	t.Run("segment of the outer sandbox from a nested one", func(t *testing.T) {
		outer := kt.Sandbox(t, "case")
		outer.Register(t, entry.Entry{Ceiling: tamperOnly})
		r := outer.Probe(t, "shm-create")
		if r.Setup != "" {
			t.Fatalf("create a segment in the outer sandbox: %v", r)
		}
		id, _ := strconv.Atoi(r.Out)
		t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		if r := outer.Probe(t, "shm-write", r.Out, "outer"); r.Setup != "" || r.Errno != 0 {
			t.Errorf("shmat of the outer sandbox's own segment: %v, want success", r)
		}
		inner := newSubCgroup(t, outer, "inner")
		inner.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := inner.Probe(t, "shm-write", r.Out, "inner"); !r.Denied() {
			t.Errorf("BYPASS shmat of the outer sandbox's segment from a nested sandbox: %v, want EPERM or EACCES", r)
		}
	})
}

// newSubCgroup creates a cgroup below parent's.
func newSubCgroup(t *testing.T, parent *kerneltest.Sandbox, name string) *kerneltest.Sandbox {
	t.Helper()
	return kt.SandboxAt(t, parent.Cg.Group+"/"+name)
}

// hostKey adds a "user" key to root's user keyring, from outside.
func hostKey(t *testing.T, payload string) int {
	t.Helper()
	desc := fmt.Sprintf("escapetest-host-%d", kt.Seq())
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
		dir = kt.TmpDir()
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
func keyReadRefused(r probe.Result, serial int) probe.Result {
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
	kt.Enforcer(t)
	log := requestKeyLog(t)
	cases := []kerneltest.Case{
		{Name: "keyctl read of a host key in root's user keyring", Want: kerneltest.Hooks(denial.HookKeyPermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			serial := hostKey(t, "host-secret")
			r := keyReadRefused(sb.Probe(t, "key-read", strconv.Itoa(serial)), serial)
			return r, func() (bool, string) {
				return r.Out == "host-secret", fmt.Sprintf("probe read the host key's payload (%q)", r.Out)
			}
		}},
		{Name: "keyctl update of a host key in root's user keyring", Want: kerneltest.Hooks(denial.HookKeyPermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			serial := hostKey(t, "host-secret")
			return sb.Probe(t, "key-update", strconv.Itoa(serial), "pwned"), func() (bool, string) {
				p, err := keyRead(serial)
				return err == nil && p != "host-secret", fmt.Sprintf("host key payload is %q (%v)", p, err)
			}
		}},
		{Name: "request_key upcall to /sbin/request-key", Want: kerneltest.Hooks(denial.HookKeyAlloc), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			before := lineCount(log)
			r := sb.Probe(t, "request-key", fmt.Sprintf("escapetest-upcall-%d", kt.Seq()))
			return r, func() (bool, string) {
				after := lineCount(log)
				return after > before, fmt.Sprintf("/sbin/request-key ran (%s: %d lines, %d before)", log, after, before)
			}
		}},
		// Every user keyring is outside, whoever created it first.
		{Name: "keyctl read of root's user keyring", Want: kerneltest.Hooks(denial.HookKeyPermission), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			hostKey(t, "host-secret")
			return keyReadRefused(sb.Probe(t, "key-read", strconv.Itoa(unix.KEY_SPEC_USER_KEYRING)), unix.KEY_SPEC_USER_KEYRING), nil
		}},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)

	t.Run("add_key into a keyring the sandbox created allowed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "key-own"); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("add_key and read in the sandbox's own session keyring: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
		}
	})
}
