package escapetest

// Probe ops of the second bypass round: descriptors inherited from outside
// (fd 3), network-class devices, ioctls that modify files (native and the
// 32-bit compat entry), metadata of special inodes, and writes through
// character devices (raw SCSI passthrough).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/internal/probe"
)

// peerData is what the test's peer sends before a receiving probe runs;
// sentData is what a sending probe sends.
const (
	peerData = "PEERDATA-escapetest"
	sentData = "PWNED-escapetest"
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

// waitIn waits until the inherited socket has data to read (poll is no
// read and no LSM hook sees it).
func waitIn(r *probe.Result) bool {
	fds := []unix.PollFd{{Fd: probe.InheritedFD, Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 3000)
	if err != nil || n != 1 {
		r.Setup = fmt.Sprintf("fd 3: no data from the peer to receive (poll %d %v)", n, err)
		return false
	}
	return true
}

// got records what a receiving probe obtained.
func got(r *probe.Result, b []byte) {
	r.Out = string(b)
	r.Effect = bytes.Contains(b, []byte(peerData))
}

// A minimal io_uring (one ring, one request at a time; raw syscalls).
type uring struct {
	fd           int
	p            uringParams
	sq, cq, sqes []byte
}

type uringParams struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQHead, SQTail, SQRingMask, SQRingEntries, SQFlags, SQDropped, SQArray uint32
	SQResv1                                                                uint32
	SQUserAddr                                                             uint64
	CQHead, CQTail, CQRingMask, CQRingEntries, CQOverflow, CQCQEs, CQFlags uint32
	CQResv1                                                                uint32
	CQUserAddr                                                             uint64
}

const (
	uringOpRead  = 22
	uringOpWrite = 23
	uringOpSend  = 26
	uringOpRecv  = 27
)

func newUring() (*uring, error) {
	u := &uring{}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&u.p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("io_uring_setup: %v", e)
	}
	u.fd = int(fd)
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if u.sq, err = unix.Mmap(u.fd, 0, int(u.p.SQArray+u.p.SQEntries*4), prot, flags); err != nil {
		return nil, fmt.Errorf("mmap SQ ring: %v", err)
	}
	if u.cq, err = unix.Mmap(u.fd, 0x8000000, int(u.p.CQCQEs+u.p.CQEntries*16), prot, flags); err != nil {
		return nil, fmt.Errorf("mmap CQ ring: %v", err)
	}
	if u.sqes, err = unix.Mmap(u.fd, 0x10000000, int(u.p.SQEntries*64), prot, flags); err != nil {
		return nil, fmt.Errorf("mmap SQEs: %v", err)
	}
	return u, nil
}

func (u *uring) u32(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }

// do submits op on fd with buffer buf and returns the CQE result.
func (u *uring) do(op uint8, fd int, buf []byte) (int32, error) {
	tail := atomic.LoadUint32(u.u32(u.sq, u.p.SQTail))
	idx := tail & *u.u32(u.sq, u.p.SQRingMask)
	e := u.sqes[idx*64 : idx*64+64]
	clear(e)
	e[0] = op
	binary.LittleEndian.PutUint32(e[4:], uint32(fd))
	binary.LittleEndian.PutUint64(e[16:], uint64(uintptr(unsafe.Pointer(&buf[0]))))
	binary.LittleEndian.PutUint32(e[24:], uint32(len(buf)))
	*u.u32(u.sq, u.p.SQArray+idx*4) = idx
	atomic.StoreUint32(u.u32(u.sq, u.p.SQTail), tail+1)
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), 1, 1, 1 /* GETEVENTS */, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, fmt.Errorf("io_uring_enter: %v", errno)
		}
		break
	}
	runtime.KeepAlive(buf)
	head := atomic.LoadUint32(u.u32(u.cq, u.p.CQHead))
	if head == atomic.LoadUint32(u.u32(u.cq, u.p.CQTail)) {
		return 0, fmt.Errorf("io_uring: no completion")
	}
	off := u.p.CQCQEs + (head&*u.u32(u.cq, u.p.CQRingMask))*16
	res := int32(binary.LittleEndian.Uint32(u.cq[off+8:]))
	atomic.StoreUint32(u.u32(u.cq, u.p.CQHead), head+1)
	return res, nil
}

func uringSend(r *probe.Result, op uint8) {
	u, err := newUring()
	if !r.Require(err, "io_uring") {
		return
	}
	n, err := u.do(op, probe.InheritedFD, []byte(sentData))
	if !r.Require(err, "io_uring") {
		return
	}
	if n < 0 {
		r.Errno = syscall.Errno(-n)
	}
}

func uringRecv(r *probe.Result, op uint8) {
	if !waitIn(r) {
		return
	}
	u, err := newUring()
	if !r.Require(err, "io_uring") {
		return
	}
	buf := make([]byte, 256)
	n, err := u.do(op, probe.InheritedFD, buf)
	if !r.Require(err, "io_uring") {
		return
	}
	if n < 0 {
		r.Errno = syscall.Errno(-n)
		return
	}
	got(r, buf[:n])
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

func ipChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for s>>16 != 0 {
		s = (s & 0xffff) + s>>16
	}
	return ^uint16(s)
}

// udpPacket is an IPv4/UDP datagram src -> dst:port carrying payload.
func udpPacket(src, dst string, port int, payload string) []byte {
	p := make([]byte, 28+len(payload))
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	binary.BigEndian.PutUint16(p[6:], 0x4000)
	p[8] = 64
	p[9] = unix.IPPROTO_UDP
	copy(p[12:16], parseIP4(src))
	copy(p[16:20], parseIP4(dst))
	binary.BigEndian.PutUint16(p[10:], ipChecksum(p[:20]))
	binary.BigEndian.PutUint16(p[20:], 40000)
	binary.BigEndian.PutUint16(p[22:], uint16(port))
	binary.BigEndian.PutUint16(p[24:], uint16(8+len(payload)))
	copy(p[28:], payload)
	return p
}

func parseIP4(s string) []byte {
	b := make([]byte, 4)
	for i, f := range strings.SplitN(s, ".", 4) {
		n, _ := strconv.Atoi(f)
		b[i] = byte(n)
	}
	return b
}

// tunAttach opens /dev/net/tun with flags and attaches to tun device name.
func tunAttach(r *probe.Result, name string, flags int) (int, bool) {
	fd, err := unix.Open("/dev/net/tun", flags, 0)
	if !r.Check(err, "open /dev/net/tun") {
		return -1, false
	}
	var ifr [40]byte
	copy(ifr[:16], name)
	binary.LittleEndian.PutUint16(ifr[16:], iffTun|iffNoPI)
	if e := ioctlPtr(fd, tunSetIff, unsafe.Pointer(&ifr[0])); e != 0 {
		r.Errno = e
		unix.Close(fd)
		return -1, false
	}
	return fd, true
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
		// Inherited socket (fd 3): receiving.
		"fd-read": func(r *probe.Result, a []string) {
			if !waitIn(r) {
				return
			}
			b := make([]byte, 256)
			n, err := unix.Read(probe.InheritedFD, b)
			if r.Check(err, "read") {
				got(r, b[:n])
			}
		},
		"fd-readv": func(r *probe.Result, a []string) {
			if !waitIn(r) {
				return
			}
			b := make([]byte, 256)
			n, err := unix.Readv(probe.InheritedFD, [][]byte{b})
			if r.Check(err, "readv") {
				got(r, b[:n])
			}
		},
		"fd-splice": func(r *probe.Result, a []string) {
			if !waitIn(r) {
				return
			}
			var p [2]int
			if !r.Require(unix.Pipe(p[:]), "pipe") {
				return
			}
			n, err := unix.Splice(probe.InheritedFD, nil, p[1], nil, 256, unix.SPLICE_F_NONBLOCK)
			if !r.Check(err, "splice") {
				return
			}
			b := make([]byte, 256)
			m, _ := unix.Read(p[0], b[:n])
			got(r, b[:m])
		},
		"fd-uring-read": func(r *probe.Result, a []string) { uringRecv(r, uringOpRead) },
		"fd-uring-recv": func(r *probe.Result, a []string) { uringRecv(r, uringOpRecv) },
		// fd-zerocopy: getsockopt(TCP_ZEROCOPY_RECEIVE) with a copy
		// buffer: data shorter than a page is copied into it.
		"fd-zerocopy": func(r *probe.Result, a []string) {
			if !waitIn(r) {
				return
			}
			buf := make([]byte, 4096)
			var zc [64]byte
			binary.LittleEndian.PutUint64(zc[24:], uint64(uintptr(unsafe.Pointer(&buf[0]))))
			binary.LittleEndian.PutUint32(zc[32:], uint32(len(buf)))
			l := uint32(len(zc))
			_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, probe.InheritedFD, unix.IPPROTO_TCP, tcpZerocopyRecv,
				uintptr(unsafe.Pointer(&zc[0])), uintptr(unsafe.Pointer(&l)), 0)
			runtime.KeepAlive(buf)
			r.Errno = e
			if e == 0 {
				n := int32(binary.LittleEndian.Uint32(zc[32:]))
				if n < 0 || n > int32(len(buf)) {
					r.Setup = fmt.Sprintf("TCP_ZEROCOPY_RECEIVE copied %d", n)
					return
				}
				got(r, buf[:n])
			}
		},
		"fd-mmap": func(r *probe.Result, a []string) {
			m, err := unix.Mmap(probe.InheritedFD, 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
			if r.Check(err, "mmap") {
				unix.Munmap(m)
			}
		},
		"fd-fionread": func(r *probe.Result, a []string) {
			if !waitIn(r) {
				return
			}
			n, err := unix.IoctlGetInt(probe.InheritedFD, unix.SIOCINQ)
			if r.Check(err, "ioctl SIOCINQ") {
				r.Out = strconv.Itoa(n)
				r.Effect = n > 0
			}
		},
		// Inherited socket: sending and changing it.
		"fd-write": func(r *probe.Result, a []string) {
			_, err := unix.Write(probe.InheritedFD, []byte(sentData))
			r.Check(err, "write")
		},
		"fd-splice-out": func(r *probe.Result, a []string) {
			var p [2]int
			if !r.Require(unix.Pipe(p[:]), "pipe") {
				return
			}
			if _, err := unix.Write(p[1], []byte(sentData)); !r.Require(err, "write pipe") {
				return
			}
			_, err := unix.Splice(p[0], nil, probe.InheritedFD, nil, len(sentData), 0)
			r.Check(err, "splice")
		},
		"fd-uring-write": func(r *probe.Result, a []string) { uringSend(r, uringOpWrite) },
		"fd-uring-send":  func(r *probe.Result, a []string) { uringSend(r, uringOpSend) },
		"fd-sendfile": func(r *probe.Result, a []string) {
			in, err := unix.Open(a[0], unix.O_RDONLY, 0)
			if !r.Require(err, "open "+a[0]) {
				return
			}
			_, err = unix.Sendfile(probe.InheritedFD, in, nil, len(sentData))
			r.Check(err, "sendfile")
		},
		"fd-setsockopt": func(r *probe.Result, a []string) {
			r.Check(unix.SetsockoptInt(probe.InheritedFD, unix.SOL_SOCKET, unix.SO_PRIORITY, 6), "setsockopt SO_PRIORITY")
		},
		"fd-shutdown": func(r *probe.Result, a []string) {
			r.Check(unix.Shutdown(probe.InheritedFD, unix.SHUT_WR), "shutdown")
		},

		// selfpair OP: OP on one end (dup'ed to fd 3) of a socketpair made
		// inside the sandbox; Effect: OP's side effect seen at the other
		// end (or, for receiving ops, what OP reported).
		"selfpair": func(r *probe.Result, a []string) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if !r.Require(err, "socketpair") {
				return
			}
			// Both ends above fd 3 first: socketpair may return fd 3.
			peer, err := unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, 10)
			if !r.Require(err, "dup peer") {
				return
			}
			end, err := unix.FcntlInt(uintptr(fds[1]), unix.F_DUPFD_CLOEXEC, 10)
			if !r.Require(err, "dup end") {
				return
			}
			unix.Close(fds[0])
			unix.Close(fds[1])
			// The op runs in a child of this probe (same cgroup) that finds
			// the socket at fd 3 like an inherited one: this process's own
			// fd 3 may belong to the Go runtime.
			self, err := os.Executable()
			if !r.Require(err, "executable") {
				return
			}
			recv := a[1] == "recv"
			if recv {
				if _, err := unix.Write(peer, []byte(peerData)); !r.Require(err, "write peer") {
					return
				}
			}
			if a[0] == "fd-sendfile" {
				f, err := os.CreateTemp("", "selfpair")
				if !r.Require(err, "temp file") {
					return
				}
				f.WriteString(sentData)
				f.Close()
				defer os.Remove(f.Name())
				a = append(a, f.Name())
			}
			child := exec.Command(self)
			child.Env = append(probe.Env(a[0], a[2:]...), "PATH=/bin:/sbin:/usr/bin", "TMPDIR=/tmp")
			child.ExtraFiles = []*os.File{os.NewFile(uintptr(end), "selfpair-end")}
			out, err := child.Output()
			inner, jerr := probe.ParseResult(out)
			if jerr != nil {
				r.Setup = fmt.Sprintf("selfpair child %s: no result (%v): %q", a[0], err, out)
				return
			}
			*r = inner
			r.Op = "selfpair " + a[0]
			if recv || r.Errno != 0 || r.Setup != "" {
				return
			}
			switch a[0] {
			case "fd-setsockopt":
				v, _ := unix.GetsockoptInt(end, unix.SOL_SOCKET, unix.SO_PRIORITY)
				r.Effect = v == 6
			case "fd-shutdown":
				// Both ends stay open: only the shutdown ends the stream.
				b := make([]byte, 16)
				n, _, err := unix.Recvfrom(peer, b, unix.MSG_DONTWAIT)
				r.Effect = n == 0 && err == nil
			default:
				b := make([]byte, 256)
				n, _, _ := unix.Recvfrom(peer, b, unix.MSG_DONTWAIT)
				r.Effect = n > 0 && bytes.Contains(b[:n], []byte(sentData))
			}
		},
		// tun-inject NAME SRC DST PORT: attach to tun NAME (O_RDWR) and
		// write an IPv4/UDP datagram SRC -> DST:PORT into the host stack.
		"tun-inject": func(r *probe.Result, a []string) {
			fd, ok := tunAttach(r, a[0], unix.O_RDWR)
			if !ok {
				return
			}
			defer unix.Close(fd)
			port, _ := strconv.Atoi(a[3])
			_, err := unix.Write(fd, udpPacket(a[1], a[2], port, sentData))
			r.Check(err, "write to tun")
		},
		// tun-sniff NAME: attach to tun NAME read-only and read a packet
		// the host routes into it.
		"tun-sniff": func(r *probe.Result, a []string) {
			fd, ok := tunAttach(r, a[0], unix.O_RDONLY)
			if !ok {
				return
			}
			defer unix.Close(fd)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			deadline := time.Now().Add(5 * time.Second)
			b := make([]byte, 2048)
			for time.Now().Before(deadline) {
				if n, _ := unix.Poll(fds, 200); n != 1 {
					continue
				}
				n, err := unix.Read(fd, b)
				if !r.Check(err, "read from tun") {
					return
				}
				if bytes.Contains(b[:n], []byte(peerData)) {
					r.Effect = true
					return
				}
			}
			r.Setup = "no packet from the host arrived on the tun device"
		},
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
		"uinput-create": func(r *probe.Result, a []string) {
			fd, err := unix.Open("/dev/uinput", unix.O_WRONLY|unix.O_NONBLOCK, 0)
			if !r.Check(err, "open /dev/uinput") {
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
			copy(us[8:88], a[0])
			if e := ioctlPtr(fd, uiDevSetup, unsafe.Pointer(&us[0])); e != 0 {
				r.Errno = e
				return
			}
			if e := ioctlPtr(fd, uiDevCreate, nil); e != 0 {
				r.Errno = e
				return
			}
			b, _ := os.ReadFile("/proc/bus/input/devices")
			r.Effect = bytes.Contains(b, []byte(a[0]))
		},
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
