package escapetest

// POSIX message queues created outside (bpf/mqueue.h), for every enforced
// process whatever its ceiling; leases and exclusive locks on files the
// sandbox may not write (bpf/locks.h), under write=false; the task name
// (bpf/comm.h), under every ceiling. The outside objects are made by this
// test process, outside every sandbox.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// outsideQueue creates a queue from outside holding the given messages;
// it is unlinked and closed at cleanup. It returns the queue's name.
func outsideQueue(t *testing.T, msgs ...string) string {
	t.Helper()
	name := fmt.Sprintf("/escapetest-%d", kt.Seq())
	fd, err := mqCreate(name)
	if err != nil {
		t.Fatalf("mq_open O_CREAT %s: %v", name, err)
	}
	t.Cleanup(func() { unix.Close(fd); _ = mqUnlink(name) })
	for _, m := range msgs {
		if err := mqSend(fd, m); err != nil {
			t.Fatalf("mq_timedsend: %v", err)
		}
	}
	return name
}

// queueCount is the queue's message count, read from outside (-1: the
// queue cannot be opened).
func queueCount(name string) (int, error) {
	fd, err := mqOpen(name, unix.O_RDONLY, nil)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	a, err := mqGetattr(fd)
	return int(a.Curmsgs), err
}

// queueCountIsNot: the effect "the count changed from want".
func queueCountIsNot(name string, want int) kerneltest.Effect {
	return func() (bool, string) {
		n, err := queueCount(name)
		return n != want, fmt.Sprintf("queue %s holds %d messages, %d before (%v)", name, n, want, err)
	}
}

// mqueueMount mounts an mqueue filesystem (the IPC namespace's queues) in
// the test's directory, from outside; unmounted at cleanup.
func mqueueMount(t *testing.T) string {
	t.Helper()
	dir := kt.TmpPath(fmt.Sprintf("mqueue-%d", kt.Seq()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("mqueue", dir, "mqueue", 0, ""); err != nil {
		t.Fatalf("mount mqueue on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func TestPOSIXMessageQueues(t *testing.T) {
	kt.Enforcer(t)
	outsideRule := kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleIPCOutside)
	cases := []kerneltest.Case{
		{Name: "mq_open write-only and send to an outside queue", Want: outsideRule, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t)
			return sb.Probe(t, "mq-send", q, "pwned"), queueCountIsNot(q, 0)
		}},
		{Name: "mq_open read-only and receive from an outside queue", Want: outsideRule, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t, "host-secret")
			return sb.Probe(t, "mq-receive", q), queueCountIsNot(q, 1)
		}},
		{Name: "mq_unlink of an outside queue", Want: kerneltest.Hooks(denial.HookInodeUnlink).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t, "host")
			return sb.Probe(t, "mq-unlink", q), queueCountIsNot(q, 1)
		}},
		{Name: "open of an outside queue through an mqueue mount", Want: outsideRule, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t, "host")
			r := sb.Probe(t, "read-file", filepath.Join(mqueueMount(t), q))
			return r, func() (bool, string) {
				return strings.Contains(r.Out, "QSIZE"), fmt.Sprintf("probe read the queue's status (%q)", r.Out)
			}
		}},
		{Name: "chmod of an outside queue through an mqueue mount", Want: kerneltest.Hooks(denial.HookInodeSetattr).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			q := outsideQueue(t)
			path := filepath.Join(mqueueMount(t), q)
			return sb.Probe(t, "chmod", path, "666"), func() (bool, string) {
				fi, err := os.Stat(path)
				return err == nil && fi.Mode().Perm() != 0o600, fmt.Sprintf("queue mode %v (%v)", fi.Mode().Perm(), err)
			}
		}},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)

	// A queue the sandbox creates keeps working. (Under write=false a
	// queue's name is a new name in a filesystem: the write ceiling
	// refuses creating one.)
	for _, c := range []struct {
		name string
		en   entry.Entry
	}{{"tamper only", entry.Entry{Ceiling: tamperOnly}}, {"network=false", entry.Entry{Ceiling: netOff}}} {
		t.Run("own queue under "+c.name+" allowed", func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sb.Register(t, c.en)
			name := fmt.Sprintf("/escapetest-own-%d", kt.Seq())
			t.Cleanup(func() { _ = mqUnlink(name) })
			if r := sb.Probe(t, "mq-own", name); r.Setup != "" || r.Errno != 0 || !r.Effect {
				t.Errorf("create, open, send, receive, unlink of the sandbox's own queue: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
			}
		})
	}
}

// lockFile is a file made outside, owned by root, closed.
func lockFile(t *testing.T) string {
	t.Helper()
	p := kt.TmpPath(fmt.Sprintf("lock-%d", kt.Seq()))
	if err := os.WriteFile(p, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLeasesAndLocksUnderWriteFalse(t *testing.T) {
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "F_SETLEASE read lease on a read-only descriptor", Want: kerneltest.Hooks(denial.HookFileFcntl).Rule(denial.RuleWrite), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := lockFile(t)
			r := sb.Probe(t, "lease", p)
			return r, func() (bool, string) {
				// The holder is gone: an open for write from outside
				// must not wait for a lease break now either.
				fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
				if err == nil {
					unix.Close(fd)
				}
				return r.Effect || err != nil, fmt.Sprintf("the probe held a read lease (F_GETLEASE), or an outside open for write is blocked (%v)", err)
			}
		}},
		{Name: "flock LOCK_EX on a read-only descriptor", Want: kerneltest.Hooks(denial.HookFileLock).Rule(denial.RuleWrite), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			return sb.Probe(t, "flock", lockFile(t), "ex"), nil
		}},
		{Name: "OFD write lock on a descriptor opened for write outside", Want: kerneltest.Hooks(denial.HookFileLock).Rule(denial.RuleWrite), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := lockFile(t)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			return sb.ProbeFiles(t, []*os.File{f}, "ofd-wrlck", p), nil
		}},
	}
	for i := range cases {
		cases[i].Ceiling = fullNoWrite
	}
	kt.Run(t, cases)

	// Shared locks stay: read-only work (SQLite reading a database) takes
	// them.
	t.Run("flock LOCK_SH under write=false allowed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: fullNoWrite})
		if r := sb.Probe(t, "flock", lockFile(t), "sh"); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("shared flock of a readable file under write=false: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
		}
	})
	// write=true: every lock stays.
	t.Run("flock LOCK_EX with write allowed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "flock", lockFile(t), "ex"); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("exclusive flock with write allowed: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
		}
	})
}

func TestTaskName(t *testing.T) {
	kt.Enforcer(t)
	cases := []kerneltest.Case{
		{Name: "prctl PR_SET_NAME", Want: kerneltest.Hooks(denial.HookTaskPrctl).Rule(denial.RuleTaskName), Attempt: kerneltest.Op("set-name", "prctl", "pwned-prctl")},
		{Name: "write /proc/self/comm", Want: kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleProcPIDFile), Attempt: kerneltest.Op("set-name", "proc", "pwned-proc")},
		{Name: "write /proc/self/task/TID/comm", Want: kerneltest.Hooks(denial.HookFilePermission).Rule(denial.RuleProcPIDFile), Attempt: kerneltest.Op("set-name", "task", "pwned-task")},
	}
	for i := range cases {
		cases[i].Ceiling = tamperOnly
	}
	kt.Run(t, cases)

	t.Run("other prctl options act", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: tamperOnly})
		if r := sb.Probe(t, "prctl-other"); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("PR_SET_PDEATHSIG read back in the sandbox: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
		}
	})
}

// outsideFIFO makes a FIFO from outside in dir and opens its read end
// (non-blocking) from outside; both go at cleanup.
func outsideFIFO(t *testing.T, dir string) (path string, reader int) {
	t.Helper()
	path = filepath.Join(dir, fmt.Sprintf("fifo-%d", kt.Seq()))
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open the read end of %s: %v", path, err)
	}
	t.Cleanup(func() { unix.Close(fd); os.Remove(path) })
	return path, fd
}

// outsideFIFOWithoutRecord is outsideFIFO on ext4 for a FIFO without a
// creator's record, as one a host daemon made before enforcerd loaded:
// made, written back (sync) and evicted from the inode cache
// (vm.drop_caches=2: the record lived with the in-memory inode) before
// its reader opens it.
func outsideFIFOWithoutRecord(t *testing.T) (path string, reader int) {
	t.Helper()
	path = filepath.Join(extDir(t), fmt.Sprintf("fifo-%d", kt.Seq()))
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
	t.Cleanup(func() { os.Remove(path) })
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
		t.Fatalf("evict the FIFO's inode: %v", err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open the read end of %s: %v", path, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return path, fd
}

// fifoReceived: the outside reader got bytes.
func fifoReceived(reader int) kerneltest.Effect {
	return func() (bool, string) {
		b := make([]byte, 64)
		n, err := unix.Read(reader, b)
		if n < 0 {
			n = 0
		}
		return n > 0, fmt.Sprintf("the reader outside received %q (%v)", b[:n], err)
	}
}

// fifoLinked: the sandbox links a FIFO made outside on ext4 (without a
// record: a record is never replaced, so only such a FIFO could be taken
// for the sandbox's) into a fresh directory there and writes to it (probe
// fifo-link-write, how: failed or plain); the directory and its names go
// at cleanup, so later tests have the disk's space.
func fifoLinked(how string) kerneltest.Attempt {
	return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		p, rd := outsideFIFOWithoutRecord(t)
		dir := filepath.Join(extDir(t), fmt.Sprintf("fifo-link-%d", kt.Seq()))
		t.Cleanup(func() { os.RemoveAll(dir) })
		return sb.Probe(t, "fifo-link-write", dir, p, "token", how), fifoReceived(rd)
	}
}

func TestFIFOsMadeOutsideUnderNetworkFalse(t *testing.T) {
	kt.Enforcer(t)
	want := kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleNetwork)
	cases := []kerneltest.Case{
		{Name: "write to a host process's FIFO", Want: want, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p, rd := outsideFIFO(t, kt.TmpDir())
			return sb.Probe(t, "fifo-write", p, "token"), fifoReceived(rd)
		}},
		{Name: "write to a host process's FIFO on ext4", Want: want, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p, rd := outsideFIFO(t, extDir(t))
			return sb.Probe(t, "fifo-write", p, "token"), fifoReceived(rd)
		}},
		// A host FIFO linked under a name of the sandbox's is the same
		// inode: still outside. "failed": the name is one whose mkfifo
		// the filesystem failed (ENOSPC) after inode_mknod noted it, so
		// link instantiates the very dentry the note names.
		{Name: "write to a host process's FIFO linked onto a failed mkfifo's name on ext4", Want: want, Attempt: fifoLinked("failed")},
		{Name: "write to a host process's FIFO linked under a new name on ext4", Want: want, Attempt: fifoLinked("plain")},
		{Name: "open of a host process's FIFO for read", Want: want, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p, _ := outsideFIFO(t, kt.TmpDir())
			return sb.Probe(t, "fifo-read", p), nil
		}},
	}
	for i := range cases {
		cases[i].Ceiling = netOff
	}
	kt.Run(t, cases)

	// The sandbox's own FIFOs (tmpfs or the root filesystem, and ext4) and
	// its inherited pipes keep working.
	for _, c := range []struct {
		fs  string
		dir func(*testing.T) string
	}{{"the test directory", func(*testing.T) string { return kt.TmpDir() }}, {"ext4", extDir}} {
		dir := c.dir
		t.Run("own FIFO on "+c.fs+" allowed", func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: netOff})
			p := filepath.Join(dir(t), fmt.Sprintf("own-fifo-%d", kt.Seq()))
			t.Cleanup(func() { os.Remove(p) })
			if r := sb.Probe(t, "fifo-own", p); r.Setup != "" || r.Errno != 0 || !r.Effect {
				t.Errorf("mkfifo, open, write, read of the sandbox's own FIFO %s: %v, want success; records %v", p, r, kt.Records(t, sb.Cg.ID))
			}
		})
	}
	t.Run("inherited pipe reopened through /proc/self/fd allowed", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: netOff})
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		defer wr.Close()
		if r := sb.ProbeFiles(t, []*os.File{rd}, "reopen-fd"); r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("reopen of an inherited pipe: %v, want success; records %v", r, kt.Records(t, sb.Cg.ID))
		}
	})
}
