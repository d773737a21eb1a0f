package escapetest

// Writable roots, attacked (threat model R1–R11): ways a write=false
// sandbox with writable roots reaches past them. A case that documents a
// confirmed bypass FAILS until the kind is closed.

import (
	"bytes"
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

// rootsTriState runs attempt (a) in an unregistered cgroup, where it must
// succeed with its side effect, then (b) under write=false with the roots
// prep returns (paths, resolved with entry.WriteRootOf), where it must
// be denied (EPERM/EACCES), and (c) without its side effect; want is the
// record the denial must leave (no hooks: none checked).
func rootsTriState(t *testing.T, prep func(t *testing.T) []string, attempt kerneltest.Attempt, want kerneltest.Want) {
	t.Helper()
	ctl := kt.Sandbox(t, "control")
	prep(t)
	r, eff := attempt(t, ctl)
	if r.Setup != "" || r.Errno != 0 || r.Exit > 0 {
		t.Fatalf("control (no ceiling): %v, want success", r)
	}
	if eff != nil {
		if ok, what := eff(); !ok {
			t.Fatalf("control (no ceiling): no side effect (%s): the probe proves nothing", what)
		}
	}
	sb := kt.Sandbox(t, "case")
	en := entry.Entry{Ceiling: fullNoWrite}
	for _, p := range prep(t) {
		id, err := entry.WriteRootOf(p)
		if err != nil {
			t.Fatalf("root %s: %v", p, err)
		}
		en.WriteRoots = append(en.WriteRoots, id)
	}
	sb.Register(t, en)
	r, eff = attempt(t, sb)
	if r.Setup != "" {
		t.Fatalf("ceiling: probe could not attempt the operation (a test bug, not a pass): %v", r)
	}
	if !r.Denied() {
		t.Errorf("BYPASS under write=false with writable roots: %v, want EPERM or EACCES", r)
	}
	if eff != nil {
		if ok, what := eff(); ok {
			t.Errorf("BYPASS under write=false with writable roots: side effect happened: %s", what)
		}
	}
	if len(want.Hooks) > 0 {
		kt.Expect(t, sb.Cg.ID, want)
	}
}

// rootsExtFx is base/R (the root) and base/O (outside) on the VM's ext4
// disk, fresh for each run.
type rootsExtFx struct{ base, R, O string }

func newRootsExtFx(t *testing.T) rootsExtFx {
	t.Helper()
	base := filepath.Join(extDir(t), filepath.Base(kt.TmpPath("a13-roots")))
	fx := rootsExtFx{base: base, R: filepath.Join(base, "R"), O: filepath.Join(base, "O")}
	for _, d := range []string{fx.R, fx.O} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	return fx
}

// syncedFile writes content to p and syncs it (EXT4_IOC_MOVE_EXT moves
// allocated blocks only).
func syncedFile(t *testing.T, p, content string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// R5 through a second descriptor: EXT4_IOC_MOVE_EXT is asked of a file
// beneath the root (file_ioctl sees that file, so the roots allow it), and
// swaps its blocks with those of the donor, a file outside every root whose
// writable descriptor the sandbox inherited. The kernel calls no LSM hook
// for the donor (no file_permission, no file_ioctl): the outside file's
// data is replaced by data the sandbox wrote beneath its root. The same
// kind: XFS_IOC_SWAPEXT (both descriptors in the argument) and
// F2FS_IOC_MOVE_RANGE (dst_fd), on the other allowed root filesystems.
// Under write=false without roots the ioctl is refused (W4, write_ioctl_test.go):
// the roots lift it because they judge only the file the ioctl names.
func TestAttackRootsMoveExtOutsideDonor(t *testing.T) {
	kt.Enforcer(t)
	var fx rootsExtFx
	prep := func(t *testing.T) []string {
		fx = newRootsExtFx(t)
		syncedFile(t, filepath.Join(fx.R, "orig"), strings.Repeat("A", 4096))
		syncedFile(t, filepath.Join(fx.O, "donor"), strings.Repeat("D", 4096))
		return []string{fx.R}
	}
	attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		donor := filepath.Join(fx.O, "donor")
		f, err := os.OpenFile(donor, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r := sb.ProbeFiles(t, []*os.File{f}, "a13-move-ext", filepath.Join(fx.R, "orig"))
		return r, func() (bool, string) {
			unix.Sync()
			if err := writeFile("/proc/sys/vm/drop_caches", "3"); err != nil {
				return false, "drop_caches: " + err.Error()
			}
			b, _ := os.ReadFile(donor)
			return !bytes.Equal(b, []byte(strings.Repeat("D", 4096))),
				fmt.Sprintf("outside file %s lost its data (now %.8q...)", donor, b)
		}
	}
	// The donor is held by the ceiling when written directly (R5), so
	// what the ioctl does is a bypass of that, not an allowed write.
	t.Run("sanity: pwrite to the donor descriptor is denied", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		roots := prep(t)
		id, err := entry.WriteRootOf(roots[0])
		if err != nil {
			t.Fatal(err)
		}
		sb.Register(t, entry.Entry{Ceiling: fullNoWrite, WriteRoots: []entry.FileID{id}})
		f, err := os.OpenFile(filepath.Join(fx.O, "donor"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if r := sb.ProbeFiles(t, []*os.File{f}, "a13-write-fd", "X"); !r.Denied() {
			t.Fatalf("pwrite to an outside descriptor under write=false with roots: %v, want a denial", r)
		}
	})
	t.Run("EXT4_IOC_MOVE_EXT donor outside the root", func(t *testing.T) {
		rootsTriState(t, prep, attempt, kerneltest.Hooks(denial.HookFileIoctl))
	})
}

// W9 beneath a root: write=false keeps character devices an allow list
// (null, zero, full, random, urandom, terminals), every other one being a
// channel to something outside (consoles, uinput, ...). The roots'
// decision replaces that rule for a device node beneath a root: the node's
// dentry is beneath it, so open for write, write(2) and every ioctl pass,
// though the write lands in the host's device, not in the root. A root on
// /dev itself (devtmpfs reports TMPFS_MAGIC, which the root allow list
// accepts), a container's /dev, or a rootfs or chroot tree with device
// nodes (debootstrap, cp -a /dev) all carry such nodes; the sandbox cannot
// make one itself (CAP_MKNOD is off the K4 list), so the test makes them
// from outside, as the host would have.
func TestAttackRootsCharDeviceBeneathRoot(t *testing.T) {
	kt.Enforcer(t)
	var R string
	devRoot := func(name string, major, minor uint32) func(t *testing.T) []string {
		return func(t *testing.T) []string {
			fx := newRootsExtFx(t)
			R = fx.R
			if err := unix.Mknod(filepath.Join(R, name), unix.S_IFCHR|0o600, int(unix.Mkdev(major, minor))); err != nil {
				t.Fatal(err)
			}
			return []string{R}
		}
	}
	t.Run("W9 write the console screen (vcs) through a node beneath the root", func(t *testing.T) {
		mustExist(t, "/dev/vcs", "a virtual console")
		attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mark := fmt.Sprintf("PWNED%d", kt.Seq())
			return sb.Probe(t, "write-dev", filepath.Join(R, "vcs"), mark), func() (bool, string) {
				return strings.Contains(readAll("/dev/vcs"), mark), "/dev/vcs shows " + mark
			}
		}
		rootsTriState(t, devRoot("vcs", 7, 0), attempt, kerneltest.Hooks(denial.HookFileOpen))
	})
	t.Run("W9 uinput virtual keyboard through a node beneath the root", func(t *testing.T) {
		mustExist(t, "/dev/uinput", "the uinput module")
		attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			r := sb.Probe(t, "a13-uinput-at", filepath.Join(R, "uinput"), fmt.Sprintf("a13-uinput-%d", kt.Seq()))
			return r, func() (bool, string) { return r.Effect, "the probe's input device was registered" }
		}
		rootsTriState(t, devRoot("uinput", 10, 223), attempt, kerneltest.Hooks(denial.HookFileOpen))
	})
	t.Run("W9 write /dev/vcs1 with /dev as the root", func(t *testing.T) {
		mustExist(t, "/dev/vcs1", "a virtual console")
		if _, err := entry.WriteRootOf("/dev"); err != nil {
			// Refusing /dev as a root closes this variant.
			t.Logf("/dev refused as a writable root: %v", err)
			return
		}
		attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mark := fmt.Sprintf("PWNED%d", kt.Seq())
			return sb.Probe(t, "write-dev", "/dev/vcs1", mark), func() (bool, string) {
				return strings.Contains(readAll("/dev/vcs1"), mark), "/dev/vcs1 shows " + mark
			}
		}
		rootsTriState(t, func(*testing.T) []string { return []string{"/dev"} }, attempt, kerneltest.Hooks(denial.HookFileOpen))
	})
	// A root above /dev (the whole root filesystem, as an agent launched
	// from / or with its home as the workspace gets): file hooks cross
	// the devtmpfs mount to its mountpoint (R6), so every device node
	// under /dev is beneath the root.
	t.Run("W9 write /dev/vcs1 with / as the root (across the /dev mount)", func(t *testing.T) {
		mustExist(t, "/dev/vcs1", "a virtual console")
		if _, err := entry.WriteRootOf("/"); err != nil {
			t.Logf("/ refused as a writable root: %v", err)
			return
		}
		attempt := func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mark := fmt.Sprintf("PWNED%d", kt.Seq())
			return sb.Probe(t, "write-dev", "/dev/vcs1", mark), func() (bool, string) {
				return strings.Contains(readAll("/dev/vcs1"), mark), "/dev/vcs1 shows " + mark
			}
		}
		rootsTriState(t, func(*testing.T) []string { return []string{"/"} }, attempt, kerneltest.Hooks(denial.HookFileOpen))
	})
}
