package registry_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// execRoot is a container root holding the programs /bin/a, /bin/b and
// /bin/c (not shells, not ELF) and /bin/sh, a login shell by /etc/shells.
func execRoot(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for p, b := range map[string]string{"etc/shells": "/bin/sh\n", "bin/sh": "sh\n", "bin/a": "a\n", "bin/b": "b\n", "bin/c": "c\n"} {
		if err := os.MkdirAll(filepath.Join(d, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), []byte(b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func execPaths(c state.Container) string {
	var s []string
	for _, f := range c.ExecAllow {
		s = append(s, f.Path)
	}
	return strings.Join(s, ",")
}

// TestExecAllowMeetPersistReinstall: a child's exec allow list is the meet
// of its own (when it restricts exec itself) with those of every enclosing
// shell=none registration, by parent id or by cgroup, by identity; an
// enclosing registration whose shell is not none does not restrict. The
// lists are in the entries and the state file, and Reconcile re-installs a
// lost entry with its list.
func TestExecAllowMeetPersistReinstall(t *testing.T) {
	root := execRoot(t)
	f := newFixture(t)
	f.enf.CanShell = true
	for _, g := range []string{"/p", "/p/n", "/c", "/d", "/e", "/q", "/q/k"} {
		f.cgs.Add(g)
	}
	// The daemon refuses an exec_allow file whose inode changed since just
	// before it vetted it (recheckExecAllow): the files must be older.
	time.Sleep(50 * time.Millisecond)
	ep := &progcheck.Program{Path: "/bin/a", Root: root}
	reg := func(id, group, parent, ceiling string, allow ...string) state.Container {
		t.Helper()
		c, err := f.reg.Register(registry.Request{ID: id, Cgroup: group, Parent: parent, Ceiling: ceiling, Activate: registry.ActivateExec, Entrypoint: ep, ExecAllow: allow})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return c
	}
	id := func(p string) entry.FileID {
		i, err := entry.FileIDOf(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	reg("p", "/p", "", "shell=none", "/bin/a", "/bin/b")
	reg("q", "/q", "", "network=false")
	for _, c := range []struct {
		id, group, parent, ceiling string
		allow                      []string
		want                       string
	}{
		{"c", "/c", "p", "shell=none", []string{"/bin/b", "/bin/c"}, "/bin/b"},
		{"d", "/d", "p", "network=false", nil, "/bin/a,/bin/b"},
		{"e", "/e", "p", "shell=none", nil, ""},
		{"n", "/p/n", "", "", nil, "/bin/a,/bin/b"},
		{"k", "/q/k", "", "shell=none", []string{"/bin/c"}, "/bin/c"},
	} {
		got := reg(c.id, c.group, c.parent, c.ceiling, c.allow...)
		if got.Kernel.Shell != "none" || execPaths(got) != c.want {
			t.Errorf("%s: shell %s exec_allow %q, want none %q", c.id, got.Kernel.Shell, execPaths(got), c.want)
		}
		en, err := f.enf.Lookup(got.CgroupID)
		if err != nil || len(en.ExecAllow) != len(got.ExecAllow) {
			t.Errorf("%s: entry list %v (%v), want %d files", c.id, en.ExecAllow, err, len(got.ExecAllow))
		}
		for i, fl := range got.ExecAllow {
			if want := id(strings.TrimPrefix(fl.Path, "/")); en.ExecAllow[i] != want || (fl.Dev != want.Dev || fl.Ino != want.Ino) {
				t.Errorf("%s: file %s: entry %v, state %d:%d, want %v", c.id, fl.Path, en.ExecAllow[i], fl.Dev, fl.Ino, want)
			}
		}
	}
	f.consistent(t)

	onDisk, err := state.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range onDisk {
		if c.ID == "c" {
			found = execPaths(c) == "/bin/b" && c.ExecAllow[0].Dev == id("bin/b").Dev && c.ExecAllow[0].Ino == id("bin/b").Ino
		}
	}
	if !found {
		t.Fatalf("state file: container c without its list: %+v", onDisk)
	}

	// The pins were removed: a restarted daemon re-installs c in force,
	// with its list.
	c, _ := f.reg.Get("c")
	delete(f.enf.M, c.CgroupID)
	r2 := f.open()
	rep, err := r2.Reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Reinstalled, ",") != "c" {
		t.Fatalf("report %+v, want c re-installed", rep)
	}
	en := f.enf.M[c.CgroupID]
	if en.Pending || len(en.ExecAllow) != 1 || en.ExecAllow[0] != id("bin/b") {
		t.Fatalf("re-installed entry %+v, want in force with [%v]", en, id("bin/b"))
	}
	if got, _ := r2.Get("c"); execPaths(got) != "/bin/b" {
		t.Fatalf("after restart: exec_allow %q", execPaths(got))
	}
}

// TestExecAllowRefused: a malformed list, a list without shell=none and a
// shell on the list are refused with nothing registered.
func TestExecAllowRefused(t *testing.T) {
	root := execRoot(t)
	f := newFixture(t)
	f.enf.CanShell = true
	f.cgs.Add("/x")
	ep := &progcheck.Program{Path: "/bin/a", Root: root}
	many := strings.Split(strings.Repeat("/bin/a,", registry.MaxExecAllow)+"/bin/b", ",")
	for _, c := range []struct {
		name, ceiling string
		allow         []string
		want          error
		says          string
	}{
		{"relative", "shell=none", []string{"bin/a"}, registry.ErrBadRequest, "not an absolute path"},
		{"too many", "shell=none", many, registry.ErrBadRequest, "at most 16"},
		{"shell=full", "write=false", []string{"/bin/a"}, registry.ErrBadRequest, "needs shell=none"},
		{"a shell", "shell=none", []string{"/bin/b", "/bin/sh"}, registry.ErrUnsafeProgram, "/bin/sh is a shell"},
	} {
		_, err := f.reg.Register(registry.Request{ID: "x", Cgroup: "/x", Ceiling: c.ceiling, Activate: registry.ActivateExec, Entrypoint: ep, ExecAllow: c.allow})
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "exec_allow") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming exec_allow and %q", c.name, err, c.want, c.says)
		}
		if f.enf.Len() != 0 || len(f.reg.List()) != 0 {
			t.Fatalf("%s: something was registered", c.name)
		}
	}
}

// TestExecAllowChangedWhileChecked: an exec_allow file whose inode changed
// at (or just before) the daemon's vetting is refused once the entry is in
// force: a rewrite in place between the vetting and the registration time
// would keep its identity and a change time the kernel takes for "before
// the registration". Nothing stays registered.
func TestExecAllowChangedWhileChecked(t *testing.T) {
	root := execRoot(t)
	f := newFixture(t)
	f.enf.CanShell = true
	f.cgs.Add("/x")
	time.Sleep(50 * time.Millisecond) // /bin/a is older than the vetting
	// /bin/b is rewritten in place now: same inode, a fresh change time.
	if err := os.WriteFile(filepath.Join(root, "bin/b"), []byte("b2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ep := &progcheck.Program{Path: "/bin/a", Root: root}
	_, err := f.reg.Register(registry.Request{ID: "x", Cgroup: "/x", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: ep, ExecAllow: []string{"/bin/a", "/bin/b"}})
	if !errors.Is(err, registry.ErrUnsafeProgram) || !strings.Contains(err.Error(), "/bin/b") || !strings.Contains(err.Error(), "changed while it was checked") {
		t.Fatalf("a file changed at the vetting: %v, want ErrUnsafeProgram naming /bin/b", err)
	}
	if len(f.reg.List()) != 0 || len(f.enf.M) != 0 {
		t.Fatalf("refused registration left behind: list %v, kernel entries %v", f.reg.List(), f.enf.M)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := f.reg.Register(registry.Request{ID: "x", Cgroup: "/x", Ceiling: "shell=none", Activate: registry.ActivateExec, Entrypoint: ep, ExecAllow: []string{"/bin/a", "/bin/b"}}); err != nil {
		t.Fatalf("the same files once older: %v", err)
	}
}
