package enforcer_test

// Writable roots, attacked (threat model R1–R11): every other kernel path
// to a write outside the roots that was tried. These held when written;
// they stay as regression cases of the kinds R1, R4 and R5.

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/test/kerneltest"
)

// TestAttackRootsOutsideDescriptorPaths: (a) the operation succeeds with
// its side effect in an unregistered cgroup; (b) under write=false with
// root (R, or R/1 for the renames of the root itself) it is denied; (c)
// nothing changed.
func TestAttackRootsOutsideDescriptorPaths(t *testing.T) {
	kt.Enforcer(t)
	rw := unix.O_RDWR
	for _, c := range []struct {
		rootsCase
		root string
	}{
		{rootsCase{name: "R5/fallocate-outside-fd", op: "a13-fallocate-fd", fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/punch-hole-outside-fd", op: "a13-punch-fd", fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/copy_file_range-into-outside-fd", op: "a13-copy-range-fd", args: []string{"R/f"}, fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/splice-into-outside-fd", op: "a13-splice-fd", fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/ftruncate-outside-fd", op: "ftruncate-fd", fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/mmap-shared-outside-fd", op: "mmap-shared-fd", fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/io_uring-write-outside-fd", op: "uring-write-fd", fd: "O/f", fdFlags: rw, watch: "O"}, "R"},
		{rootsCase{name: "R5/fchmod-outside-fd", op: "a13-fchmod-fd", fd: "O/f", fdFlags: unix.O_RDONLY, watch: "O"}, "R"},
		{rootsCase{name: "R5/futimens-outside-fd", op: "a13-futimens-fd", fd: "O/f", fdFlags: unix.O_RDONLY, watch: "O"}, "R"},
		{rootsCase{name: "R5/openat-outside-dirfd", op: "openat-fd", args: []string{"new"}, fd: "O/d", fdFlags: unix.O_RDONLY | unix.O_DIRECTORY, watch: "O"}, "R"},
		{rootsCase{name: "R4/rename-the-root-itself-out", op: "a13-rename", args: []string{"R/1", "O/moved"}}, "R/1"},
		{rootsCase{name: "R4/rename-the-root-within-its-parent", op: "a13-rename", args: []string{"R/1", "R/one"}}, "R/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctl := kt.Sandbox(t, "control")
			fx := newRootsFx(t)
			r, eff := c.attempt(t, ctl, fx)
			if r.Setup != "" || r.Errno != 0 {
				t.Fatalf("control (no ceiling): %v, want success", r)
			}
			if ok, what := eff(); !ok {
				t.Fatalf("control (no ceiling): no side effect (%s): the probe proves nothing", what)
			}
			sb := kt.Sandbox(t, "case")
			fx = newRootsFx(t)
			sb.Register(t, fx.entry(t, c.root))
			r, eff = c.attempt(t, sb, fx)
			if r.Setup != "" {
				t.Fatalf("ceiling: probe could not attempt the operation: %v", r)
			}
			if !r.Denied() {
				t.Errorf("BYPASS %s under write=false with root %s: %v, want EPERM or EACCES", c.name, c.root, r)
			}
			if ok, what := eff(); ok {
				t.Errorf("BYPASS %s: side effect happened: %s", c.name, what)
			}
			if ds := sb.Records(t); len(ds) == 0 {
				t.Errorf("%s: denied without a record", c.name)
			}
		})
	}
	// fsetxattr through a descriptor (the xattr namespace the fixture
	// can use).
	t.Run("R5/fsetxattr-outside-fd", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		fx := newRootsFx(t)
		sb.Register(t, fx.entry(t, "R"))
		c := rootsCase{name: "R5/fsetxattr-outside-fd", op: "a13-fsetxattr-fd", args: []string{xattrNS() + "a13"}, fd: "O/f", fdFlags: unix.O_RDONLY, watch: "O"}
		r, eff := c.attempt(t, sb, fx)
		if !r.Denied() {
			t.Errorf("BYPASS fsetxattr of an outside descriptor: %v", r)
		}
		if ok, what := eff(); ok {
			t.Errorf("BYPASS fsetxattr: %s", what)
		}
		if h, alt := xattrHooks(denial.HookInodeSetxattr); true {
			kt.Expect(t, sb.Cg.ID, kerneltest.Hooks(h, alt))
		}
	})
}
