package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// SeccompRecord is the kernel's AUDIT_SECCOMP record (1326) of one
// system call a seccomp filter refused (or logged), as
// kernel/auditsc.c:__audit_seccomp writes it:
//
//	audit(1733470000.123:45): auid=4294967295 uid=0 gid=0 ses=4294967295 subj=unconfined pid=123 comm="chmod" exe="/usr/bin/chmod" sig=0 arch=c000003e syscall=268 compat=0 ip=0x7f00 code=0x50000
//
// (subj= only with an LSM that labels tasks; it may hold spaces).
type SeccompRecord struct {
	// Time is the record's time stamp (millisecond precision), Serial its
	// audit serial number.
	Time   time.Time
	Serial uint64
	// PID is the thread group id in the initial pid namespace, UID the
	// real uid in the initial user namespace.
	PID uint32
	UID uint32
	// Comm and Exe are decoded (the kernel writes them quoted, or in hex
	// when they hold a space, a quote, a control byte or a byte over
	// 0x7e); Exe is "(null)" when the task had none.
	Comm string
	Exe  string
	// Arch is the audit arch (AUDIT_ARCH_X86_64 0xc000003e), Syscall the
	// system call's number in it (x32 calls with their 0x40000000 bit).
	Arch    uint32
	Syscall uint64
	// Code is the filter's action (SECCOMP_RET_ERRNO: 0x50000; the
	// kernel writes the action without its data, the errno).
	Code uint32
}

// ParseSeccomp parses the text of an AUDIT_SECCOMP record (a trailing NUL
// or newline is ignored). The fields before subj= (auid, uid, gid, ses)
// are taken at their first occurrence, those after it at their last, so
// a label with spaces and key=value look-alikes cannot shadow either.
// Errors: no "audit(SECONDS.MILLIS:SERIAL):" prefix, a missing or
// malformed pid, uid, arch, syscall or code.
func ParseSeccomp(text []byte) (SeccompRecord, error) {
	var r SeccompRecord
	text = bytes.TrimRight(text, "\x00\n")
	rest, ok := bytes.CutPrefix(text, []byte("audit("))
	if !ok {
		return r, errors.New("seccomp record: no audit( prefix")
	}
	stamp, fields, ok := bytes.Cut(rest, []byte("): "))
	if !ok {
		return r, errors.New("seccomp record: no time stamp")
	}
	if err := r.parseStamp(string(stamp)); err != nil {
		return r, err
	}
	first, last := map[string]string{}, map[string]string{}
	for _, tok := range bytes.Fields(fields) {
		k, v, ok := bytes.Cut(tok, []byte("="))
		if !ok {
			continue
		}
		if _, seen := first[string(k)]; !seen {
			first[string(k)] = string(v)
		}
		last[string(k)] = string(v)
	}
	return r, r.parseFields(first, last)
}

// parseStamp parses SECONDS.MILLIS:SERIAL.
func (r *SeccompRecord) parseStamp(s string) error {
	secs, serial, ok := splitStamp(s)
	if !ok {
		return fmt.Errorf("seccomp record: time stamp %q", s)
	}
	whole, frac, _ := splitDot(secs)
	sec, err1 := strconv.ParseInt(whole, 10, 64)
	ms, err2 := strconv.ParseInt(frac, 10, 64)
	n, err3 := strconv.ParseUint(serial, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(frac) != 3 {
		return fmt.Errorf("seccomp record: time stamp %q", s)
	}
	r.Time, r.Serial = time.Unix(sec, ms*int64(time.Millisecond)).UTC(), n
	return nil
}

func splitStamp(s string) (secs, serial string, ok bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

func splitDot(s string) (whole, frac string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// parseFields takes the numbers and strings the daemon uses.
func (r *SeccompRecord) parseFields(first, last map[string]string) error {
	num := func(m map[string]string, k string, base, bits int) (uint64, error) {
		v, ok := m[k]
		if !ok {
			return 0, fmt.Errorf("seccomp record: no %s=", k)
		}
		if base == 16 {
			v = trimHexPrefix(v)
		}
		n, err := strconv.ParseUint(v, base, bits)
		if err != nil {
			return 0, fmt.Errorf("seccomp record: %s=%q", k, m[k])
		}
		return n, nil
	}
	pid, err := num(last, "pid", 10, 32)
	if err != nil {
		return err
	}
	uid, err := num(first, "uid", 10, 32)
	if err != nil {
		return err
	}
	arch, err := num(last, "arch", 16, 32)
	if err != nil {
		return err
	}
	nr, err := num(last, "syscall", 10, 64)
	if err != nil {
		return err
	}
	code, err := num(last, "code", 16, 32)
	if err != nil {
		return err
	}
	r.PID, r.UID, r.Arch, r.Syscall, r.Code = uint32(pid), uint32(uid), uint32(arch), nr, uint32(code)
	r.Comm, r.Exe = untrusted(last["comm"]), untrusted(last["exe"])
	return nil
}

func trimHexPrefix(s string) string {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return s[2:]
	}
	return s
}

// untrusted decodes a value audit_log_untrustedstring wrote: "quoted",
// or upper-case hex of its bytes; anything else ("(null)", "?") as it is.
func untrusted(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	if len(v) > 0 && len(v)%2 == 0 {
		if b, err := hex.DecodeString(v); err == nil {
			return string(b)
		}
	}
	return v
}
