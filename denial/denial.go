// Package denial is the vocabulary of denial records: what the kernel
// programs report when they refuse an operation (Denial), the counts of
// distinct denials (Summary), and the closed sets that name them: hooks
// (Hook, enum hook_id of bpf/event.h), rules (Rule, enum rule_id) and
// object kinds (ObjectKind, enum object_kind). The numbers are the
// programs' own: enforcer decodes records into these types, and its tests
// and bpf/hooks_test.go check every number against the compiled objects.
//
// The package imports the standard library only: audit, metrics and
// status code name a denial without linking the BPF loader.
package denial

import (
	"fmt"
	"net/netip"
	"syscall"
	"time"
)

// ObjectKind says which fields of Object are set.
type ObjectKind uint32

// Object kinds: enum object_kind of bpf/event.h.
const (
	ObjectNone   ObjectKind = 0 // ID: the request's argument, if any
	ObjectFile   ObjectKind = 1 // Path, Dev, Ino, Mode
	ObjectSocket ObjectKind = 2 // Family ... Port; Ino: a unix peer
	ObjectTask   ObjectKind = 3 // ID: the target process id
	ObjectCgroup ObjectKind = 4 // ID: the target cgroup id
	ObjectBPFCmd ObjectKind = 5 // ID: the bpf() command
	ObjectMount  ObjectKind = 6 // no object
	ObjectCap    ObjectKind = 7 // ID: the capability number
	ObjectFS     ObjectKind = 8 // ID: the filesystem magic
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
		} else if o.Family == afUnix && o.Ino != 0 {
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
	// Key identifies the distinct denial this record is the first of (in
	// its summary interval, Tally): its Summary has the same Key.
	Key Key
}

// Operation is what was attempted ("connect", "create", "open-for-write"):
// the hook's operation, or the rule's where it says more (a write at
// file_permission to /dev/kmsg reads "write-kernel-log").
func (d Denial) Operation() string {
	return d.Rule.Operation(d.Hook)
}

// Decision is "denied" or "audited".
func (d Denial) Decision() string {
	if d.Audited {
		return "audited"
	}
	return "denied"
}

// Key identifies a distinct denial: the registered cgroup whose ceiling
// decided, the hook, decision and deny bit, and the object (for files also
// a hash of the recorded path components). The acting process is not part
// of it. Its fields are struct tally_key of bpf/tally.h, named as bpf2go
// names them: the kernel counts denials per key (enforcer.Tally) and sends
// only the first record of each key per summary interval through the ring
// buffer.
type Key struct {
	CeilingCgroupId uint64
	ObjectId        uint64
	NamesHash       uint64
	Dev             uint32
	Hook            uint16
	Decision        uint16
	DenyBit         uint32
	ObjectKind      uint32
	SockType        uint32
	Protocol        uint32
	Family          uint16
	Port            uint16
	Pad             uint32
	Addr            [16]uint8
}

// Summary is the exact number of denials of one distinct denial (or, when
// Overflow, of one registered cgroup and hook whose distinct denials the
// tally map had no room for) in [Since, Until).
type Summary struct {
	Key             Key    // zero when Overflow
	CeilingCgroupID uint64 // the registered cgroup whose ceiling decided
	Hook            Hook
	Audited         bool          // audit-only: the operations were allowed
	Errno           syscall.Errno // returned to the processes (0 when audited)
	Field           string        // as Denial.Field
	Rule            Rule          // as Denial.Rule
	// Object is what the denials targeted, from the key: no Path (the key
	// holds a hash of it; the first record of the key has it). Kind
	// ObjectNone when Overflow.
	Object Object
	// Overflow: the tally map was full; Count covers every denial of
	// CeilingCgroupID at Hook (with this decision and field) not counted
	// per distinct denial. Their records went through the ring buffer.
	Overflow bool
	Count    uint64
	Since    time.Time // the tally map was installed (or this Tally began)
	Until    time.Time // it was swapped out
}

// Operation is what was attempted, as Denial.Operation.
func (s Summary) Operation() string {
	return s.Rule.Operation(s.Hook)
}

// Decision is "denied" or "audited".
func (s Summary) Decision() string {
	if s.Audited {
		return "audited"
	}
	return "denied"
}
