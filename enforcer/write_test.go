package enforcer_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

// The xattr namespace the fixture uses. user.* (tmpfs supports it since 6.6)
// needs no capability, so its denial must come from the write ceiling's
// inode_setxattr/inode_removexattr. Where tmpfs lacks it (6.1), security.*
// is used; commoncap asks for CAP_SYS_ADMIN first, which every enforced
// process is refused (tamper.bpf.c capable), so the denial arrives from the
// capable hook instead; both are a denial with no side effect.
var xattrNS = sync.OnceValue(func() string {
	f, err := os.CreateTemp("", "enforcerd-xattr-")
	if err != nil {
		return "security."
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if unix.Setxattr(f.Name(), "user.probe", []byte("1"), 0) == nil {
		return "user."
	}
	return "security."
})

func fixtureXattr() string { return xattrNS() + "enforcerd" }

// xattrHooks: the hook expected to deny an xattr change, and the
// alternative accepted where security.* had to be used.
func xattrHooks(h denial.Hook) (denial.Hook, denial.Hook) {
	if xattrNS() == "user." {
		return h, 0
	}
	return h, denial.HookCapable
}

// newFixture makes a directory outside any sandbox: f ("hello", 0644, with
// an xattr), g ("other"), and an empty directory d.
func newFixture(t *testing.T) string {
	t.Helper()
	fx, err := os.MkdirTemp("", "enforcerd-fx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(fx) })
	must(t, os.WriteFile(filepath.Join(fx, "f"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(fx, "g"), []byte("other"), 0o644))
	must(t, os.Mkdir(filepath.Join(fx, "d"), 0o755))
	must(t, unix.Setxattr(filepath.Join(fx, "f"), fixtureXattr(), []byte("1"), 0))
	return fx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot renders everything a write could change below fx: names, file
// types, modes, owners, sizes, mtimes and ctimes, link counts, contents,
// symlink targets and xattrs (not atimes: reading changes them).
func snapshot(t *testing.T, fx string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(fx, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(fx, p)
		fmt.Fprintf(&b, "%s mode=%o uid=%d gid=%d size=%d mtime=%d.%d ctime=%d.%d nlink=%d",
			rel, st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, st.Nlink)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			c, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " content=%q", c)
		case unix.S_IFLNK:
			l, _ := os.Readlink(p)
			fmt.Fprintf(&b, " target=%q", l)
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil {
			names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
			sort.Strings(names)
			for _, name := range names {
				if name == "" {
					continue
				}
				v := make([]byte, 256)
				m, _ := unix.Lgetxattr(p, name, v)
				fmt.Fprintf(&b, " xattr[%s]=%q", name, v[:max(m, 0)])
			}
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", fx, err)
	}
	return b.String()
}

// fileChange observes a fixture: the side effect happened iff anything in
// the snapshot changed.
func fileChange(t *testing.T, fx string) func() (bool, string) {
	before := snapshot(t, fx)
	return func() (bool, string) {
		after := snapshot(t, fx)
		if after == before {
			return false, "fixture unchanged"
		}
		return true, "fixture changed:\nbefore:\n" + before + "after:\n" + after
	}
}

// hookWant is the record a case expects from hook (0: none is checked).
func hookWant(hook denial.Hook) kerneltest.Want {
	if hook == 0 {
		return kerneltest.Want{}
	}
	return kerneltest.Hooks(hook)
}

// pathCase: an operation on paths in a fresh fixture. Arguments are names
// in the fixture, except those starting with "=" (passed as they are).
func pathCase(name, op string, hook denial.Hook, args ...string) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: hookWant(hook), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		fx := newFixture(t)
		abs := make([]string, len(args))
		for i, a := range args {
			if v, ok := strings.CutPrefix(a, "="); ok {
				abs[i] = v
				continue
			}
			abs[i] = filepath.Join(fx, a)
		}
		eff := fileChange(t, fx)
		return sb.Run(t, probe.Cmd{Op: op, Args: abs}), eff
	}}
}

// withWantAt sets c.WantAt.
func withWantAt(c kerneltest.Case, w func() kerneltest.Want) kerneltest.Case {
	c.WantAt = w
	return c
}

// ftruncateWant: ftruncate reaches file_truncate on Linux 6.2 and later,
// path_truncate before (both before inode_setattr).
func ftruncateWant() kerneltest.Want {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		var major, minor int
		if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err == nil &&
			(major < 6 || major == 6 && minor < 2) {
			return kerneltest.Hooks(denial.HookPathTruncate)
		}
	}
	return kerneltest.Hooks(denial.HookFileTruncate)
}

// withAltHook accepts a second hook's record for c.
func withAltHook(c kerneltest.Case, alt denial.Hook) kerneltest.Case {
	c.Want.Hooks = append(append([]denial.Hook(nil), c.Want.Hooks...), alt)
	return c
}

// xattrCase: an xattr change of f in the namespace xattrNS picks.
func xattrCase(name, op string, hook denial.Hook, attr string) kerneltest.Case {
	return kerneltest.Case{Name: name,
		// Resolved when the case runs, not at package init (probe
		// children initialise the package too, inside the sandbox).
		WantAt: func() kerneltest.Want {
			h, alt := xattrHooks(hook)
			return withAltHook(kerneltest.Case{Want: kerneltest.Hooks(h)}, alt).Want
		},
		Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			fx := newFixture(t)
			eff := fileChange(t, fx)
			return sb.Run(t, probe.Cmd{Op: op, Args: []string{filepath.Join(fx, "f"), xattrNS() + attr}}), eff
		}}
}

// fdCase: an operation on a descriptor the test opened before the ceiling
// applied (inherited as fd 3).
func fdCase(name, op string, hook denial.Hook, file string, flags int, args ...string) kerneltest.Case {
	return kerneltest.Case{Name: name, Want: hookWant(hook), Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		fx := newFixture(t)
		fd, err := unix.Open(filepath.Join(fx, file), flags|unix.O_CLOEXEC, 0)
		must(t, err)
		eff := fileChange(t, fx)
		return sb.Run(t, probe.Cmd{Op: op, Args: args, Files: []*os.File{os.NewFile(uintptr(fd), file)}}), eff
	}}
}

// writeCases: threat model W1–W5 under write=false.
var writeCases = []kerneltest.Case{
	// W1: path operations beyond open.
	pathCase("W1/create", "create", denial.HookInodeCreate, "new"),
	pathCase("W1/mkdir", "mkdir", denial.HookInodeMkdir, "newdir"),
	pathCase("W1/rmdir", "rmdir", denial.HookInodeRmdir, "d"),
	pathCase("W1/unlink", "unlink", denial.HookInodeUnlink, "f"),
	pathCase("W1/symlink", "symlink", denial.HookInodeSymlink, "=f", "sym"),
	pathCase("W1/mkfifo", "mkfifo", denial.HookInodeMknod, "fifo"),
	// A device node needs CAP_MKNOD, which every enforced process is
	// refused (tamper.bpf.c capable): that denial comes first.
	withAltHook(pathCase("W1/mknod-chr", "mknod-chr", denial.HookInodeMknod, "null"), denial.HookCapable),
	pathCase("W1/mknod-reg", "mknod-reg", 0, "reg"),
	pathCase("W1/link", "link", denial.HookInodeLink, "f", "hard"),
	pathCase("W1/rename", "rename", denial.HookInodeRename, "f", "renamed"),
	pathCase("W1/rename-over", "rename", denial.HookInodeRename, "g", "f"),
	pathCase("W1/renameat2-exchange", "exchange", denial.HookInodeRename, "f", "g"),
	// W2: truncation.
	pathCase("W2/truncate", "truncate", denial.HookPathTruncate, "f"),
	// Each truncation branch is the one that decides (its record names
	// it): file_open refuses O_RDONLY|O_TRUNC before handle_truncate
	// reaches file_truncate/path_truncate, and those come before
	// inode_setattr, so removing any one branch alone changes the record.
	pathCase("W2/open-rdonly-trunc", "open-rdonly-trunc", denial.HookFileOpen, "f"),
	withWantAt(fdCase("W2/ftruncate-inherited", "ftruncate-fd", 0, "f", unix.O_WRONLY), ftruncateWant),
	// W3: metadata.
	pathCase("W3/chmod", "chmod", denial.HookInodeSetattr, "f"),
	pathCase("W3/chown", "chown", denial.HookInodeSetattr, "f"),
	pathCase("W3/utimes", "utimes", denial.HookInodeSetattr, "f"),
	xattrCase("W3/setxattr", "setxattr", denial.HookInodeSetxattr, "new"),
	xattrCase("W3/removexattr", "removexattr", denial.HookInodeRemovexattr, "enforcerd"),
	// W4: descriptors opened before the ceiling.
	fdCase("W4/write-inherited-fd", "write-fd", denial.HookFilePermission, "f", unix.O_WRONLY|unix.O_APPEND),
	fdCase("W4/openat-inherited-dirfd", "openat-fd", denial.HookInodeCreate, ".", unix.O_RDONLY|unix.O_DIRECTORY, "new"),
	fdCase("W4/mmap-shared-inherited-fd", "mmap-shared-fd", denial.HookMmapFile, "f", unix.O_RDWR),
	// W5: io_uring, no open(2)/write(2) syscall at all.
	pathCase("W5/io_uring-openat-write", "uring-openat-write", 0, "new"),
	fdCase("W5/io_uring-write-inherited-fd", "uring-write-fd", denial.HookFilePermission, "f", unix.O_WRONLY|unix.O_APPEND),
}

func TestWriteCeilingDenies(t *testing.T) { runCases(t, writeCases, writeDeny, kerneltest.InSandbox) }

// TestWriteCeilingDeniesFromSubCgroup: E1, one case of each kind from a
// sub-cgroup below the registered one.
func TestWriteCeilingDeniesFromSubCgroup(t *testing.T) {
	runCases(t, pick(writeCases, "W1/create", "W1/unlink", "W1/renameat2-exchange",
		"W2/truncate", "W3/chmod", "W3/setxattr", "W4/write-inherited-fd",
		"W4/openat-inherited-dirfd", "W5/io_uring-openat-write"), writeDeny, kerneltest.InTestSub)
}

// TestWriteCeilingOpenForWrite: opening a file for writing (without writing)
// leaves no trace, so it is checked for the errno and the record only.
func TestWriteCeilingOpenForWrite(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	fx := newFixture(t)
	f := filepath.Join(fx, "f")
	if r := sb.Probe(t, "open-write", f); r.Setup != "" || r.Errno != 0 {
		t.Fatalf("control: %v", r)
	}
	sb.Register(t, entry.Entry{Ceiling: writeDeny})
	if r := sb.Probe(t, "open-write", f); !r.Denied() {
		t.Errorf("BYPASS: open(O_WRONLY) under write=false: %v", r)
	}
	kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(denial.HookFileOpen))
}

// TestAuditOnlyAllowsAndRecords: under AuditOnly the operation succeeds, its
// side effect happens, and an "audited" record arrives.
func TestAuditOnlyAllowsAndRecords(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: bothDeny, AuditOnly: true})
	fx := newFixture(t)
	if r := sb.Probe(t, "mkdir", filepath.Join(fx, "new")); r.Setup != "" || r.Errno != 0 {
		t.Errorf("mkdir under audit-only: %v, want success", r)
	}
	if _, err := os.Stat(filepath.Join(fx, "new")); err != nil {
		t.Errorf("mkdir under audit-only left no directory: %v", err)
	}
	kt.Expect(t, sb.Cg.ID, kerneltest.Want{Hooks: []denial.Hook{denial.HookInodeMkdir}, Audited: true})
	if r := sb.Probe(t, "socket", sockArgs(unix.AF_INET, unix.SOCK_STREAM, 0)...); r.Setup != "" || r.Errno != 0 {
		t.Errorf("socket(AF_INET) under audit-only: %v, want success", r)
	}
	for _, d := range sb.Records(t) {
		if !d.Audited || d.Errno != 0 {
			t.Errorf("record under audit-only: %s %s audited=%v errno=%v", d.Hook, d.Object, d.Audited, d.Errno)
		}
	}
}

// TestControlsStayAllowed: under both ceilings, what modifies no filesystem
// and reaches no outside socket keeps working.
func TestControlsStayAllowed(t *testing.T) {
	kt.Enforcer(t)
	for _, childSub := range []bool{false, true} {
		// The child cannot mkdir in cgroupfs under write=false: from its
		// own sub-cgroup (E1) the controls run under network=false only.
		ceiling := bothDeny
		if childSub {
			ceiling = networkDeny
		}
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: ceiling})
		at := sb
		if childSub {
			at = sb.ChildSub()
		}
		fx := newFixture(t)
		for _, op := range [][]string{{"socketpair"}, {"unix-inside"}, {"pipe"}, {"devnull"}, {"memfd"}, {"tty"}, {"read", filepath.Join(fx, "f")}} {
			if r := at.Probe(t, op[0], op[1:]...); r.Setup != "" || r.Errno != 0 {
				t.Errorf("%s (sub-cgroup: %v) under the ceiling: %v, want success", op[0], childSub, r)
			}
		}
		if ds := sb.Records(t); len(ds) != 0 {
			for _, d := range ds {
				t.Errorf("unexpected record for an allowed control: %s %s", d.Hook, d.Object)
			}
		}
		if got := snapshotContent(t, fx); !bytes.Equal(got, []byte("hello")) {
			t.Errorf("fixture changed by controls: %q", got)
		}
	}
}

// TestMemfdResizeUnderWriteCeiling: write=false keeps memfd writes allowed,
// and ftruncate(2) of a memfd (how every memfd user sizes it) reaches
// inode_setattr (6.3+) or path_truncate (6.1); both exempt pseudo files on
// kernel-mounted superblocks (dentry_exempt in bpf/file.bpf.c).
func TestMemfdResizeUnderWriteCeiling(t *testing.T) {
	kt.Enforcer(t)
	sb := kt.Sandbox(t, "case")
	sb.Register(t, entry.Entry{Ceiling: writeDeny})
	r := sb.Probe(t, "memfd-ftruncate")
	if r.Setup != "" {
		t.Fatalf("probe: %v", r)
	}
	if r.Errno != 0 {
		var hooks []string
		for _, d := range sb.Records(t) {
			hooks = append(hooks, d.Hook.String())
		}
		t.Errorf("ftruncate of a memfd under write=false: %v (hooks %v); memfds must stay writable", r, hooks)
	}
}

func snapshotContent(t *testing.T, fx string) []byte {
	b, err := os.ReadFile(filepath.Join(fx, "f"))
	must(t, err)
	return b
}
