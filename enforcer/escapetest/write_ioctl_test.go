package escapetest

// Write ceiling, second round: ioctls that modify a file (through the
// native and the 32-bit compat entry), and metadata of socket, FIFO and
// device inodes. Writes through character devices are in
// chardev_test.go.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/test/kerneltest"
	"github.com/enforcerd/enforcerd/test/probe"
)

const (
	flImmutable = 0x10 // FS_IMMUTABLE_FL
	flAppend    = 0x20 // FS_APPEND_FL
	flNodump    = 0x40 // FS_NODUMP_FL
	xflAppend   = 0x10 // FS_XFLAG_APPEND
)

var ioctlHooks = hooks(denial.HookFileIoctl)

// compatHooks: file_ioctl_compat on kernels that have it (6.7+, and some
// stable backports), file_ioctl before.
var compatHooks = hooks(denial.HookFileIoctlCompat, denial.HookFileIoctl)

// extDir is the VM's ext4 mount.
// newFile makes a file with content in dir; its flags are cleared and it is
// removed when the test ends.
func newFile(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.Base(kt.TmpPath("escapetest-file")))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if fd, err := unix.Open(p, unix.O_RDONLY, 0); err == nil {
			if v, err := unix.IoctlGetUint32(fd, fsIOCGetflags); err == nil && v&(flImmutable|flAppend) != 0 {
				v64 := uint64(v &^ (flImmutable | flAppend))
				ioctlPtr(fd, fsIOCSetflags, unsafe.Pointer(&v64))
			}
			var fx [28]byte
			if ioctlPtr(fd, fsIOCFsgetxattr, unsafe.Pointer(&fx[0])) == 0 {
				x := binary.LittleEndian.Uint32(fx[:])
				if x&(xflAppend|0x8) != 0 {
					binary.LittleEndian.PutUint32(fx[:], x&^(xflAppend|0x8))
					ioctlPtr(fd, fsIOCFssetxattr, unsafe.Pointer(&fx[0]))
				}
			}
			unix.Close(fd)
		}
		os.Remove(p)
	})
	return p
}

func flagsOf(path string) (uint32, error) {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return unix.IoctlGetUint32(fd, fsIOCGetflags)
}

func xflagsOf(path string) (uint32, error) {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var fx [28]byte
	if e := ioctlPtr(fd, fsIOCFsgetxattr, unsafe.Pointer(&fx[0])); e != 0 {
		return 0, e
	}
	return binary.LittleEndian.Uint32(fx[:]), nil
}

// flagsSet: FS_IOC_GETFLAGS (from the test) shows flag.
func flagsSet(path string, flag uint32) kerneltest.Effect {
	return func() (bool, string) {
		v, err := flagsOf(path)
		return err == nil && v&flag != 0, fmt.Sprintf("%s flags %#x (%v) include %#x", path, v, err, flag)
	}
}

func xflagsSet(path string, flag uint32) kerneltest.Effect {
	return func() (bool, string) {
		v, err := xflagsOf(path)
		return err == nil && v&flag != 0, fmt.Sprintf("%s fsx_xflags %#x (%v) include %#x", path, v, err, flag)
	}
}

// fileOp: a fresh file in dir (where(t)); the op gets its path and args.
func fileOp(where func(*testing.T) string, op string, eff func(path string) kerneltest.Effect, args ...string) kerneltest.Attempt {
	return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		p := newFile(t, where(t), "hello\n")
		return sb.Probe(t, op, append([]string{p}, args...)...), eff(p)
	}
}

func tmpDir(*testing.T) string { return kt.TmpDir() }

// sealed: fs-verity is on, no open for write succeeds.
func sealed(p string) kerneltest.Effect {
	return func() (bool, string) {
		fd, err := unix.Open(p, unix.O_WRONLY, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err != nil, fmt.Sprintf("%s sealed: open for write: %v", p, err)
	}
}

func TestIoctlModifiesFile(t *testing.T) {
	kt.Enforcer(t)
	hex := func(v int) string { return "0x" + strconv.FormatInt(int64(v), 16) }
	setFl := func(f uint32) func(string) kerneltest.Effect {
		return func(p string) kerneltest.Effect { return flagsSet(p, f) }
	}
	setXfl := func(f uint32) func(string) kerneltest.Effect {
		return func(p string) kerneltest.Effect { return xflagsSet(p, f) }
	}
	cases := []kerneltest.Case{
		// The 32-bit entry (compat_sys_ioctl) of the same requests.
		{Name: "W3 FS_IOC32_SETFLAGS +i via int 0x80 (ext4)", Attempt: fileOp(extDir, "setflags-compat", setFl(flImmutable), hex(flImmutable)), Want: kerneltest.Want{Hooks: compatHooks}},
		{Name: "W3 FS_IOC32_SETFLAGS +a via int 0x80 (ext4)", Attempt: fileOp(extDir, "setflags-compat", setFl(flAppend), hex(flAppend)), Want: kerneltest.Want{Hooks: compatHooks}},
		{Name: "W3 FS_IOC32_SETFLAGS +d via int 0x80 (ext4)", Attempt: fileOp(extDir, "setflags-compat", setFl(flNodump), hex(flNodump)), Want: kerneltest.Want{Hooks: compatHooks}},
		{Name: "W3 FS_IOC32_SETFLAGS +i via int 0x80 (tmpfs)", Attempt: fileOp(tmpDir, "setflags-compat", setFl(flImmutable), hex(flImmutable)), Want: kerneltest.Want{Hooks: compatHooks}},
		{Name: "W3 FS_IOC_SETFLAGS (64-bit number) +i via int 0x80 (ext4)", Attempt: fileOp(extDir, "setflags64-compat", setFl(flImmutable), hex(flImmutable)), Want: kerneltest.Want{Hooks: compatHooks}},
		{Name: "W3 FS_IOC_ENABLE_VERITY via int 0x80 (ext4)", Attempt: fileOp(extDir, "enable-verity", sealed, "compat"), Want: kerneltest.Want{Hooks: compatHooks}},
		{Name: "W3 FS_IOC_FSSETXATTR append via int 0x80 (ext4)", Attempt: fileOp(extDir, "fssetxattr-compat", setXfl(xflAppend), hex(xflAppend)), Want: kerneltest.Want{Hooks: compatHooks}},
		// The native entry.
		{Name: "W3 FS_IOC_SETFLAGS (EXT4_IOC_SETFLAGS) +i (ext4)", Attempt: fileOp(extDir, "setflags", setFl(flImmutable), hex(flImmutable)), Want: kerneltest.Want{Hooks: ioctlHooks}},
		{Name: "W3 FS_IOC_SETFLAGS +d (tmpfs)", Attempt: fileOp(tmpDir, "setflags", setFl(flNodump), hex(flNodump)), Want: kerneltest.Want{Hooks: ioctlHooks}},
		{Name: "W3 FS_IOC_FSSETXATTR append (ext4)", Attempt: fileOp(extDir, "fssetxattr", setXfl(xflAppend), hex(xflAppend)), Want: kerneltest.Want{Hooks: ioctlHooks}},
		// fs-verity seals the file for ever: no open for write succeeds
		// afterwards.
		{Name: "W3 FS_IOC_ENABLE_VERITY on a read-only descriptor (ext4)", Attempt: fileOp(extDir, "enable-verity", sealed), Want: kerneltest.Want{Hooks: ioctlHooks}},
		// EXT4_IOC_MOVE_EXT swaps file data between two descriptors
		// opened for write before the ceiling: no write(2), no
		// file_permission.
		{Name: "W4 EXT4_IOC_MOVE_EXT through inherited writable descriptors (ext4)", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			ext := extDir(t)
			orig := newFile(t, ext, strings.Repeat("O", 4096))
			donor := newFile(t, ext, strings.Repeat("D", 4096))
			var files []*os.File
			for _, p := range []string{orig, donor} {
				f, err := os.OpenFile(p, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			r := sb.ProbeFiles(t, files, "move-ext")
			// The orig file keeps its data on other blocks (the ioctl is
			// defragmentation's); the donor file's data is gone.
			return r, func() (bool, string) {
				unix.Sync()
				if err := writeFile("/proc/sys/vm/drop_caches", "3"); err != nil {
					return false, "drop_caches: " + err.Error()
				}
				b, _ := os.ReadFile(donor)
				return !bytes.Equal(b, []byte(strings.Repeat("D", 4096))), fmt.Sprintf("donor %s lost its data (now %.8q)", donor, b)
			}
		}, Want: kerneltest.Want{Hooks: ioctlHooks}},
	}
	for i := range cases {
		cases[i].Ceiling = fullNoWrite
	}
	kt.Run(t, cases)
}

// Read-only ioctls stay allowed under write=false; TCGETS on a regular file
// is the kernel's ENOTTY, not a denial.
func TestReadOnlyIoctlsAllowed(t *testing.T) {
	kt.Enforcer(t)
	check := func(t *testing.T, path, op string, args []string, want unix.Errno) {
		t.Helper()
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: fullNoWrite})
		r := sb.Probe(t, op, append([]string{path}, args...)...)
		if r.Setup != "" {
			t.Fatalf("probe could not attempt the operation: %v", r)
		}
		if r.Errno != want {
			t.Errorf("%s %v on %s under %v: %v, want %s", op, args, path, fullNoWrite, r, unix.ErrnoName(want))
		}
		if ds := kt.Records(t, sb.Cg.ID); len(ds) > 0 {
			t.Errorf("%s %v: unexpected records %v", op, args, ds)
		}
	}
	t.Run("tmpfs", func(t *testing.T) {
		p := newFile(t, kt.TmpDir(), "hello\n")
		for _, n := range []string{"FS_IOC_GETFLAGS", "FIONREAD", "FIGETBSZ"} {
			t.Run(n, func(t *testing.T) { check(t, p, "ioctl-read", []string{n}, 0) })
		}
		t.Run("TCGETS", func(t *testing.T) { check(t, p, "ioctl-read", []string{"TCGETS"}, unix.ENOTTY) })
		t.Run("FS_IOC32_GETFLAGS via int 0x80", func(t *testing.T) { check(t, p, "getflags-compat", nil, 0) })
	})
	t.Run("ext4", func(t *testing.T) {
		p := newFile(t, extDir(t), "hello\n")
		for _, n := range []string{"FS_IOC_GETFLAGS", "FIONREAD", "FIGETBSZ", "FS_IOC_FIEMAP", "FS_IOC_GETVERSION"} {
			t.Run(n, func(t *testing.T) { check(t, p, "ioctl-read", []string{n}, 0) })
		}
		t.Run("TCGETS", func(t *testing.T) { check(t, p, "ioctl-read", []string{"TCGETS"}, unix.ENOTTY) })
		t.Run("FS_IOC32_GETFLAGS via int 0x80", func(t *testing.T) { check(t, p, "getflags-compat", nil, 0) })
	})
}

// specialNode makes an inode of kind in the test's temp dir (outside any
// sandbox): a bound unix socket, a FIFO, a char or a block device node.
func specialNode(t *testing.T, kind string) string {
	t.Helper()
	p := kt.TmpPath("node-" + kind)
	var err error
	switch kind {
	case "socket":
		fd, e := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if e != nil {
			t.Fatal(e)
		}
		t.Cleanup(func() { unix.Close(fd) })
		err = unix.Bind(fd, &unix.SockaddrUnix{Name: p})
	case "fifo":
		err = unix.Mkfifo(p, 0o644)
	case "chr": // the numbers of /dev/null
		err = unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3)))
	case "blk": // the numbers of /dev/loop0
		err = unix.Mknod(p, unix.S_IFBLK|0o644, int(unix.Mkdev(7, 0)))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	return p
}

// metaChanged: p's mode, owner, mtime or ACL differ from before.
func metaChanged(p string, before unix.Stat_t) kerneltest.Effect {
	return func() (bool, string) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return false, err.Error()
		}
		n, _ := unix.Lgetxattr(p, "system.posix_acl_access", make([]byte, 256))
		changed := st.Mode != before.Mode || st.Uid != before.Uid || st.Gid != before.Gid || st.Mtim != before.Mtim || n > 0
		return changed, fmt.Sprintf("%s metadata changed: mode %o->%o uid %d->%d mtime %v->%v acl %d bytes", p, before.Mode, st.Mode, before.Uid, st.Uid, before.Mtim.Sec, st.Mtim.Sec, n)
	}
}

func TestSpecialInodeMetadata(t *testing.T) {
	kt.Enforcer(t)
	var cases []kerneltest.Case
	for _, kind := range []string{"socket", "fifo", "chr", "blk"} {
		for _, o := range []struct {
			op    string
			hooks []denial.Hook
		}{
			{"lchmod", hooks(denial.HookInodeSetattr)},
			{"lchown", hooks(denial.HookInodeSetattr)},
			{"lutimes", hooks(denial.HookInodeSetattr)},
			// inode_set_acl on 6.2+, inode_setxattr before.
			{"set-acl", hooks(denial.HookInodeSetACL, denial.HookInodeSetxattr)},
		} {
			cases = append(cases, kerneltest.Case{Name: fmt.Sprintf("W3 %s of a %s inode", o.op, kind), Ceiling: fullNoWrite,
				Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
					p := specialNode(t, kind)
					var st unix.Stat_t
					if err := unix.Lstat(p, &st); err != nil {
						t.Fatal(err)
					}
					return sb.Probe(t, o.op, p), metaChanged(p, st)
				}, Want: kerneltest.Want{Hooks: o.hooks}})
		}
	}
	kt.Run(t, cases)
}
