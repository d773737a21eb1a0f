// Package audit turns kernel denial records into audit records: one JSON
// object per line in a size-rotated log file, a fan-out to API followers,
// and AUDIT_USER_AVC messages to the Linux audit trail (avc.go,
// netlink.go, linuxaudit.go).
// Audit records are data, not log lines (style.md).
//
// Layering (docs/design.md): layer 4; it may import denial/, and of other
// modules no cilium/ebpf, not even through its imports.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/denial"
)

// Record is one audit line. Field names are a stable interface.
type Record struct {
	// SchemaVersion is the record layout's version (SchemaVersion): a
	// reader can tell which fields to expect (docs/audit.md).
	SchemaVersion int `json:"schema_version"`
	// Type is TypeDenial, TypeSummary or TypeDaemon.
	Type            string `json:"type"`
	Time            string `json:"time"` // RFC 3339 with nanoseconds, UTC
	Host            string `json:"host"` // the host's name (os.Hostname at start)
	Container       string `json:"container"`
	CgroupID        uint64 `json:"cgroup_id"`         // the process's own cgroup
	CeilingCgroupID uint64 `json:"ceiling_cgroup_id"` // the registered cgroup that decided
	PID             uint32 `json:"pid"`
	// PPID and Exe: the acting process's parent (thread group id) and
	// executable path, read from /proc/PID when the record is read
	// (best effort: absent when the process is gone or no longer the
	// one that acted, see procOf).
	PPID      *uint32 `json:"ppid,omitempty"`
	Exe       string  `json:"exe,omitempty"`
	Comm      string  `json:"comm"`
	UID       uint32  `json:"uid"`
	Hook      string  `json:"hook"`           // the kernel hook, exactly as the kernel names it
	Rule      string  `json:"rule,omitempty"` // the protection that decided (denial.AllRules)
	Operation string  `json:"operation"`
	Object    string  `json:"object"` // for humans; ObjectFields for machines
	// ObjectFields: the object's decoded fields (nil for daemon
	// decisions and overflow summaries).
	ObjectFields *ObjectFields `json:"object_fields,omitempty"`
	Field        string        `json:"field"`
	Errno        int           `json:"errno"`
	Error        string        `json:"error,omitempty"` // errno name, e.g. EPERM
	Decision     string        `json:"decision"`        // denied | audited; daemon events: see Event
	// FingerprintID names the container's policy fingerprint: FingerprintID
	// of its text, which the registration record ("registered",
	// "narrowed") carries in Fingerprint, once per registration.
	FingerprintID string `json:"fingerprint_id,omitempty"`
	Fingerprint   string `json:"fingerprint,omitempty"`
	Reason        string `json:"reason,omitempty"` // daemon events: why
	// Unenforced: registration records ("registered", "narrowed") of a
	// ceiling the host enforces only in part: the gap codes (what is not
	// enforced, e.g. "network-non-inet", "tamper").
	Unenforced []string `json:"unenforced,omitempty"`
	// Summaries: Count denials of one distinct denial from Since to Time
	// that no TypeDenial record stands for (at least 1), or with Overflow
	// of one container and hook whose distinct denials the kernel's
	// tally had no room for (Object empty; their records that arrived
	// are not counted).
	Count    uint64 `json:"count,omitempty"`
	Since    string `json:"since,omitempty"`
	Overflow bool   `json:"overflow,omitempty"`
}

// Record types (Record.Type).
const (
	// TypeDenial is one kernel record, one denial: the first of its kind
	// in a summary interval, or any denial when the kernel's tally was
	// full. No summary counts it again.
	TypeDenial = "denial"
	// TypeSummary is the exact count of the denials of one distinct
	// denial in an interval that no TypeDenial record stands for.
	TypeSummary = "summary"
	// TypeDaemon is a decision of the daemon (Hook HookDaemon).
	TypeDaemon = "daemon"
)

// SchemaVersion is the version of Record's layout that this build writes.
// It changes when a field is removed or changes meaning; added fields keep
// it. docs/audit.md describes each version. Version 2: a denial record no
// longer stands for one denial each (summaries count them; type, count,
// since, overflow added). Version 3: hook is the exact kernel hook (no
// longer a family's name); rule, object_fields, host, ppid, exe and
// fingerprint_id added; fingerprint only in registration records.
// Version 4: a summary's count leaves out the denials sent as records,
// and there is no summary when that leaves none.
const SchemaVersion = 4

// HookDaemon is Record.Hook of decisions the daemon made (not a kernel
// hook): Operation "registration" with Decision "registered" or
// "narrowed" or "reconciled" (at start, the kernel entry and the state
// file disagreed after a crash and both now hold their meet, or a
// registration in flight was adopted), Operation "activation" with
// Decision "activated_at_exec" or
// "activated_immediately", Operation "pending_deadline" with Decision
// "frozen", "refrozen" or "killed".
const HookDaemon = "enforcerd"

// Event builds the record of a daemon decision about a container: kind is
// the Decision (e.g. "frozen"), object the cgroup path, reason why. Every
// daemon record carries FingerprintID; the registration records
// ("registered", "narrowed") also the fingerprint's text, so that a reader
// can resolve the ids of the denials that follow.
func Event(t time.Time, container string, cgroupID uint64, cgroupPath, kind, reason, fingerprint string) Record {
	op := "activation"
	full := false
	switch kind {
	case "frozen", "refrozen", "killed":
		op = "pending_deadline"
	case "registered", "narrowed", "reconciled":
		op, full = "registration", true
	}
	r := Record{
		SchemaVersion: SchemaVersion, Type: TypeDaemon,
		Time: t.UTC().Format(time.RFC3339Nano), Host: Host, Container: container, CgroupID: cgroupID, CeilingCgroupID: cgroupID,
		Hook: HookDaemon, Operation: op, Object: cgroupPath, Decision: kind, Reason: reason, FingerprintID: FingerprintID(fingerprint),
	}
	if full {
		r.Fingerprint = fingerprint
	}
	return r
}

// FromDenial builds a record; container and fingerprint are "" when the
// deciding cgroup is not a registered container (e.g. enforcerd run). The
// record names the fingerprint by FingerprintID; ppid and exe are read
// from /proc (procOf).
func FromDenial(d denial.Denial, container, fingerprint string) Record {
	r := Record{
		SchemaVersion:   SchemaVersion,
		Type:            TypeDenial,
		Time:            d.Time.UTC().Format(time.RFC3339Nano),
		Host:            Host,
		Container:       container,
		CgroupID:        d.CgroupID,
		CeilingCgroupID: d.CeilingCgroupID,
		PID:             d.TGID,
		Comm:            d.Comm,
		UID:             d.UID,
		Hook:            d.Hook.String(),
		Rule:            string(d.Rule),
		Operation:       d.Operation(),
		Object:          d.Object.String(),
		ObjectFields:    objectFields(d.Hook, d.Rule, d.Object),
		Field:           d.Field,
		Errno:           int(d.Errno),
		Decision:        d.Decision(),
		FingerprintID:   FingerprintID(fingerprint),
	}
	r.PPID, r.Exe = procOf(d.TGID, d.PID, d.Comm)
	if d.Errno != 0 {
		r.Error = unix.ErrnoName(syscall.Errno(d.Errno))
	}
	return r
}

// FromSummary builds a summary record. path is the path of the first
// denial of s.Key (its record), "" when unknown: the object then shows the
// file's device and inode only. container and fingerprint as FromDenial.
func FromSummary(s denial.Summary, container, fingerprint, path string) Record {
	obj := s.Object
	obj.Path = path
	r := Record{
		SchemaVersion:   SchemaVersion,
		Type:            TypeSummary,
		Time:            s.Until.UTC().Format(time.RFC3339Nano),
		Since:           s.Since.UTC().Format(time.RFC3339Nano),
		Host:            Host,
		Container:       container,
		CeilingCgroupID: s.CeilingCgroupID,
		Hook:            s.Hook.String(),
		Rule:            string(s.Rule),
		Operation:       s.Operation(),
		Field:           s.Field,
		Errno:           int(s.Errno),
		Decision:        s.Decision(),
		FingerprintID:   FingerprintID(fingerprint),
		Count:           s.Count,
		Overflow:        s.Overflow,
	}
	if !s.Overflow {
		r.Object = obj.String()
		r.ObjectFields = objectFields(s.Hook, s.Rule, obj)
	}
	if s.Errno != 0 {
		r.Error = unix.ErrnoName(s.Errno)
	}
	return r
}

// Log is a JSON-lines file rotated by size: when a line would make the file
// larger than MaxBytes, it is renamed to PATH.1 (PATH.1 to PATH.2, ...,
// keeping Backups files) and a new file is started.
type Log struct {
	mu       sync.Mutex
	path     string
	maxBytes int64
	backups  int
	f        *os.File
	size     int64
}

// Open opens (appending) or creates the log, mode 0600.
func Open(path string, maxBytes int64, backups int) (*Log, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("audit log %s: max size must be positive", path)
	}
	if backups < 0 {
		backups = 0
	}
	l := &Log{path: path, maxBytes: maxBytes, backups: backups}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", l.path, err)
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends one record as one line.
func (l *Log) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit record: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("audit log %s: closed", l.path)
	}
	if l.size > 0 && l.size+int64(len(b)) > l.maxBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit log %s: %w", l.path, err)
	}
	return nil
}

func (l *Log) rotate() error {
	l.f.Close()
	l.f = nil
	if l.backups == 0 {
		if err := os.Remove(l.path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("audit log %s: rotate: %w", l.path, err)
		}
	} else {
		for i := l.backups - 1; i >= 1; i-- {
			_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
		}
		if err := os.Rename(l.path, l.path+".1"); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("audit log %s: rotate: %w", l.path, err)
		}
	}
	return l.open()
}

// Reopen closes the file and opens PATH again (appending, or creating it),
// for an external rotation (logrotate renames the file, then sends
// SIGHUP). Records written meanwhile went to the renamed file; none is
// lost. Errors: PATH cannot be opened; the log is then closed and Write
// fails until a Reopen succeeds.
func (l *Log) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	return l.open()
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Hub fans records out to followers. A follower that does not keep up loses
// records (counted) rather than stalling the kernel reader. The hub also
// keeps the last RecentRecords records published, for a reader that asks
// for the recent ones rather than following (GET /v1/denials/recent).
type Hub struct {
	mu      sync.Mutex
	subs    map[chan Record]struct{}
	dropped uint64
	// recent is a ring of the last len(recent) records; next is where the
	// next one goes, full whether the ring has wrapped.
	recent []Record
	next   int
	full   bool
}

// RecentRecords is how many of the last records a Hub keeps (Recent).
const RecentRecords = 1024

// NewHub makes an empty hub.
func NewHub() *Hub {
	return &Hub{subs: map[chan Record]struct{}{}, recent: make([]Record, RecentRecords)}
}

// Recent returns the records kept (at most RecentRecords), oldest first;
// a new slice, never nil.
func (h *Hub) Recent() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Record, 0, len(h.recent))
	if h.full {
		out = append(out, h.recent[h.next:]...)
	}
	return append(out, h.recent[:h.next]...)
}

// Subscribe returns a channel of records and a cancel function.
func (h *Hub) Subscribe(buffer int) (<-chan Record, func()) {
	ch := make(chan Record, buffer)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		if _, ok := h.subs[ch]; ok {
			delete(h.subs, ch)
			close(ch)
		}
		h.mu.Unlock()
	}
}

// Publish sends r to every follower without blocking.
func (h *Hub) Publish(r Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recent[h.next] = r
	if h.next++; h.next == len(h.recent) {
		h.next, h.full = 0, true
	}
	for ch := range h.subs {
		select {
		case ch <- r:
		default:
			h.dropped++
		}
	}
}

// Dropped is the number of records followers missed.
func (h *Hub) Dropped() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}
