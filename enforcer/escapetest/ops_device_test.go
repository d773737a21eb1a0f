package escapetest

// Probe operations of writes that reach no write(2): ioctls that modify
// files (native and the 32-bit compat entry), metadata of special inodes,
// and writes through character devices (raw SCSI passthrough, uinput,
// terminals).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// Ioctl numbers (include/uapi/linux/fs.h, fsverity.h, ext4.h, sg.h, ...).
const (
	fsIOCGetflags     = 0x80086601
	fsIOCSetflags     = 0x40086602
	fsIOC32Getflags   = 0x80046601
	fsIOC32Setflags   = 0x40046602
	fsIOCFsgetxattr   = 0x801c581f
	fsIOCFssetxattr   = 0x401c5820
	fsIOCGetversion   = 0x80087601
	fsIOCFiemap       = 0xc020660b
	fsIOCEnableVerity = 0x40806685
	figetbsz          = 0x2
	ext4IOCMoveExt    = 0xc028660f
	sgIO              = 0x2285
	tcpZerocopyRecv   = 35 // TCP_ZEROCOPY_RECEIVE
	uiSetEvbit        = 0x40045564
	uiSetKeybit       = 0x40045565
	uiDevSetup        = 0x405c5503
	uiDevCreate       = 0x5501
	tunSetIff         = 0x400454ca
	iffTun            = 0x0001
	iffNoPI           = 0x1000
)

// page32 returns n bytes of memory below 4 GiB (for int $0x80 pointers).
func page32(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, (n+4095)&^4095, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_32BIT)
}

// compatIoctl is ioctl(fd, cmd, arg) through the i386 entry
// (compat_sys_ioctl); arg must point below 4 GiB.
func compatIoctl(r *probe.Result, fd int, cmd uintptr, arg unsafe.Pointer) {
	ret := Int80(i386Ioctl, uintptr(fd), cmd, uintptr(arg))
	if ret < 0 {
		r.Errno = syscall.Errno(-ret)
	}
	if r.Errno == unix.ENOSYS {
		r.Setup = "32-bit system calls are disabled in this kernel"
	}
}

func ioctlPtr(fd int, cmd uintptr, arg unsafe.Pointer) syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), cmd, uintptr(arg))
	return e
}

// sgWrite issues SCSI WRITE(10) of nblk blocks of mark at lba through
// SG_IO on dev (sg v3 header, or bsg v4 for /dev/bsg/*).
func sgWrite(r *probe.Result, dev string, flags int, lba uint32, nblk, bs int, mark string, compat bool) {
	fd, err := unix.Open(dev, flags, 0)
	if !r.Check(err, "open "+dev) {
		return
	}
	defer unix.Close(fd)
	// Everything below 4 GiB, for the int $0x80 entry.
	mem, err := page32(nblk*bs + 4096)
	if !r.Require(err, "mmap MAP_32BIT") {
		return
	}
	data := mem[:nblk*bs]
	copy(data, bytes.Repeat([]byte(mark), nblk*bs/len(mark)+1))
	cdb := mem[nblk*bs : nblk*bs+16]
	copy(cdb, []byte{0x2a, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	cdb = cdb[:10]
	binary.BigEndian.PutUint32(cdb[2:], lba)
	binary.BigEndian.PutUint16(cdb[7:], uint16(nblk))
	sense := mem[nblk*bs+64 : nblk*bs+128]
	var e syscall.Errno
	if strings.HasPrefix(dev, "/dev/bsg/") {
		// struct sg_io_v4 has the same layout for 32-bit callers.
		h := mem[nblk*bs+256 : nblk*bs+256+160]
		le := binary.LittleEndian
		le.PutUint32(h[0:], 'Q')
		le.PutUint32(h[12:], uint32(len(cdb)))
		le.PutUint64(h[16:], uint64(uintptr(unsafe.Pointer(&cdb[0]))))
		le.PutUint32(h[44:], uint32(len(sense)))
		le.PutUint64(h[48:], uint64(uintptr(unsafe.Pointer(&sense[0]))))
		le.PutUint32(h[60:], uint32(len(data)))
		le.PutUint64(h[72:], uint64(uintptr(unsafe.Pointer(&data[0]))))
		le.PutUint32(h[88:], 20000)
		if compat {
			compatIoctl(r, fd, sgIO, unsafe.Pointer(&h[0]))
			e = r.Errno
		} else {
			e = ioctlPtr(fd, sgIO, unsafe.Pointer(&h[0]))
		}
		r.Out = fmt.Sprintf("driver=%d transport=%d device=%d", le.Uint32(h[108:]), le.Uint32(h[112:]), le.Uint32(h[116:]))
		if e == 0 && (le.Uint32(h[108:]) != 0 || le.Uint32(h[112:]) != 0 || le.Uint32(h[116:]) != 0) {
			r.Setup = "WRITE(10) failed in the device: " + r.Out
		}
	} else {
		if compat {
			r.Setup = "compat SG_IO is only implemented for bsg"
			return
		}
		var h [88]byte
		le := binary.LittleEndian
		le.PutUint32(h[0:], 'S')
		le.PutUint32(h[4:], uint32(0xfffffffe)) // SG_DXFER_TO_DEV (-2)
		h[8] = byte(len(cdb))
		h[9] = byte(len(sense))
		le.PutUint32(h[12:], uint32(len(data)))
		le.PutUint64(h[16:], uint64(uintptr(unsafe.Pointer(&data[0]))))
		le.PutUint64(h[24:], uint64(uintptr(unsafe.Pointer(&cdb[0]))))
		le.PutUint64(h[32:], uint64(uintptr(unsafe.Pointer(&sense[0]))))
		le.PutUint32(h[40:], 20000)
		e = ioctlPtr(fd, sgIO, unsafe.Pointer(&h[0]))
		r.Out = fmt.Sprintf("status=%d host=%d driver=%d", h[64], le.Uint16(h[68:]), le.Uint16(h[70:]))
		if e == 0 && (h[64] != 0 || le.Uint16(h[68:]) != 0 || le.Uint16(h[70:]) != 0) {
			r.Setup = "WRITE(10) failed in the device: " + r.Out
		}
	}
	r.Errno = e
}

func openFlags(mode string) int {
	if mode == "rw" {
		return unix.O_RDWR
	}
	return unix.O_RDONLY
}

// openRO opens a[0] read-only for an ioctl.
func openRO(r *probe.Result, path string) (int, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	return fd, r.Require(err, "open "+path+" read-only")
}

func init() {
	probe.RegisterAll(map[string]probe.Op{
		// open-rw PATH: open O_RDWR and close.
		"open-rw": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_RDWR, 0)
			if r.Check(err, "open "+a[0]) {
				unix.Close(fd)
			}
		},
		// write-dev PATH DATA: open O_WRONLY, write DATA.
		"write-dev": func(r *probe.Result, a []string) {
			fd, err := unix.Open(a[0], unix.O_WRONLY|unix.O_NOCTTY, 0)
			if !r.Check(err, "open "+a[0]) {
				return
			}
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte(a[1]))
			r.Check(err, "write "+a[0])
		},
		// pty-write: write through a new pty's slave; the master reads it.
		"pty-write": func(r *probe.Result, a []string) {
			m, s, err := probe.OpenPty(true)
			if !r.Require(err, "open pty") {
				return
			}
			_, err = unix.Write(s, []byte(sentData+"\n"))
			if !r.Check(err, "write pty slave") {
				return
			}
			b := make([]byte, 256)
			n, _ := unix.Read(m, b)
			r.Effect = n > 0 && bytes.Contains(b[:n], []byte(sentData))
		},
		// uinput-create NAME: a virtual keyboard (open, setup, create).
		"uinput-create": func(r *probe.Result, a []string) { uinputCreate(r, "/dev/uinput", a[0]) },
		// sg-write DEV ro|rw LBA NBLK BS MARK: SCSI WRITE(10) via SG_IO.
		"sg-write": func(r *probe.Result, a []string) {
			lba, _ := strconv.ParseUint(a[2], 10, 32)
			nblk, _ := strconv.Atoi(a[3])
			bs, _ := strconv.Atoi(a[4])
			sgWrite(r, a[0], openFlags(a[1]), uint32(lba), nblk, bs, a[5], len(a) > 6 && a[6] == "compat")
		},

		// Ioctls on a file opened read-only.
		// setflags PATH FLAGS / setflags-compat PATH FLAGS: add FLAGS
		// (FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS through int $0x80).
		"setflags": func(r *probe.Result, a []string) {
			fd, ok := openRO(r, a[0])
			if !ok {
				return
			}
			defer unix.Close(fd)
			add, _ := strconv.ParseUint(a[1], 0, 32)
			old, err := unix.IoctlGetUint32(fd, fsIOCGetflags)
			if !r.Require(err, "FS_IOC_GETFLAGS") {
				return
			}
			v := uint64(old) | add
			r.Errno = ioctlPtr(fd, fsIOCSetflags, unsafe.Pointer(&v))
		},
		"setflags-compat": func(r *probe.Result, a []string) {
			fd, ok := openRO(r, a[0])
			if !ok {
				return
			}
			defer unix.Close(fd)
			add, _ := strconv.ParseUint(a[1], 0, 32)
			old, err := unix.IoctlGetUint32(fd, fsIOCGetflags)
			if !r.Require(err, "FS_IOC_GETFLAGS") {
				return
			}
			p, err := page32(4)
			if !r.Require(err, "mmap MAP_32BIT") {
				return
			}
			binary.LittleEndian.PutUint32(p, old|uint32(add))
			compatIoctl(r, fd, fsIOC32Setflags, unsafe.Pointer(&p[0]))
		},
		// setflags64-compat PATH FLAGS: the 64-bit FS_IOC_SETFLAGS number
		// through int $0x80 (compat_sys_ioctl passes it on unchanged).
		"setflags64-compat": func(r *probe.Result, a []string) {
			fd, ok := openRO(r, a[0])
			if !ok {
				return
			}
			defer unix.Close(fd)
			add, _ := strconv.ParseUint(a[1], 0, 32)
			old, err := unix.IoctlGetUint32(fd, fsIOCGetflags)
			if !r.Require(err, "FS_IOC_GETFLAGS") {
				return
			}
			p, err := page32(8)
			if !r.Require(err, "mmap MAP_32BIT") {
				return
			}
			binary.LittleEndian.PutUint32(p, old|uint32(add))
			compatIoctl(r, fd, fsIOCSetflags, unsafe.Pointer(&p[0]))
		},
		// fssetxattr PATH XFLAGS / fssetxattr-compat PATH XFLAGS: add
		// XFLAGS to fsx_xflags (FS_IOC_FSSETXATTR, native or int $0x80).
		"fssetxattr": func(r *probe.Result, a []string) { fssetxattr(r, a, false) },
		"fssetxattr-compat": func(r *probe.Result, a []string) {
			fssetxattr(r, a, true)
		},
		// getflags-compat PATH: FS_IOC32_GETFLAGS through int $0x80.
		"getflags-compat": func(r *probe.Result, a []string) {
			fd, ok := openRO(r, a[0])
			if !ok {
				return
			}
			defer unix.Close(fd)
			p, err := page32(4)
			if !r.Require(err, "mmap MAP_32BIT") {
				return
			}
			compatIoctl(r, fd, fsIOC32Getflags, unsafe.Pointer(&p[0]))
		},
		// ioctl-read PATH NAME: a read-only ioctl on a read-only descriptor.
		"ioctl-read": func(r *probe.Result, a []string) {
			fd, ok := openRO(r, a[0])
			if !ok {
				return
			}
			defer unix.Close(fd)
			buf := make([]byte, 4096)
			var cmd uintptr
			switch a[1] {
			case "FS_IOC_GETFLAGS":
				cmd = fsIOCGetflags
			case "FIONREAD":
				cmd = 0x541b // FIONREAD
			case "FIGETBSZ":
				cmd = figetbsz
			case "FS_IOC_FIEMAP":
				cmd = fsIOCFiemap
				binary.LittleEndian.PutUint64(buf[8:], ^uint64(0)) // fm_length
				binary.LittleEndian.PutUint32(buf[24:], 16)        // fm_extent_count
			case "FS_IOC_GETVERSION":
				cmd = fsIOCGetversion
			case "TCGETS":
				cmd = unix.TCGETS
			default:
				r.Setup = "unknown ioctl " + a[1]
				return
			}
			r.Errno = ioctlPtr(fd, cmd, unsafe.Pointer(&buf[0]))
		},
		// enable-verity PATH: FS_IOC_ENABLE_VERITY (sha256, 4 KiB blocks)
		// on a read-only descriptor: the file is sealed for ever.
		// enable-verity PATH [compat]: also through int $0x80.
		"enable-verity": func(r *probe.Result, a []string) {
			fd, ok := openRO(r, a[0])
			if !ok {
				return
			}
			defer unix.Close(fd)
			arg, err := page32(128)
			if !r.Require(err, "mmap MAP_32BIT") {
				return
			}
			binary.LittleEndian.PutUint32(arg[0:], 1)    // version
			binary.LittleEndian.PutUint32(arg[4:], 1)    // FS_VERITY_HASH_ALG_SHA256
			binary.LittleEndian.PutUint32(arg[8:], 4096) // block_size
			if len(a) > 1 && a[1] == "compat" {
				compatIoctl(r, fd, fsIOCEnableVerity, unsafe.Pointer(&arg[0]))
				return
			}
			r.Errno = ioctlPtr(fd, fsIOCEnableVerity, unsafe.Pointer(&arg[0]))
		},
		// move-ext: EXT4_IOC_MOVE_EXT of block 0 from the donor (fd 4) into
		// the file at fd 3, both writable descriptors from outside.
		"move-ext": func(r *probe.Result, a []string) {
			var me [40]byte
			binary.LittleEndian.PutUint32(me[4:], 4) // donor_fd
			binary.LittleEndian.PutUint64(me[24:], 1)
			r.Errno = ioctlPtr(probe.InheritedFD, ext4IOCMoveExt, unsafe.Pointer(&me[0]))
			r.Out = fmt.Sprintf("moved %d", binary.LittleEndian.Uint64(me[32:]))
		},

		// Metadata of an existing inode (any type, never followed).
		"lchmod": func(r *probe.Result, a []string) {
			r.Check(unix.Fchmodat(unix.AT_FDCWD, a[0], 0o777, 0), "chmod")
		},
		"lchown": func(r *probe.Result, a []string) { r.Check(unix.Lchown(a[0], 4242, 4242), "lchown") },
		"lutimes": func(r *probe.Result, a []string) {
			ts := []unix.Timespec{{Sec: 1000}, {Sec: 1000}}
			r.Check(unix.UtimesNanoAt(unix.AT_FDCWD, a[0], ts, unix.AT_SYMLINK_NOFOLLOW), "utimensat")
		},
		// set-acl PATH: system.posix_acl_access granting uid 4242 rwx.
		"set-acl": func(r *probe.Result, a []string) {
			r.Check(unix.Lsetxattr(a[0], "system.posix_acl_access", aclBlob(), 0), "setxattr system.posix_acl_access")
		},
	})
}

// aclBlob: u::rwx, u:4242:rwx, g::r-x, m::rwx, o::r-x (posix_acl_xattr v2).
func aclBlob() []byte {
	b := []byte{2, 0, 0, 0}
	for _, e := range [][3]uint32{{0x01, 7, 0xffffffff}, {0x02, 7, 4242}, {0x04, 5, 0xffffffff}, {0x10, 7, 0xffffffff}, {0x20, 5, 0xffffffff}} {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

func fssetxattr(r *probe.Result, a []string, compat bool) {
	fd, ok := openRO(r, a[0])
	if !ok {
		return
	}
	defer unix.Close(fd)
	add, _ := strconv.ParseUint(a[1], 0, 32)
	p, err := page32(28)
	if !r.Require(err, "mmap MAP_32BIT") {
		return
	}
	if e := ioctlPtr(fd, fsIOCFsgetxattr, unsafe.Pointer(&p[0])); e != 0 {
		r.Setup = "FS_IOC_FSGETXATTR: " + e.Error()
		return
	}
	binary.LittleEndian.PutUint32(p, binary.LittleEndian.Uint32(p)|uint32(add))
	if compat {
		compatIoctl(r, fd, fsIOCFssetxattr, unsafe.Pointer(&p[0]))
		return
	}
	r.Errno = ioctlPtr(fd, fsIOCFssetxattr, unsafe.Pointer(&p[0]))
}

// uinputCreate speaks /dev/uinput's protocol through the device node at
// path: a virtual keyboard named name (UI_SET_EVBIT, UI_SET_KEYBIT,
// UI_DEV_SETUP, UI_DEV_CREATE). Effect: name is an input device of the
// host.
func uinputCreate(r *probe.Result, path, name string) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if !r.Check(err, "open "+path) {
		return
	}
	defer unix.Close(fd)
	if !r.Check(unix.IoctlSetInt(fd, uiSetEvbit, 1 /* EV_KEY */), "UI_SET_EVBIT") {
		return
	}
	if !r.Check(unix.IoctlSetInt(fd, uiSetKeybit, 30 /* KEY_A */), "UI_SET_KEYBIT") {
		return
	}
	var us [92]byte
	binary.LittleEndian.PutUint16(us[0:], 0x06) // BUS_VIRTUAL
	copy(us[8:88], name)
	if e := ioctlPtr(fd, uiDevSetup, unsafe.Pointer(&us[0])); e != 0 {
		r.Errno = e
		return
	}
	if e := ioctlPtr(fd, uiDevCreate, nil); e != 0 {
		r.Errno = e
		return
	}
	b, _ := os.ReadFile("/proc/bus/input/devices")
	r.Effect = bytes.Contains(b, []byte(name))
}
