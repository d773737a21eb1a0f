package escapetest

// Writes through character devices under write=false, up to raw SCSI
// passthrough (which no ceiling allows).

import (
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

// Character devices that write nothing persistent stay writable under
// write=false.
func TestCharDevicesAllowed(t *testing.T) {
	kt.Enforcer(t)
	for _, c := range []struct {
		dev  string
		want unix.Errno
	}{{"/dev/null", 0}, {"/dev/zero", 0}, {"/dev/full", unix.ENOSPC}, {"/dev/random", 0}, {"/dev/urandom", 0}} {
		t.Run(c.dev, func(t *testing.T) {
			sb := kt.Sandbox(t, "case")
			sb.Register(t, entry.Entry{Ceiling: fullNoWrite})
			r := sb.Probe(t, "write-dev", c.dev, sentData)
			if r.Setup != "" || r.Errno != c.want {
				t.Errorf("write %s under %v: %v, want %s", c.dev, fullNoWrite, r, unix.ErrnoName(c.want))
			}
		})
	}
	t.Run("pty", func(t *testing.T) {
		sb := kt.Sandbox(t, "case")
		sb.Register(t, entry.Entry{Ceiling: fullNoWrite})
		r := sb.Probe(t, "pty-write")
		if r.Setup != "" || r.Errno != 0 || !r.Effect {
			t.Errorf("write through a pty under %v: %v (effect %v), want success", fullNoWrite, r, r.Effect)
		}
	})
}

func TestCharDeviceWrites(t *testing.T) {
	kt.Enforcer(t)
	vcs := func(dev string) kerneltest.Attempt {
		return func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mustExist(t, dev, "a virtual console")
			mark := fmt.Sprintf("PWNED%d", kt.Seq())
			return sb.Probe(t, "write-dev", dev, mark), func() (bool, string) {
				return strings.Contains(readAll(dev), mark), dev + " shows " + mark
			}
		}
	}
	cases := []kerneltest.Case{
		{Name: "W4 /dev/uinput: create a virtual keyboard", Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
			mustExist(t, "/dev/uinput", "the uinput module")
			r := sb.Probe(t, "uinput-create", fmt.Sprintf("escapetest-uinput-%d", kt.Seq()))
			return r, func() (bool, string) { return r.Effect, "the probe's input device was registered" }
		}, Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
		{Name: "W4 write /dev/vcs (the console's screen)", Attempt: vcs("/dev/vcs"), Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
		{Name: "W4 write /dev/vcs1", Attempt: vcs("/dev/vcs1"), Want: kerneltest.Want{Hooks: hooks(denial.HookFileOpen)}},
	}
	for i := range cases {
		cases[i].Ceiling = fullNoWrite
	}
	kt.Run(t, cases)
}

// diskTarget is a file on the VM's ext4 disk and where its first 4 KiB
// live on the disk, with the disk's SCSI passthrough devices.
type diskTarget struct {
	file, orig    string
	lba           uint32
	nblk, bs      int
	sg, bsg, disk string // /dev/sgN, /dev/bsg/H:C:T:L, /dev/sdX
}

func sysfsOne(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil || len(es) != 1 {
		t.Fatalf("%s: want one entry, have %v (%v)", dir, es, err)
	}
	return es[0].Name()
}

func newDiskTarget(t *testing.T) diskTarget {
	t.Helper()
	ext := extDir(t)
	dev := mustEnv(t, "ENFORCERD_VMTEST_EXT_DEV")
	base := filepath.Base(dev)
	var start uint64
	disk := base
	if s := trimmed("/sys/class/block/" + base + "/start"); s != "" { // a partition
		start, _ = strconv.ParseUint(s, 10, 64)
		l, err := os.Readlink("/sys/class/block/" + base)
		if err != nil {
			t.Fatal(err)
		}
		disk = filepath.Base(filepath.Dir(l))
	}
	d := diskTarget{disk: "/dev/" + disk}
	d.sg = "/dev/" + sysfsOne(t, "/sys/class/block/"+disk+"/device/scsi_generic")
	d.bsg = "/dev/bsg/" + sysfsOne(t, "/sys/class/block/"+disk+"/device/bsg")
	d.bs, _ = strconv.Atoi(trimmed("/sys/class/block/" + disk + "/queue/logical_block_size"))
	if d.bs <= 0 || 4096%d.bs != 0 {
		t.Fatalf("logical block size %d", d.bs)
	}
	d.nblk = 4096 / d.bs
	d.orig = strings.Repeat(fmt.Sprintf("ORIGINAL-%d-", kt.Seq()), 400)[:4096]
	d.file = newFile(t, ext, d.orig)
	f, err := os.OpenFile(d.file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	unix.Sync()
	// FIEMAP (synced) of the first extent.
	buf := make([]byte, 32+56)
	binary.LittleEndian.PutUint64(buf[8:], 4096)
	binary.LittleEndian.PutUint32(buf[16:], 1) // FIEMAP_FLAG_SYNC
	binary.LittleEndian.PutUint32(buf[24:], 1)
	if e := ioctlPtr(int(f.Fd()), fsIOCFiemap, unsafe.Pointer(&buf[0])); e != 0 {
		t.Fatalf("FIEMAP %s: %v", d.file, e)
	}
	if binary.LittleEndian.Uint32(buf[20:]) != 1 {
		t.Fatalf("FIEMAP %s: %d extents", d.file, binary.LittleEndian.Uint32(buf[20:]))
	}
	ext0 := buf[32:]
	phys := binary.LittleEndian.Uint64(ext0[8:])
	length := binary.LittleEndian.Uint64(ext0[16:])
	flags := binary.LittleEndian.Uint32(ext0[40:])
	// UNKNOWN, DELALLOC, ENCODED, DATA_ENCRYPTED, NOT_ALIGNED, DATA_INLINE,
	// DATA_TAIL, UNWRITTEN: not a plain block on the disk.
	if flags&0xf8e != 0 || length < 4096 || binary.LittleEndian.Uint64(ext0[0:]) != 0 {
		t.Fatalf("FIEMAP %s: extent at %d len %d flags %#x is not a plain block", d.file, phys, length, flags)
	}
	d.lba = uint32(phys/uint64(d.bs) + start*512/uint64(d.bs))
	return d
}

// changed: the file's data on the disk (page cache dropped) differs.
func (d diskTarget) changed() kerneltest.Effect {
	return func() (bool, string) {
		unix.Sync()
		if err := writeFile("/proc/sys/vm/drop_caches", "3"); err != nil {
			return false, "drop_caches: " + err.Error()
		}
		b, err := os.ReadFile(d.file)
		return err == nil && string(b) != d.orig, fmt.Sprintf("%s changed on disk (now %.24q, %v)", d.file, b, err)
	}
}

func sgCase(name, which, mode string, extra ...string) kerneltest.Case {
	c := kerneltest.Case{Name: name, Attempt: func(t *testing.T, sb *kerneltest.Sandbox) (probe.Result, kerneltest.Effect) {
		d := newDiskTarget(t)
		dev := map[string]string{"sg": d.sg, "bsg": d.bsg, "disk": d.disk}[which]
		r := sb.Probe(t, "sg-write", dev, mode, fmt.Sprint(d.lba), fmt.Sprint(d.nblk), fmt.Sprint(d.bs), fmt.Sprintf("PWNED%d-", kt.Seq()), strings.Join(extra, ""))
		return r, d.changed()
	}, Want: kerneltest.Hooks(denial.HookFileIoctl, denial.HookFileOpen)}
	if len(extra) > 0 {
		c.Want.Hooks = append(c.Want.Hooks, denial.HookFileIoctlCompat)
	}
	return c
}

// Raw SCSI passthrough writes a disk's blocks under every inode: WRITE(10)
// to the blocks of a file on the VM's ext4 disk.
func TestRawStoragePassthrough(t *testing.T) {
	kt.Enforcer(t)
	noWrite := []kerneltest.Case{
		sgCase("W4 SG_IO WRITE(10) via /dev/sgN opened for write", "sg", "rw"),
		sgCase("W4 SG_IO WRITE(10) via /dev/bsg opened for write", "bsg", "rw"),
		sgCase("W4 SG_IO WRITE(10) via /dev/sgN opened read-only", "sg", "ro"),
		sgCase("W4 SG_IO WRITE(10) via /dev/bsg opened read-only", "bsg", "ro"),
		sgCase("W4 SG_IO WRITE(10) via the disk opened read-only", "disk", "ro"),
		sgCase("W4 SG_IO WRITE(10) via /dev/bsg opened read-only, through int 0x80", "bsg", "ro", "compat"),
	}
	for i := range noWrite {
		noWrite[i].Ceiling = fullNoWrite
		noWrite[i].Name += " (write=false)"
	}
	every := []kerneltest.Case{
		sgCase("E3 SG_IO WRITE(10) via /dev/sgN opened for write", "sg", "rw"),
		sgCase("E3 SG_IO WRITE(10) via /dev/bsg opened for write", "bsg", "rw"),
		sgCase("E3 SG_IO WRITE(10) via the disk opened for write", "disk", "rw"),
		sgCase("E3 SG_IO WRITE(10) via the disk opened read-only", "disk", "ro"),
		sgCase("E3 SG_IO WRITE(10) via /dev/bsg opened read-only, through int 0x80", "bsg", "ro", "compat"),
	}
	for i := range every {
		every[i].Ceiling = tamperOnly
		every[i].Name += " (write=true)"
	}
	kt.Run(t, append(noWrite, every...))
}
