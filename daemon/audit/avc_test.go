package audit

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAVCText: the text of a denial, an audit-only would-be denial and a
// summary: the keys in order, strings quoted or hex as libaudit encodes
// them, res=failed for a denial.
func TestAVCText(t *testing.T) {
	den := Record{Type: TypeDenial, Container: "web-1", PID: 42, UID: 1000, Exe: "/usr/bin/curl", Comm: "curl",
		Hook: "socket_connect", Rule: "network", Operation: "connect", Object: "AF_INET 127.0.0.1:80",
		Decision: "denied", FingerprintID: "0123456789abcdef", Errno: 1}
	audited := den
	audited.Decision, audited.Comm, audited.Exe = "audited", "a'b", ""
	sum := Record{Type: TypeSummary, Container: "web-1", Hook: "file_open", Rule: "write", Operation: "open",
		Decision: "denied", Errno: 1, Count: 99, Since: "2026-01-02T03:04:05Z", Overflow: true}
	for _, c := range []struct {
		r    Record
		want string
	}{
		{den, `record="denial" container="web-1" opid=42 ouid=1000 oexe="/usr/bin/curl" ocomm="curl" hook="socket_connect" rule="network" operation="connect" object=41465F494E4554203132372E302E302E313A3830 decision="denied" fingerprint="0123456789abcdef" errno=1 res=failed`},
		{audited, `record="denial" container="web-1" opid=42 ouid=1000 oexe=? ocomm=612762 hook="socket_connect" rule="network" operation="connect" object=41465F494E4554203132372E302E302E313A3830 decision="audited" fingerprint="0123456789abcdef" errno=1 res=success`},
		{sum, `record="summary" container="web-1" hook="file_open" rule="write" operation="open" object=? decision="denied" fingerprint=? errno=1 count=99 since="2026-01-02T03:04:05Z" overflow=1 res=failed`},
	} {
		if got := AVCText(c.r); got != c.want {
			t.Errorf("AVCText(%+v) =\n%s\nwant\n%s", c.r, got, c.want)
		}
	}
}

// FuzzAVCText: whatever the sandbox names its files and processes, the
// text has no "'" (it would end the kernel's msg='...'), no control byte
// and nothing over 0x7e, and reads back (ParseAVCText) to the record's
// values, cut at avcMaxValue bytes.
func FuzzAVCText(f *testing.F) {
	f.Add("web", "/usr/bin/curl", "curl", "/etc/passwd (dev 8:1 ino 2)", "file_open", uint32(1), false)
	f.Add("", "", "", "", "", uint32(0), true)
	f.Add("a b", "/tmp/x'y", "c\x1b[2J", "\"quoted\" = x", "res=success", uint32(4294967295), false)
	f.Add("é", "\x00\xff", " ", "?", "3F", uint32(7), true)
	f.Add(strings.Repeat("x", 3000), strings.Repeat("\n", 2000), "k=v", "' res=success", "", uint32(9), false)
	f.Fuzz(func(t *testing.T, container, exe, comm, object, hook string, pid uint32, summary bool) {
		r := Record{Type: TypeDenial, Container: container, PID: pid, UID: pid, Exe: exe, Comm: comm,
			Hook: hook, Rule: "write", Operation: "open", Object: object, Decision: "denied", Errno: 1}
		if summary {
			r.Type, r.Count, r.Since = TypeSummary, uint64(pid), exe
		}
		text := AVCText(r)
		for i := 0; i < len(text); i++ {
			if c := text[i]; c == '\'' || c < 0x20 || c > 0x7e {
				t.Fatalf("byte %#x at %d in %q", c, i, text)
			}
		}
		if len(text) > 8000 {
			t.Fatalf("%d bytes: over what the kernel keeps of a user message with room for its own fields", len(text))
		}
		got, order, err := ParseAVCText(text)
		if err != nil {
			t.Fatalf("ParseAVCText(%q): %v", text, err)
		}
		if order[len(order)-1] != "res" || got["res"] != "failed" {
			t.Fatalf("%q does not end with res=failed", text)
		}
		cut := func(s string) string { return s[:min(len(s), avcMaxValue)] }
		want := map[string]string{"container": cut(container), "object": cut(object), "hook": cut(hook), "errno": "1"}
		if summary {
			want["count"], want["since"] = got["count"], cut(exe)
			if _, ok := got["opid"]; ok {
				t.Fatalf("summary with a process: %q", text)
			}
		} else {
			want["oexe"], want["ocomm"] = cut(exe), cut(comm)
			want["opid"] = got["opid"]
			if got["opid"] != got["ouid"] || len(got["opid"]) == 0 {
				t.Fatalf("opid/ouid %q/%q in %q", got["opid"], got["ouid"], text)
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s = %q, want %q (text %q)", k, got[k], v, text)
			}
		}
	})
}

// TestParseAVCTextErrors: what the reader refuses, each with its reason.
func TestParseAVCTextErrors(t *testing.T) {
	for _, text := range []string{`novalue`, `a="x`, `hook=zz`, `hook=ab`, `opid=x`, `a="x"b="y"`, `=x`, `a=1 a=2`, `res=ok`} {
		if _, _, err := ParseAVCText(text); err == nil {
			t.Errorf("ParseAVCText(%q): no error", text)
		}
	}
}

// TestLinuxAudit: only denials and summaries are sent; a failure is
// counted each time and reported once; over the rate limit records are
// counted, not sent, and Record never blocks on a slow sender.
func TestLinuxAudit(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(r string) { mu.Lock(); counts[r]++; mu.Unlock() }
	var reported []error
	fail := errors.New("netlink audit: operation not permitted")
	la := NewLinuxAudit(func(uint16, string) error { return fail }, 1000, count, func(err error) { reported = append(reported, err) })
	for range 3 {
		la.Record(Record{Type: TypeDenial})
	}
	la.Record(Record{Type: TypeDaemon})
	la.Close(5 * time.Second)
	if counts[LinuxAuditFailed] != 3 || len(reported) != 1 || !errors.Is(reported[0], fail) {
		t.Fatalf("counts %v, reported %v: want 3 failed, one report", counts, reported)
	}

	counts = map[string]int{}
	release := make(chan struct{})
	la = NewLinuxAudit(func(uint16, string) error { <-release; return nil }, 1, count, nil)
	start := time.Now()
	for range 10 {
		la.Record(Record{Type: TypeSummary})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Record blocked %s on a stuck sender", d)
	}
	close(release)
	la.Close(5 * time.Second)
	// Rate 1 a second, burst 3: the first three in, the rest limited.
	if counts[LinuxAuditSent] != 3 || counts[LinuxAuditRateLimited] != 7 {
		t.Fatalf("counts %v: want 3 sent, 7 rate_limited", counts)
	}
}
