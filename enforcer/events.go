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

// Object kinds: enum object_kind of bpf/event.h, through bpf2go.
const (
	ObjectNone   = ObjectKind(bpf.SharedObjectKindOBJ_NONE)       // ID: the request's argument, if any
	ObjectFile   = ObjectKind(bpf.SharedObjectKindOBJ_FILE)       // Path, Dev, Ino, Mode
	ObjectSocket = ObjectKind(bpf.SharedObjectKindOBJ_SOCKET)     // Family ... Port; Ino: a unix peer
	ObjectTask   = ObjectKind(bpf.SharedObjectKindOBJ_TASK)       // ID: the target process id
	ObjectCgroup = ObjectKind(bpf.SharedObjectKindOBJ_CGROUP)     // ID: the target cgroup id
	ObjectBPFCmd = ObjectKind(bpf.SharedObjectKindOBJ_BPF_CMD)    // ID: the bpf() command
	ObjectMount  = ObjectKind(bpf.SharedObjectKindOBJ_MOUNT)      // no object
	ObjectCap    = ObjectKind(bpf.SharedObjectKindOBJ_CAPABILITY) // ID: the capability number
	ObjectFS     = ObjectKind(bpf.SharedObjectKindOBJ_FSMAGIC)    // ID: the filesystem magic
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
	// Ino is the inode number of a file (ObjectFile), or of the peer of a
	// unix socket created outside the sandbox (ObjectSocket); else 0.
	Ino  uint64
	Mode uint32
	// Sockets: address family, type and protocol; destination for
	// connect/send (invalid Addr when none).
	Family   uint16
	SockType uint32
	Protocol uint32
	Addr     netip.Addr
	Port     uint16
	// ID is the number of an object that is not a file or socket; Kind
	// says what it counts: a process id (ObjectTask), a cgroup id
	// (ObjectCgroup), a bpf() command (ObjectBPFCmd), a capability
	// (ObjectCap), a filesystem magic (ObjectFS). With ObjectNone it is
	// the request's argument where the hook records one (the ioctl
	// request of HookTTYIoctl, an IPC id, a key serial, the rlimit
	// resource), else 0. The record's one object_id field holds it or Ino.
	ID uint64
}

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
		} else if o.Family == unix.AF_UNIX && o.Ino != 0 {
			s += fmt.Sprintf(" peer socket ino %d (created outside the sandbox)", o.Ino)
		}
		return s
	case ObjectTask:
		if int64(o.ID) < 0 { // an owner in F_SETOWN's convention
			return fmt.Sprintf("process group %d (outside the sandbox)", -int64(o.ID))
		}
		return fmt.Sprintf("pid %d (outside the sandbox)", o.ID)
	case ObjectCgroup:
		return fmt.Sprintf("cgroup id %d (outside the sandbox)", o.ID)
	case ObjectBPFCmd:
		return fmt.Sprintf("bpf command %d", o.ID)
	case ObjectMount:
		return "mount table"
	case ObjectFS:
		if n, ok := fsNames[o.ID]; ok {
			return n
		}
		return fmt.Sprintf("filesystem 0x%x", o.ID)
	case ObjectCap:
		if n, ok := capNames[o.ID]; ok {
			return n
		}
		return fmt.Sprintf("capability %d", o.ID)
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
	// Field is the part of the ceiling that decided, from the record's
	// deny bit (bpf/maps.h): "network", "write", "shell" (shell=none or
	// shell=read_only; the write denial of a process a read_only shell
	// exec'd reads "write"), or "tamper" (the escape and host-state
	// protections every registration implies); "" for a bit this build
	// does not know.
	Field string
	// Rule is the protection that decided (a closed set: AllRules), from
	// the record's rule id, or its deny bit's field rule.
	Rule   Rule
	Object Object
	// operation is what was attempted as the rule refines it ("" : the
	// hook's).
	operation string
	// Key identifies the distinct denial this record is the first of (in
	// its summary interval, Tally): its Summary has the same Key.
	Key DenialKey
}

// Operation is what was attempted ("connect", "create", "open-for-write"):
// the hook's operation, or the rule's where it says more (a write at
// file_permission to /dev/kmsg reads "write-kernel-log").
func (d Denial) Operation() string {
	if d.operation != "" {
		return d.operation
	}
	return d.Hook.Operation()
}

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
	var ev bpf.SharedEvent
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
		Audited:         ev.Decision == uint16(bpf.SharedDecisionDECISION_AUDITED),
		Errno:           syscall.Errno(ev.Err),
		Field:           fieldOf(ev.DenyBit),
		Object: objectOf(ObjectKind(ev.ObjectKind), ev.Dev, ev.ObjectId, ev.Mode,
			ev.Family, ev.SockType, ev.Protocol, ev.Port, ev.Addr),
		Key: keyOf(&ev),
	}
	d.Rule, d.operation = ruleOf(d.Hook, ev.DenyBit)
	d.Object.Path = joinNames(ev.Names)
	return d, nil
}

// keyOf is the tally key of a record (bpf/event.h tally_key_fill).
func keyOf(ev *bpf.SharedEvent) DenialKey {
	h := uint64(0xcbf29ce484222325)
	var b [8]byte
	for i := range ev.Names {
		for j := 0; j < len(ev.Names[i]); j += 8 {
			for k := range b {
				b[k] = byte(ev.Names[i][j+k])
			}
			h = (h ^ binary.NativeEndian.Uint64(b[:])) * 0x100000001b3
		}
	}
	return DenialKey{
		CeilingCgroupId: ev.CeilingCgroupId, ObjectId: ev.ObjectId, NamesHash: h, Dev: ev.Dev,
		Hook: ev.Hook, Decision: ev.Decision, DenyBit: ev.DenyBit, ObjectKind: ev.ObjectKind,
		SockType: ev.SockType, Protocol: ev.Protocol, Family: ev.Family, Port: ev.Port, Addr: ev.Addr,
	}
}

// fieldOf names the part of the ceiling a deny bit stands for (Denial.Field);
// the rule id above ruleShift is not part of it.
func fieldOf(bit uint32) string {
	switch bit & (1<<ruleShift - 1) {
	case denyNetwork:
		return "network"
	case denyWrite:
		return "write"
	case denyShell, denyShellWrite:
		return "shell"
	case denyTamper:
		return "tamper"
	}
	return ""
}

// objectOf decodes the object fields of a record or tally key (no Path).
func objectOf(kind ObjectKind, dev uint32, id uint64, mode uint32, family uint16, sockType, protocol uint32, port uint16, addr [16]uint8) Object {
	o := Object{Kind: kind, Dev: dev, Mode: mode, Family: family, SockType: sockType, Protocol: protocol, Port: port}
	// One field of the record, object_id, is the inode of a file or
	// socket, or the number of any other object.
	switch kind {
	case ObjectFile, ObjectSocket:
		o.Ino = id
	default:
		o.ID = id
	}
	if kind == ObjectSocket {
		switch family {
		case unix.AF_INET:
			if a := netip.AddrFrom4([4]byte(addr[:4])); !a.IsUnspecified() || port != 0 {
				o.Addr = a
			}
		case unix.AF_INET6:
			if a := netip.AddrFrom16(addr); !a.IsUnspecified() || port != 0 {
				o.Addr = a
			}
		}
	}
	return o
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
