package escapetest

// Probe operations on a socket inherited from outside (fd 3: receiving,
// sending and changing it, directly and through io_uring), on one end of a
// socketpair made inside (selfpair), and on tun devices (N1, N3, N4).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
)

// peerData is what the test's peer sends before a receiving probe runs;
// sentData is what a sending probe sends.
const (
	peerData = "PEERDATA-escapetest"
	sentData = "PWNED-escapetest"
)

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

// uringSend submits op (IORING_OP_WRITE or _SEND) of sentData on fd 3.
func uringSend(r *probe.Result, op uint8) {
	ring, err := probe.NewRing()
	if !r.Require(err, "io_uring") {
		return
	}
	defer ring.Close()
	buf := []byte(sentData)
	_, err = ring.Do(probe.SQE{Op: op, FD: probe.InheritedFD, Addr: probe.Ptr(buf), Len: uint32(len(buf))})
	runtime.KeepAlive(buf)
	r.Check(err, "io_uring")
}

// uringRecv submits op (IORING_OP_READ or _RECV) on fd 3 once the peer's
// data is there.
func uringRecv(r *probe.Result, op uint8) {
	if !waitIn(r) {
		return
	}
	ring, err := probe.NewRing()
	if !r.Require(err, "io_uring") {
		return
	}
	defer ring.Close()
	buf := make([]byte, 256)
	n, err := ring.Do(probe.SQE{Op: op, FD: probe.InheritedFD, Addr: probe.Ptr(buf), Len: uint32(len(buf))})
	runtime.KeepAlive(buf)
	if r.Check(err, "io_uring") {
		got(r, buf[:n])
	}
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
		"fd-uring-read": func(r *probe.Result, a []string) { uringRecv(r, probe.UringRead) },
		"fd-uring-recv": func(r *probe.Result, a []string) { uringRecv(r, probe.UringRecv) },
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
		"fd-uring-write": func(r *probe.Result, a []string) { uringSend(r, probe.UringWrite) },
		"fd-uring-send":  func(r *probe.Result, a []string) { uringSend(r, probe.UringSend) },
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
		// pair-out: an AF_UNIX stream socketpair made in this probe's
		// cgroup (its sockets record that cgroup), both ends sent back
		// over fd 3 (SCM_RIGHTS) to the test, which passes them on.
		"pair-out": func(r *probe.Result, a []string) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if !r.Require(err, "socketpair") {
				return
			}
			err = unix.Sendmsg(probe.InheritedFD, []byte("p"), unix.UnixRights(fds[0], fds[1]), nil, 0)
			if r.Require(err, "sendmsg SCM_RIGHTS") {
				r.Effect = true
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
	})
}
