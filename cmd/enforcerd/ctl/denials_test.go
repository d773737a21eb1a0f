package ctl

// enforcerd ctl denials: the recent records and the followed stream, their
// filters, the table (with names a sandbox chose) and the JSON.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/api/apitest"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/test/syncbuf"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
)

// denialRecords registers one and two and publishes a record of each;
// the record of two has a comm and an object with a newline and a tab.
func denialRecords(t *testing.T, ts *apitest.Server) (one, two audit.Record) {
	t.Helper()
	mustCtl(t, ts, "register", "--id", "one", "--cgroup", "/c/one")
	mustCtl(t, ts, "register", "--id", "two", "--cgroup", "/c/two")
	c1, _ := ts.Reg.Get("one")
	c2, _ := ts.Reg.Get("two")
	one = audit.Record{Time: "2026-01-02T03:04:05.000000006Z", Container: "one", CgroupID: c1.CgroupID, CeilingCgroupID: c1.CgroupID,
		PID: 7, Comm: "curl", Hook: "socket_connect", Rule: "network", Operation: "connect", Object: "1.2.3.4:443", Field: "network",
		Errno: -1, Error: "EPERM", Decision: "denied", FingerprintID: audit.FingerprintID(c1.Fingerprint)}
	two = audit.Record{Time: "2026-01-02T03:04:06Z", Container: "two", CgroupID: 999, CeilingCgroupID: c2.CgroupID,
		PID: 8, Comm: "x\ny", Hook: "file_open", Operation: "open", Object: "/a\tb", Field: "write",
		Errno: -1, Error: "EPERM", Decision: "denied"}
	ts.Hub.Publish(one)
	ts.Hub.Publish(two)
	return one, two
}

func TestCtlDenialsRecent(t *testing.T) {
	ts := ctlServer(t)
	one, two := denialRecords(t, ts)
	out := mustCtl(t, ts, "denials")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME ") || !strings.Contains(lines[0], "  CONTAINER  CGROUP-ID  PID  COMM ") {
		t.Fatalf("denials: %d lines:\n%s", len(lines), out)
	}
	if f := strings.Fields(lines[1]); len(f) != 12 || f[1] != "one" || f[4] != "curl" || f[5] != "socket_connect" || f[6] != "network" ||
		f[9] != "denied" || f[10] != "EPERM" || f[11] != "1.2.3.4:443" {
		t.Errorf("row of one: %q", lines[1])
	}
	// Names chosen inside the sandbox are quoted: no forged row or column.
	if f := strings.Fields(lines[2]); len(f) != 12 || f[1] != "two" || f[2] != "999" || f[4] != `"x\ny"` || f[11] != `"/a\tb"` {
		t.Errorf("row of two: %q", lines[2])
	}

	var body api.DenialsBody
	if err := json.Unmarshal([]byte(mustCtl(t, ts, "denials", "--json")), &body); err != nil || len(body.Denials) != 2 ||
		body.Denials[0].Object != one.Object || body.Denials[1].Comm != two.Comm {
		t.Fatalf("denials --json: %+v, %v", body, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--container", "two"}, "two"},
		{[]string{"--cgroup-id", "999"}, "two"},                                  // the process's cgroup
		{[]string{"--cgroup-id", jsonNum(one.CeilingCgroupID)}, "one"},           // the deciding cgroup
		{[]string{"--cgroup-id", jsonNum(two.CeilingCgroupID), "--json"}, "two"}, // the deciding cgroup of two
	} {
		var body api.DenialsBody
		if err := json.Unmarshal([]byte(mustCtl(t, ts, append([]string{"denials", "--json"}, c.args...)...)), &body); err != nil ||
			len(body.Denials) != 1 || body.Denials[0].Container != c.want {
			t.Errorf("denials %q: %+v, %v; want only %s", c.args, body, err, c.want)
		}
	}
	if out := mustCtl(t, ts, "denials", "--json", "--cgroup-id", "12345"); out != "{\n  \"denials\": []\n}\n" {
		t.Errorf("no match --json: %q", out)
	}
	if out := mustCtl(t, ts, "denials", "--cgroup-id", "12345"); strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "TIME") {
		t.Errorf("no match: %q", out)
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// follow runs "ctl denials --follow ARGS" until the record want is
// printed, publishing recs (and want) again until then: the follower
// may subscribe after a publication. It returns the exit status and the
// output after an interrupt.
func follow(t *testing.T, ts *apitest.Server, recs []audit.Record, want string, args ...string) (int, string, string) {
	t.Helper()
	ctx, interrupt := context.WithCancel(context.Background())
	old := interruptContext
	interruptContext = func() (context.Context, context.CancelFunc) { return ctx, func() {} }
	defer func() { interruptContext = old }()
	var out, errs syncbuf.Buffer
	done := make(chan int)
	go func() {
		done <- execute(append([]string{"ctl", "--socket", ts.Socket, "denials", "--follow"}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errs})
	}()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		for _, r := range recs {
			ts.Hub.Publish(r)
		}
		select {
		case code := <-done:
			t.Fatalf("follow %q ended: exit %d, stdout %q, stderr %q", args, code, out.String(), errs.String())
		case <-deadline:
			t.Fatalf("follow %q: no %q after 10 s: %q", args, want, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	interrupt()
	select {
	case code := <-done:
		return code, out.String(), errs.String()
	case <-time.After(10 * time.Second):
		t.Fatalf("follow %q: still running 10 s after the interrupt", args)
	}
	return 0, "", ""
}

func TestCtlDenialsFollow(t *testing.T) {
	ts := ctlServer(t)
	one, two := denialRecords(t, ts)
	recs := []audit.Record{one, two}
	code, out, errs := follow(t, ts, recs, `"/a\tb"`)
	if code != cli.ExitOK || errs != "" || !strings.HasPrefix(out, denialHeaderFollow+"\n") || !strings.Contains(out, "  one  ") ||
		strings.Count(out, "TIME") != 1 {
		t.Errorf("follow: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	// --container: only two's records.
	code, out, errs = follow(t, ts, recs, `"/a\tb"`, "--container", "two")
	if code != cli.ExitOK || errs != "" || strings.Contains(out, "curl") {
		t.Errorf("follow --container two: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	// --cgroup-id of one's deciding cgroup, JSON lines: only one's.
	code, out, errs = follow(t, ts, recs, `"comm":"curl"`, "--json", "--cgroup-id", jsonNum(one.CeilingCgroupID))
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("follow --json: exit %d, stderr %q", code, errs)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var r audit.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Container != "one" {
			t.Errorf("follow --json line %q: %+v, %v", l, r, err)
		}
	}
}

// TestCtlDenialsStreamEnds: the daemon going away ends --follow with exit 1.
func TestCtlDenialsStreamEnds(t *testing.T) {
	ts := ctlServer(t)
	one, _ := denialRecords(t, ts)
	var out, errs syncbuf.Buffer
	done := make(chan int)
	go func() {
		done <- execute([]string{"ctl", "--socket", ts.Socket, "denials", "--follow", "--json"}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errs})
	}()
	for i := 0; !strings.Contains(out.String(), "curl"); i++ {
		if i > 500 {
			t.Fatal("no record followed")
		}
		ts.Hub.Publish(one)
		time.Sleep(20 * time.Millisecond)
	}
	ts.Close()
	select {
	case code := <-done:
		if code != cli.ExitFailure || errs.String() != "enforcerd ctl denials: the daemon closed the denial stream (stopped or restarted?)\n" {
			t.Errorf("exit %d, stderr %q", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow still running after the daemon closed")
	}
}
