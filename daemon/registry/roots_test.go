package registry_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/daemon/registry"
	"github.com/enforcerd/enforcerd/daemon/state"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/progcheck"
)

// TestRegisterWriteRoots: write_roots are resolved inside the registered
// process's root (here an entrypoint root), installed with the entry,
// persisted and shown; every bad one is ErrBadRequest naming write_roots,
// with nothing registered.
func TestRegisterWriteRoots(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"work/sub", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// An escaping symlink stays inside the root (RESOLVE_IN_ROOT).
	if err := os.Symlink("/../../work", filepath.Join(root, "esc")); err != nil {
		t.Fatal(err)
	}
	if _, err := entry.WriteRootOf(root); err != nil {
		t.Skipf("the test directory's filesystem cannot hold writable roots: %v", err)
	}
	f := newFixture(t)
	f.cgs.Add("/c")
	ep := &progcheck.Program{Path: "/bin/agent", Root: root}
	bad := []struct {
		name, ceiling string
		roots         []string
		says          string
	}{
		{"write allowed", "network=false", []string{"/work"}, "allows writes"},
		{"relative", "write=false", []string{"work"}, "not an absolute path"},
		{"missing", "write=false", []string{"/nope"}, "/nope"},
		{"a file", "write=false", []string{"/file"}, "not a directory"},
		{"twice", "write=false", []string{"/work", "/work/"}, "twice"},
		{"17", "write=false", strings.Split(strings.Repeat("/work,", 16)+"/tmp", ","), "at most 16"},
	}
	for _, c := range bad {
		_, err := f.reg.Register(registry.Request{ID: "x", Cgroup: "/c", Ceiling: c.ceiling, Entrypoint: ep, WriteRoots: c.roots})
		if !errors.Is(err, registry.ErrBadRequest) || !strings.Contains(err.Error(), "write_roots") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrBadRequest naming write_roots and %q", c.name, err, c.says)
		}
		if f.enf.Len() != 0 || len(f.reg.List()) != 0 {
			t.Fatalf("%s: something was registered", c.name)
		}
	}
	c, err := f.reg.Register(registry.Request{ID: "x", Cgroup: "/c", Ceiling: "write=false", Entrypoint: ep, WriteRoots: []string{"/work/sub", "/esc"}})
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := entry.WriteRootOf(filepath.Join(root, "work/sub"))
	work, _ := entry.WriteRootOf(filepath.Join(root, "work"))
	want := []state.WriteRoot{{Path: "/work/sub", Dev: sub.Dev, Ino: sub.Ino}, {Path: "/esc", Dev: work.Dev, Ino: work.Ino}}
	if len(c.WriteRoots) != 2 || c.WriteRoots[0] != want[0] || c.WriteRoots[1] != want[1] {
		t.Fatalf("roots %+v, want %+v", c.WriteRoots, want)
	}
	en, err := f.enf.Lookup(c.CgroupID)
	if err != nil || len(en.WriteRoots) != 2 || en.WriteRoots[0] != sub || en.WriteRoots[1] != work {
		t.Fatalf("entry roots %v (%v), want [%v %v]", en.WriteRoots, err, sub, work)
	}
	onDisk, err := state.Load(f.path)
	if err != nil || len(onDisk) != 1 || len(onDisk[0].WriteRoots) != 2 {
		t.Fatalf("state file: %+v, %v", onDisk, err)
	}
	f.consistent(t)
}

// TestWriteRootsMeetParent: a child's roots are those of its own lying
// beneath a root of its parent (by id: not a cgroup ancestor, so its entry
// alone must hold the meet); a child whose own request allows writes gets
// the parent's roots; one that asks for write=false itself gets none.
func TestWriteRootsMeetParent(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"work/sub", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := entry.WriteRootOf(root); err != nil {
		t.Skipf("the test directory's filesystem cannot hold writable roots: %v", err)
	}
	f := newFixture(t)
	for _, g := range []string{"/p", "/c", "/d", "/e"} {
		f.cgs.Add(g)
	}
	ep := &progcheck.Program{Path: "/bin/agent", Root: root}
	if _, err := f.reg.Register(registry.Request{ID: "p", Cgroup: "/p", Ceiling: "write=false", Entrypoint: ep, WriteRoots: []string{"/work"}}); err != nil {
		t.Fatal(err)
	}
	paths := func(c state.Container) string {
		var s []string
		for _, r := range c.WriteRoots {
			s = append(s, r.Path)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		id, ceiling string
		roots       []string
		want        string
	}{
		{"c", "write=false", []string{"/work/sub", "/other"}, "/work/sub"},
		{"d", "network=false", nil, "/work"},
		{"e", "write=false", nil, ""},
	} {
		got, err := f.reg.Register(registry.Request{ID: c.id, Cgroup: "/" + c.id, Parent: "p", Ceiling: c.ceiling, Entrypoint: ep, WriteRoots: c.roots})
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if got.Kernel.Write || paths(got) != c.want {
			t.Errorf("%s: write=%v roots %q, want write=false roots %q", c.id, got.Kernel.Write, paths(got), c.want)
		}
		en, err := f.enf.Lookup(got.CgroupID)
		if err != nil || len(en.WriteRoots) != len(got.WriteRoots) {
			t.Errorf("%s: entry roots %v (%v), want %d", c.id, en.WriteRoots, err, len(got.WriteRoots))
		}
	}
}
