package audit

import (
	"encoding/binary"
	"testing"
	"time"
)

// TestParseSeccomp: the kernel's AUDIT_SECCOMP text, with and without an
// LSM label (one with spaces and a look-alike pid= in it), a hex-encoded
// comm, a NUL at the end; and the malformed ones refused.
func TestParseSeccomp(t *testing.T) {
	for _, tc := range []struct {
		text string
		want SeccompRecord
	}{
		{`audit(1733470000.123:45): auid=4294967295 uid=1000 gid=0 ses=4294967295 pid=123 comm="chmod" exe="/usr/bin/chmod" sig=0 arch=c000003e syscall=268 compat=0 ip=0x7f0011 code=0x50001` + "\x00",
			SeccompRecord{Time: time.Unix(1733470000, 123e6).UTC(), Serial: 45, PID: 123, UID: 1000, Comm: "chmod", Exe: "/usr/bin/chmod", Arch: 0xc000003e, Syscall: 268, Code: 0x50001}},
		{`audit(1.007:9): auid=0 uid=0 gid=0 ses=1 subj=/usr/bin/x uid=5 pid=7 (enforce) pid=42 comm=6D7920636F6D6D exe=(null) sig=0 arch=40000003 syscall=5 compat=1 ip=0x1 code=0x50001`,
			SeccompRecord{Time: time.Unix(1, 7e6).UTC(), Serial: 9, PID: 42, UID: 0, Comm: "my comm", Exe: "(null)", Arch: 0x40000003, Syscall: 5, Code: 0x50001}},
	} {
		got, err := ParseSeccomp([]byte(tc.text))
		if err != nil || got != tc.want {
			t.Errorf("%q:\n got %+v %v\nwant %+v", tc.text, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"",
		`type=1326 msg=audit(1.000:1): pid=1`,
		`audit(1.000:1) pid=1`,
		`audit(x.000:1): uid=0 pid=1 arch=c000003e syscall=1 code=0x50001`,
		`audit(1.0:1): uid=0 pid=1 arch=c000003e syscall=1 code=0x50001`,
		`audit(1.000:1): uid=0 arch=c000003e syscall=1 code=0x50001`,
		`audit(1.000:1): uid=0 pid=1 arch=zz syscall=1 code=0x50001`,
		`audit(1.000:1): uid=0 pid=1 arch=c000003e syscall=-1 code=0x50001`,
		`audit(1.000:1): uid=0 pid=1 arch=c000003e syscall=1`,
	} {
		if r, err := ParseSeccomp([]byte(bad)); err == nil {
			t.Errorf("%q: parsed as %+v", bad, r)
		}
	}
}

// FuzzParseSeccomp: no input panics; a parsed record's text fields are
// what the text held.
func FuzzParseSeccomp(f *testing.F) {
	f.Add([]byte(`audit(1733470000.123:45): auid=4294967295 uid=0 gid=0 ses=4294967295 pid=123 comm="chmod" exe="/usr/bin/chmod" sig=0 arch=c000003e syscall=268 compat=0 ip=0x7f0011 code=0x50001`))
	f.Add([]byte(`audit(1.007:9): subj=a b pid=42 comm=41 exe=(null) arch=40000003 syscall=5 code=0x50001 uid=1`))
	f.Add([]byte(`audit(:): =`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseSeccomp(b)
		if err == nil && r.Time.IsZero() {
			t.Errorf("parsed without a time: %+v", r)
		}
	})
}

// TestAuditMessage: the audit thread's datagram is a header whose length
// leaves the header out (kernel/audit.c) and the text: the type and the
// whole rest are the record; a datagram shorter than a header is refused.
func TestAuditMessage(t *testing.T) {
	text := `audit(1.000:1): pid=1 code=0x50000` + "\x00"
	b := make([]byte, 16+len(text))
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(text))) // without the header, as the kernel sets it
	binary.NativeEndian.PutUint16(b[4:6], 1326)
	copy(b[16:], text)
	m, err := auditMessage(b)
	if err != nil || m.Type != 1326 || string(m.Text) != text {
		t.Errorf("got %d %q %v", m.Type, m.Text, err)
	}
	if _, err := auditMessage(b[:15]); err == nil {
		t.Error("a 15-byte datagram parsed")
	}
}
