package enforcer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/bpf"
)

// ObjectKind says which fields of Object are set.
type ObjectKind uint32

// Object kinds (OBJ_* in bpf/enforcerd.h).
const (
	ObjectNone   ObjectKind = 0
	ObjectFile   ObjectKind = 1
	ObjectSocket ObjectKind = 2
	ObjectTask   ObjectKind = 3 // Ino holds the target process id
	ObjectCgroup ObjectKind = 4 // Ino holds the target cgroup id
	ObjectBPFCmd ObjectKind = 5 // Ino holds the bpf() command
	ObjectMount  ObjectKind = 6 // no object
	ObjectCap    ObjectKind = 7 // Ino holds the capability number
	ObjectFS     ObjectKind = 8 // Ino holds the filesystem magic
)

// Object is what a denied operation targeted.
type Object struct {
	Kind ObjectKind
	// Files: the last (up to 4) components of the path within the file's
	// own filesystem, "/"-joined from that filesystem's root (so /tmp/x on
	// a tmpfs mounted at /tmp reads "/x"; the programs walk d_parent, as
	// bpf_d_path is not allowed in these hooks); device and inode of the
	// target (0 when it did not exist yet, e.g. a create).
	Path string
	Dev  uint32 // kernel dev_t (major<<20 | minor)
	Ino  uint64
	Mode uint32
	// Sockets: address family, type and protocol; destination for
	// connect/send (invalid Addr when none).
	Family   uint16
	SockType uint32
	Protocol uint32
	Addr     netip.Addr
	Port     uint16
}

var familyNames = map[uint16]string{
	1: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK", 17: "AF_PACKET",
	38: "AF_ALG", 40: "AF_VSOCK", 3: "AF_AX25", 4: "AF_IPX", 5: "AF_APPLETALK",
	29: "AF_CAN", 30: "AF_TIPC", 31: "AF_BLUETOOTH", 41: "AF_KCM", 42: "AF_QIPCRTR",
	43: "AF_SMC", 44: "AF_XDP", 45: "AF_MCTP",
}

var capNames = map[uint64]string{
	2: "CAP_DAC_READ_SEARCH", 12: "CAP_NET_ADMIN", 25: "CAP_SYS_TIME", 26: "CAP_SYS_TTY_CONFIG", 27: "CAP_MKNOD", 34: "CAP_SYSLOG", 16: "CAP_SYS_MODULE", 17: "CAP_SYS_RAWIO", 21: "CAP_SYS_ADMIN",
	22: "CAP_SYS_BOOT", 32: "CAP_MAC_OVERRIDE", 33: "CAP_MAC_ADMIN", 38: "CAP_PERFMON", 39: "CAP_BPF",
}

var fsNames = map[uint64]string{
	0x27e0eb: "cgroup v1", 0x9fa0: "/proc/sys or sysrq", 0x62656572: "sysfs", 0x73636673: "securityfs",
	0x64626720: "debugfs", 0x74726163: "tracefs", 0x62656570: "configfs", 0xde5e81e4: "efivarfs",
	0x6165676c: "pstore", 0x63677270: "cgroup2",
}

var sockTypeNames = map[uint32]string{1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 5: "SOCK_SEQPACKET"}

// String renders the object for humans: a path (or dev+inode), or
// "AF_INET SOCK_STREAM 127.0.0.1:80".
func (o Object) String() string {
	switch o.Kind {
	case ObjectFile:
		id := ""
		if o.Ino != 0 {
			id = fmt.Sprintf(" (dev %d:%d ino %d)", o.Dev>>20, o.Dev&0xfffff, o.Ino)
		}
		if o.Path == "" {
			return "inode" + id
		}
		return o.Path + id
	case ObjectSocket:
		fam, ok := familyNames[o.Family]
		if !ok {
			fam = fmt.Sprintf("family %d", o.Family)
		}
		s := fam
		if t, ok := sockTypeNames[o.SockType&0xf]; ok {
			s += " " + t
		}
		if o.Addr.IsValid() {
			s += " " + netip.AddrPortFrom(o.Addr, o.Port).String()
		} else if o.Family == 1 && o.Ino != 0 {
			s += fmt.Sprintf(" peer socket ino %d (created outside the sandbox)", o.Ino)
		}
		return s
	case ObjectTask:
		return fmt.Sprintf("pid %d (outside the sandbox)", o.Ino)
	case ObjectCgroup:
		return fmt.Sprintf("cgroup id %d (outside the sandbox)", o.Ino)
	case ObjectBPFCmd:
		return fmt.Sprintf("bpf command %d", o.Ino)
	case ObjectMount:
		return "mount table"
	case ObjectFS:
		if n, ok := fsNames[o.Ino]; ok {
			return n
		}
		return fmt.Sprintf("filesystem 0x%x", o.Ino)
	case ObjectCap:
		if n, ok := capNames[o.Ino]; ok {
			return n
		}
		return fmt.Sprintf("capability %d", o.Ino)
	}
	return "-"
}

// Denial is one record from the kernel: an operation denied (or, under an
// audit-only ceiling, one that would have been).
type Denial struct {
	Time            time.Time // wall clock, converted from CLOCK_BOOTTIME
	CgroupID        uint64    // the process's own cgroup
	CeilingCgroupID uint64    // the registered cgroup whose ceiling decided
	PID             uint32    // thread id
	TGID            uint32    // process id
	UID             uint32
	Comm            string
	Hook            Hook
	Audited         bool          // true: audit-only, the operation was allowed
	Errno           syscall.Errno // returned to the process (0 when audited)
	Field           string        // the ceiling field: "network" or "write"
	Object          Object
}

// Operation is what was attempted ("connect", "create", "open-for-write").
func (d Denial) Operation() string { return d.Hook.Operation() }

// Decision is "denied" or "audited".
func (d Denial) Decision() string {
	if d.Audited {
		return "audited"
	}
	return "denied"
}

// Reader reads denial records from the pinned ring buffer. The ring buffer
// has one consumer at a time in practice: two readers split the records.
type Reader struct {
	rd *ringbuf.Reader
}

// ErrClosed is returned by Read after Close.
var ErrClosed = os.ErrClosed

// NewReader opens a reader on the denial ring buffer.
func (e *Enforcer) NewReader() (*Reader, error) {
	rd, err := ringbuf.NewReader(e.events)
	if err != nil {
		return nil, fmt.Errorf("open denial ring buffer: %w", err)
	}
	return &Reader{rd: rd}, nil
}

// Flush makes a blocked Read return every record already in the ring buffer
// and then ErrFlushed. Records are written synchronously by the hook, so
// after a process exited all of its records are in the ring.
func (r *Reader) Flush() error { return r.rd.Flush() }

// ErrFlushed is returned by Read once the records present at Flush are read.
var ErrFlushed = ringbuf.ErrFlushed

// Read blocks for the next record. Errors: ErrClosed after Close,
// ErrFlushed after Flush.
func (r *Reader) Read() (Denial, error) {
	rec, err := r.rd.Read()
	if err != nil {
		if errors.Is(err, ringbuf.ErrClosed) {
			return Denial{}, ErrClosed
		}
		return Denial{}, err
	}
	return decodeEvent(rec.RawSample)
}

// Close unblocks Read.
func (r *Reader) Close() error { return r.rd.Close() }

func decodeEvent(raw []byte) (Denial, error) {
	var ev bpf.NetworkEvent
	if err := binary.Read(bytes.NewReader(raw), binary.NativeEndian, &ev); err != nil {
		return Denial{}, fmt.Errorf("decode denial record (%d bytes): %w", len(raw), err)
	}
	d := Denial{
		Time:            bootToWall(ev.TimeNs),
		CgroupID:        ev.CgroupId,
		CeilingCgroupID: ev.CeilingCgroupId,
		PID:             ev.Pid,
		TGID:            ev.Tgid,
		UID:             ev.Uid,
		Comm:            cString(ev.Comm[:]),
		Hook:            Hook(ev.Hook),
		Audited:         ev.Decision == 2,
		Errno:           syscall.Errno(ev.Err),
		Object: Object{
			Kind: ObjectKind(ev.ObjectKind), Dev: ev.Dev, Ino: ev.Ino, Mode: ev.Mode,
			Family: ev.Family, SockType: ev.SockType, Protocol: ev.Protocol, Port: ev.Port,
		},
	}
	switch ev.DenyBit {
	case denyNetwork:
		d.Field = "network"
	case denyWrite:
		d.Field = "write"
	case denyShell, denyShellWrite:
		d.Field = "shell"
	case denyTamper:
		d.Field = "tamper"
	}
	d.Object.Path = joinNames(ev.Names)
	if d.Object.Kind == ObjectSocket {
		switch {
		case d.Object.Family == 2:
			if a := netip.AddrFrom4([4]byte(ev.Addr[:4])); !a.IsUnspecified() || d.Object.Port != 0 {
				d.Object.Addr = a
			}
		case d.Object.Family == 10:
			if a := netip.AddrFrom16(ev.Addr); !a.IsUnspecified() || d.Object.Port != 0 {
				d.Object.Addr = a
			}
		}
	}
	return d, nil
}

// joinNames turns the leaf-first path components of a record into a path:
// "/etc/passwd" when the walk reached the filesystem root, else
// ".../a/b/name". The path is relative to the file's filesystem, not to the
// process's mount namespace (bpf_d_path is not allowed in these hooks).
func joinNames(names [4][64]int8) string {
	var parts []string
	root := false
	for _, n := range names {
		b := make([]byte, 0, len(n))
		for _, c := range n {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		if len(b) == 0 {
			break
		}
		if string(b) == "/" {
			root = true
			break
		}
		parts = append(parts, string(b))
	}
	if len(parts) == 0 {
		if root {
			return "/"
		}
		return ""
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	p := strings.Join(parts, "/")
	if root {
		return "/" + p
	}
	return ".../" + p
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func bootToWall(bootNS uint64) time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Now()
	}
	now := time.Now()
	return now.Add(-time.Duration(ts.Nano() - int64(bootNS)))
}
