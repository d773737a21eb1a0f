package escapetest

// POSIX semaphores and shared memory (bpf/shm.h): the files a sandbox
// creates in its shm directory keep working under every ceiling (write=
// false and a read_only shell's exec'd processes included); files made
// outside (by this test process, outside every sandbox) are not usable
// inside, and nothing else on a tmpfs becomes writable.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// shmFS is one fresh shm directory: a tmpfs mounted at root/dev/shm (as a
// container's), unmounted at cleanup.
type shmFS struct {
	root, dir string
}

// newShmFS mounts a fresh tmpfs at <tmp>/shmroot-N/dev/shm.
func newShmFS(t *testing.T) shmFS {
	t.Helper()
	root := kt.TmpPath("shmroot")
	dir := filepath.Join(root, entry.ShmPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=1777,size=1m"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return shmFS{root: root, dir: dir}
}

// id is the directory's identity as the registration names it
// (entry.ShmDirOf through the mount table).
func (s shmFS) id(t *testing.T) entry.FileID {
	t.Helper()
	id, err := entry.ShmDirOf(s.root, "/proc/self/mountinfo")
	if err != nil {
		t.Fatalf("ShmDirOf: %v", err)
	}
	return id
}

// hostFile writes a file from outside (mode 0666: the file mode is no
// obstacle) and returns its path.
func hostFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("%s-%d", name, kt.Seq()))
	if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	return p
}

// contentIsNot: the effect "the file's bytes are no longer want".
func contentIsNot(p, want string) kerneltest.Effect {
	return func() (bool, string) {
		b, err := os.ReadFile(p)
		return err != nil || string(b) != want, fmt.Sprintf("%s holds %q, %q before (%v)", p, b, want, err)
	}
}

// exists: the effect "p exists".
func exists(p string) kerneltest.Effect {
	return func() (bool, string) {
		_, err := os.Lstat(p)
		return err == nil, fmt.Sprintf("%s exists (%v)", p, err)
	}
}

func TestPOSIXShmAndSemaphores(t *testing.T) {
	kt.Enforcer(t)
	var fs shmFS // the current run's: Prep mounts a fresh one per run
	prep := func(t *testing.T) { fs = newShmFS(t) }
	shmID := func(t *testing.T) entry.FileID { return fs.id(t) }
	outside := kerneltest.Hooks(denial.HookFileOpen).Rule(denial.RuleIPCOutside)
	write := func(hooks ...denial.Hook) kerneltest.Want { return kerneltest.Hooks(hooks...).Rule(denial.RuleWrite) }
	cases := []kerneltest.Case{
		{Name: "open O_RDWR and write of a file made outside in the shm dir", Want: outside, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := hostFile(t, fs.dir, "host", "host")
			return sb.Probe(t, "shm-rw", p), contentIsNot(p, "host")
		}},
		{Name: "io_uring openat O_RDWR of a file made outside in the shm dir", Want: outside, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := hostFile(t, fs.dir, "host", "host")
			return sb.Probe(t, "shm-uring-rw", p), contentIsNot(p, "host")
		}},
		{Name: "read-only open of a file made outside in the shm dir", Want: outside, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := hostFile(t, fs.dir, "host", "host-secret")
			r := sb.Probe(t, "read-file", p)
			return r, func() (bool, string) { return r.Out == "host-secret", fmt.Sprintf("probe read %q", r.Out) }
		}},
		{Name: "unlink of a file made outside in the shm dir", Want: kerneltest.Hooks(denial.HookInodeUnlink).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := hostFile(t, fs.dir, "host", "host")
			return sb.Probe(t, "unlink", p), func() (bool, string) {
				_, err := os.Lstat(p)
				return err != nil, fmt.Sprintf("%s gone (%v)", p, err)
			}
		}},
		{Name: "chmod of a file made outside in the shm dir", Want: kerneltest.Hooks(denial.HookInodeSetattr).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := hostFile(t, fs.dir, "host", "host")
			return sb.Probe(t, "chmod", p, "600"), func() (bool, string) {
				fi, err := os.Stat(p)
				return err == nil && fi.Mode().Perm() != 0o666, fmt.Sprintf("mode %v (%v)", fi.Mode().Perm(), err)
			}
		}},
		{Name: "mmap MAP_SHARED of a file made outside, descriptor passed in", Want: kerneltest.Hooks(denial.HookMmapFile).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := hostFile(t, fs.dir, "host", "hostx")
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			return sb.ProbeFiles(t, []*os.File{f}, "shm-map-fd"), contentIsNot(p, "hostx")
		}},
		{Name: "a host file hard-linked into the shm dir stays outside", Want: outside, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			sub := filepath.Join(fs.dir, fmt.Sprintf("hostdir-%d", kt.Seq()))
			if err := os.Mkdir(sub, 0o777); err != nil {
				t.Fatal(err)
			}
			src := hostFile(t, sub, "host", "host")
			p := filepath.Join(fs.dir, fmt.Sprintf("linked-%d", kt.Seq()))
			if err := os.Link(src, p); err != nil {
				t.Fatal(err)
			}
			return sb.Probe(t, "shm-rw", p), contentIsNot(p, "host")
		}},
		{Name: "link of a file made outside to a new name in the shm dir", Want: kerneltest.Hooks(denial.HookInodeLink).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			src := hostFile(t, fs.dir, "host", "host")
			p := filepath.Join(fs.dir, fmt.Sprintf("sem.taken-%d", kt.Seq()))
			return sb.Probe(t, "shm-link", src, p), exists(p)
		}},
		{Name: "rename of a file made outside in the shm dir", Want: kerneltest.Hooks(denial.HookInodeRename).Rule(denial.RuleIPCOutside), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			src := hostFile(t, fs.dir, "host", "host")
			p := filepath.Join(fs.dir, fmt.Sprintf("renamed-%d", kt.Seq()))
			return sb.Probe(t, "rename", src, p), exists(p)
		}},
	}
	for i := range cases {
		cases[i].Ceiling, cases[i].Prep, cases[i].ShmDir = tamperOnly, prep, shmID
	}
	// Under write=false: an own object stays inside the directory itself,
	// and nothing else on a tmpfs becomes writable.
	noWrite := []kerneltest.Case{
		{Name: "link of an own object out of the shm dir (into a subdirectory)", Want: write(denial.HookInodeLink), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			sub := filepath.Join(fs.dir, fmt.Sprintf("sub-%d", kt.Seq()))
			if err := os.Mkdir(sub, 0o777); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(sub, "moved")
			return sb.Probe(t, "shm-own-move", fs.dir, p, "link"), exists(p)
		}},
		{Name: "rename of an own object out of the shm dir (into a subdirectory)", Want: write(denial.HookInodeRename), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			sub := filepath.Join(fs.dir, fmt.Sprintf("sub-%d", kt.Seq()))
			if err := os.Mkdir(sub, 0o777); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(sub, "moved")
			return sb.Probe(t, "shm-own-move", fs.dir, p, "rename"), exists(p)
		}},
		{Name: "mkdir in the shm dir", Want: write(denial.HookInodeMkdir), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := filepath.Join(fs.dir, fmt.Sprintf("dir-%d", kt.Seq()))
			return sb.Probe(t, "shm-mkdir", p), exists(p)
		}},
		{Name: "create in a subdirectory of the shm dir", Want: write(denial.HookInodeCreate), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			sub := filepath.Join(fs.dir, fmt.Sprintf("sub-%d", kt.Seq()))
			if err := os.Mkdir(sub, 0o777); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(sub, "f")
			return sb.Probe(t, "create", p), exists(p)
		}},
		{Name: "create of a set-user-ID file in the shm dir (a program planted for the host)", Want: write(denial.HookInodeCreate), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := filepath.Join(fs.dir, fmt.Sprintf("suid-%d", kt.Seq()))
			return sb.Probe(t, "shm-create-mode", p, "4755"), exists(p)
		}},
		{Name: "create of a set-group-ID file in the shm dir", Want: write(denial.HookInodeCreate), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			p := filepath.Join(fs.dir, fmt.Sprintf("sgid-%d", kt.Seq()))
			return sb.Probe(t, "shm-create-mode", p, "2755"), exists(p)
		}},
		{Name: "create on another tmpfs (a /tmp)", Want: write(denial.HookInodeCreate), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			other := newShmFS(t) // a tmpfs, not the registered one
			p := filepath.Join(other.dir, "f")
			return sb.Probe(t, "create", p), exists(p)
		}},
	}
	for i := range noWrite {
		noWrite[i].Ceiling, noWrite[i].Prep, noWrite[i].ShmDir = fullNoWrite, prep, shmID
	}
	kt.Run(t, append(cases, noWrite...))

	// The sandbox's own semaphores and shared memory work without a
	// ceiling and under every one: the sem_open and shm_open sequences.
	for _, c := range []struct {
		name string
		reg  bool
		ceil policy.KernelCeiling
	}{
		{"no ceiling", false, policy.KernelCeiling{}},
		{"tamper only", true, tamperOnly},
		{"write=false", true, fullNoWrite},
		{"shell=read_only", true, shellReadOnly},
	} {
		for _, op := range []string{"sem-open", "shm-open"} {
			t.Run(op+" of own objects under "+c.name+" allowed", func(t *testing.T) {
				fs := newShmFS(t)
				sb := kt.Sandbox(t, "case")
				if c.reg {
					sb.Register(t, entry.Entry{Ceiling: c.ceil, ShmDir: fs.id(t)})
				}
				r := sb.Probe(t, op, fs.dir, fmt.Sprintf("own-%d", kt.Seq()))
				if r.Setup != "" || r.Errno != 0 || !r.Effect {
					t.Errorf("%s in the sandbox's shm dir: %v, want success; records %v", op, r, kt.Records(t, sb.Cg.ID))
				}
				if ents, err := os.ReadDir(fs.dir); err != nil || len(ents) != 0 {
					t.Errorf("shm dir after %s: %v (%v), want empty (every name unlinked)", op, ents, err)
				}
			})
		}
	}
	// Without a registered shm dir (it could not be named): its files are
	// writes like any other (fail closed).
	t.Run("sem-open without a registered shm dir under write=false denied", func(t *testing.T) {
		fs := newShmFS(t)
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: fullNoWrite})
		r := sb.Probe(t, "sem-open", fs.dir, fmt.Sprintf("own-%d", kt.Seq()))
		if r.Setup != "" || !r.Denied() {
			t.Errorf("sem-open under write=false without a shm dir: %v, want EPERM", r)
		}
		if ents, _ := os.ReadDir(fs.dir); len(ents) != 0 {
			t.Errorf("shm dir holds %v, want empty", ents)
		}
	})
}
