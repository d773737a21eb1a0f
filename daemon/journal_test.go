package daemon

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/enforcerd/enforcerd/daemon/audit"
)

type sent struct {
	msg  string
	pri  journal.Priority
	vars map[string]string
}

// TestDenialJournalFieldsAndRateLimit: each record is one entry with its
// fields as ENFORCERD_* journal fields; past the rate limit records are
// counted, and the next entry sent after a second is preceded by a summary
// with the exact count.
func TestDenialJournalFieldsAndRateLimit(t *testing.T) {
	var got []sent
	j := newDenialJournal(JournalConfig{Denials: true, RatePerSecond: 2}, func(m string, p journal.Priority, v map[string]string) error {
		got = append(got, sent{m, p, v})
		return nil
	})
	now := time.Unix(1000, 0)
	j.now = func() time.Time { return now }
	ppid := uint32(1)
	r := audit.Record{Container: "web", CgroupID: 7, CeilingCgroupID: 6, PID: 42, Comm: "curl", Hook: "socket_create",
		Rule: "network", Operation: "socket", Object: "AF_INET SOCK_STREAM", Field: "network", Errno: 1, Error: "EPERM", Decision: "denied",
		Host: "node1", PPID: &ppid, Exe: "/usr/bin/curl", FingerprintID: "0123456789abcdef",
		ObjectFields: &audit.ObjectFields{Kind: "socket", Family: "AF_INET", SockType: "SOCK_STREAM", Protocol: new(uint32), TargetCgroupID: &[]uint64{1 << 60}[0]}}
	for i := 0; i < 20; i++ {
		j.Record(r)
	}
	if len(got) == 0 || len(got) >= 20 {
		t.Fatalf("%d entries sent for 20 records at 2/s (burst 5)", len(got))
	}
	e := got[0]
	if e.pri != journal.PriWarning || !strings.Contains(e.msg, "denied socket AF_INET SOCK_STREAM (socket_create, rule network) container=web pid=42") {
		t.Errorf("entry %q priority %d", e.msg, e.pri)
	}
	for k, v := range map[string]string{"ENFORCERD_CONTAINER": "web", "ENFORCERD_HOOK": "socket_create", "ENFORCERD_CGROUP_ID": "7",
		"ENFORCERD_PID": "42", "ENFORCERD_ERROR": "EPERM", "SYSLOG_IDENTIFIER": "enforcerd", "ENFORCERD_DECISION": "denied",
		"ENFORCERD_RULE": "network", "ENFORCERD_HOST": "node1", "ENFORCERD_PPID": "1", "ENFORCERD_EXE": "/usr/bin/curl",
		"ENFORCERD_FINGERPRINT_ID": "0123456789abcdef", "ENFORCERD_OBJECT_KIND": "socket", "ENFORCERD_OBJECT_FAMILY": "AF_INET",
		"ENFORCERD_OBJECT_PROTOCOL": "0", "ENFORCERD_OBJECT_TARGET_CGROUP_ID": "1152921504606846976"} {
		if e.vars[k] != v {
			t.Errorf("%s = %q, want %q", k, e.vars[k], v)
		}
	}
	if _, ok := e.vars["ENFORCERD_FINGERPRINT"]; ok {
		t.Error("empty field sent")
	}
	sentFirst := len(got)
	missed := 20 - sentFirst
	// A second later: the limiter has tokens again; a summary goes first.
	time.Sleep(1100 * time.Millisecond)
	now = now.Add(2 * time.Second)
	j.Record(r)
	if len(got) != sentFirst+2 || got[sentFirst].vars["ENFORCERD_MISSED"] != strconv.Itoa(missed) {
		t.Fatalf("after the pause: %d entries (want %d), summary %+v; missed %d", len(got), sentFirst+2, got[sentFirst:], missed)
	}
}
