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
	"github.com/enforcerd/enforcerd/denial"
)

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
func (r *Reader) Read() (denial.Denial, error) {
	rec, err := r.rd.Read()
	if err != nil {
		if errors.Is(err, ringbuf.ErrClosed) {
			return denial.Denial{}, ErrClosed
		}
		return denial.Denial{}, err
	}
	return decodeEvent(rec.RawSample)
}

// Close unblocks Read.
func (r *Reader) Close() error { return r.rd.Close() }

func decodeEvent(raw []byte) (denial.Denial, error) {
	var ev bpf.SharedEvent
	if err := binary.Read(bytes.NewReader(raw), binary.NativeEndian, &ev); err != nil {
		return denial.Denial{}, fmt.Errorf("decode denial record (%d bytes): %w", len(raw), err)
	}
	d := denial.Denial{
		Time:            bootToWall(ev.TimeNs),
		CgroupID:        ev.CgroupId,
		CeilingCgroupID: ev.CeilingCgroupId,
		PID:             ev.Pid,
		TGID:            ev.Tgid,
		UID:             ev.Uid,
		Comm:            cString(ev.Comm[:]),
		Hook:            denial.Hook(ev.Hook),
		Audited:         ev.Decision == uint16(bpf.SharedDecisionDECISION_AUDITED),
		Errno:           syscall.Errno(ev.Err),
		Field:           fieldOf(ev.DenyBit),
		Object: objectOf(denial.ObjectKind(ev.ObjectKind), ev.Dev, ev.ObjectId, ev.Mode,
			ev.Family, ev.SockType, ev.Protocol, ev.Port, ev.Addr),
		Key: keyOf(&ev),
	}
	d.Rule = ruleOf(d.Hook, ev.DenyBit)
	d.Object.Path = joinNames(ev.Names)
	return d, nil
}

// keyOf is the tally key of a record (bpf/event.h tally_key_fill).
func keyOf(ev *bpf.SharedEvent) denial.Key {
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
	return denial.Key{
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
func objectOf(kind denial.ObjectKind, dev uint32, id uint64, mode uint32, family uint16, sockType, protocol uint32, port uint16, addr [16]uint8) denial.Object {
	o := denial.Object{Kind: kind, Dev: dev, Mode: mode, Family: family, SockType: sockType, Protocol: protocol, Port: port}
	// One field of the record, object_id, is the inode of a file or
	// socket, or the number of any other object.
	switch kind {
	case denial.ObjectFile, denial.ObjectSocket:
		o.Ino = id
	default:
		o.ID = id
	}
	if kind == denial.ObjectSocket {
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
