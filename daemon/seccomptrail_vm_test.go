package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// dropAuditReadArg as the test binary's first argument: drop
// CAP_AUDIT_READ from the bounding set and exec the rest of the command
// line (as root, the exec'd program then lacks it).
const dropAuditReadArg = "-enforcerd-test-drop-audit-read"

func init() {
	if len(os.Args) > 2 && os.Args[1] == dropAuditReadArg {
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_AUDIT_READ, 0, 0, 0); err != nil {
			os.Stderr.WriteString("drop CAP_AUDIT_READ: " + err.Error() + "\n")
			os.Exit(126)
		}
		err := syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
		os.Stderr.WriteString("exec: " + err.Error() + "\n")
		os.Exit(127)
	}
	// seccomp-denial KIND FILE GATE: the system call KIND (chmod: fchmodat
	// of FILE to 0777; socket: an AF_INET datagram socket), then wait (up
	// to a minute) for GATE to exist, so the process lives while the
	// daemon reads its record.
	probe.Register("seccomp-denial", func(r *probe.Result, a []string) {
		switch a[0] {
		case "chmod":
			r.Check(unix.Fchmodat(unix.AT_FDCWD, a[1], 0o777, 0), "fchmodat")
		case "socket":
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
			if err == nil {
				unix.Close(fd)
			}
			r.Check(err, "socket")
		}
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(a[2]); err == nil {
				return
			}
		}
	})
}

// auditRequest sends one audit control message (typ, payload) and
// returns the kernel's answers up to its acknowledgement and, when want
// is not 0, a message of type want (the kernel sends a reply from another
// thread: it may come after the acknowledgement).
func auditRequest(typ uint16, payload []byte, want uint16) ([]syscall.NetlinkMessage, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval((5 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+len(payload))
	binary.NativeEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:6], typ)
	binary.NativeEndian.PutUint16(msg[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	copy(msg[unix.NLMSG_HDRLEN:], payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out []syscall.NetlinkMessage
	acked, got := false, want == 0
	buf := make([]byte, 8192)
	for !acked || !got {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return out, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			switch {
			case m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4:
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return out, unix.Errno(-e)
				}
				acked = true
			case m.Header.Type == want:
				got = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// auditEnabled is the kernel's audit_enabled (AUDIT_GET: struct
// audit_status's second field).
func auditEnabled() (bool, error) {
	msgs, err := auditRequest(unix.AUDIT_GET, nil, unix.AUDIT_GET)
	for _, m := range msgs {
		if m.Header.Type == unix.AUDIT_GET && len(m.Data) >= 8 {
			return binary.NativeEndian.Uint32(m.Data[4:8]) != 0, nil
		}
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return false, err
}

// setAuditEnabled turns the kernel's audit on or off (AUDIT_SET, as
// auditctl -e) and returns a function that restores the state it found.
func setAuditEnabled(t *testing.T, on bool) (restore func()) {
	t.Helper()
	was, err := auditEnabled()
	if err != nil {
		t.Fatalf("audit status: %v", err)
	}
	set := func(v bool) error {
		status := make([]byte, 8) // struct audit_status: mask, enabled
		binary.NativeEndian.PutUint32(status[0:4], unix.AUDIT_STATUS_ENABLED)
		if v {
			binary.NativeEndian.PutUint32(status[4:8], 1)
		}
		_, err := auditRequest(unix.AUDIT_SET, status, 0)
		return err
	}
	if err := set(on); err != nil {
		t.Fatalf("audit enable=%v: %v", on, err)
	}
	if now, err := auditEnabled(); err != nil || now != on {
		t.Fatalf("audit enabled %v after setting it to %v (%v)", now, on, err)
	}
	return func() {
		if err := set(was); err != nil {
			t.Errorf("audit: restore enabled=%v: %v", was, err)
		}
	}
}

// seccompRecords are the audit log's records whose hook is a seccomp one.
func (e *vmEnv) seccompRecords(t *testing.T) []audit.Record {
	t.Helper()
	b, err := os.ReadFile(e.audit)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []audit.Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		if strings.HasPrefix(r.Hook, "seccomp:") {
			out = append(out, r)
		}
	}
	return out
}

// seccompMetric is the value of enforcerd_seccomp_records_total{result}
// at addr ("" when absent).
func seccompMetric(t *testing.T, addr, result string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	prefix := `enforcerd_seccomp_records_total{result="` + result + `"} `
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}

// seccompCase runs the probe's KIND under `enforcerd run FLAGS` through
// e, calling during (if not nil) while the probe waits at its gate, and
// returns its result and run's.
func (e *vmEnv) seccompCase(t *testing.T, kind, file string, flags []string, during func()) (probe.Result, runResult) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	done := make(chan runResult, 1)
	go func() { done <- e.enforcerdRun(probe.Env("seccomp-denial", kind, file, gate), flags, self) }()
	if during != nil {
		during()
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	res, err := probe.ParseResult([]byte(r.stdout))
	if r.code != 0 || err != nil || res.Setup != "" {
		t.Fatalf("run %v %s: exit %d, result %v %v\nstderr: %s", flags, kind, r.code, res, err, r.stderr)
	}
	return res, r
}

// TestNoBPFLSMSeccompDenialsInAuditLog: without BPF LSM, `enforcerd run
// --allow-partial` confines CMD with Landlock and seccomp; the daemon
// reads the kernel's AUDIT_SECCOMP records of that filter from the audit
// multicast group into its audit log and GET /v1/denials (ctl denials).
// Per case: (a) without the ceiling the call succeeds and has its effect
// (the file's mode changed, the socket made); (b) under it EPERM, and a
// denial record names it (hook seccomp:<call>, rule, field, operation,
// the process, the ceiling cgroup); (c) the chmod's effect is absent.
// Audit is disabled (the kernel's default without auditd): the kernel
// writes AUDIT_SECCOMP records whatever audit_enabled says. Then a daemon
// without CAP_AUDIT_READ changes nothing else: the run is still denied
// and completes, the daemon says so once and counts it, no seccomp
// record.
// With BPF LSM (the other boot) the same runs are denied by the BPF LSM
// programs and no seccomp record appears.
func TestNoBPFLSMSeccompDenialsInAuditLog(t *testing.T) {
	lsm, _ := vmtest.LSMActive()
	// Audit disabled, as on a host without auditd: the kernel writes the
	// records all the same.
	restore := setAuditEnabled(t, false)
	defer restore()
	e := startVMDaemonAnyLSM(t, "127.0.0.1:19571", "allow_partial: true\n")
	file := filepath.Join(t.TempDir(), "f")
	mode := func() os.FileMode {
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	for _, tc := range []struct {
		kind, flag, hook, rule, field, op string
	}{
		{"chmod", "--write=deny", "seccomp:fchmodat", "write", "write", "setattr"},
		{"socket", "--network=deny", "seccomp:socket", "network", "network", "socket"},
	} {
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		// (a) No ceiling: the call has its effect.
		if res, _ := e.seccompCase(t, tc.kind, file, nil, nil); res.Errno != 0 || (tc.kind == "chmod" && mode() != 0o777) {
			t.Fatalf("(a) %s without a ceiling: %v, mode %v", tc.kind, res, mode())
		}
		if err := os.Chmod(file, 0o600); err != nil {
			t.Fatal(err)
		}
		// (b) Under the ceiling: EPERM, and (without BPF LSM) the record
		// while the process still waits at its gate.
		var got *audit.Record
		t0 := time.Now()
		res, run := e.seccompCase(t, tc.kind, file, []string{tc.flag, "--allow-partial"}, func() {
			if lsm {
				return
			}
			for deadline := time.Now().Add(30 * time.Second); got == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				for _, r := range e.seccompRecords(t) {
					if r.Hook == tc.hook && r.Type == audit.TypeDenial {
						got = &r
					}
				}
			}
			t.Logf("%s: record after %v", tc.kind, time.Since(t0))
		})
		t.Logf("%s: run done after %v", tc.kind, time.Since(t0))
		if res.Errno != unix.EPERM {
			t.Errorf("(b) BYPASS: %s under %s: %v, want EPERM", tc.kind, tc.flag, res)
		}
		if tc.kind == "chmod" && mode() != 0o600 {
			t.Errorf("(c) BYPASS: the denied chmod took effect: mode %v", mode())
		}
		if lsm {
			continue
		}
		if got == nil {
			t.Fatalf("(b) no %s record in the audit log within 30s (metrics: not_ours %s, unattributed %s)",
				tc.hook, seccompMetric(t, "127.0.0.1:19571", "not_ours"), seccompMetric(t, "127.0.0.1:19571", "unattributed"))
		}
		r := *got
		if r.Rule != tc.rule || r.Field != tc.field || r.Operation != tc.op || r.Errno != 1 || r.Error != "EPERM" ||
			r.Decision != "denied" || r.PID == 0 || r.CgroupID == 0 || r.CeilingCgroupID == 0 || r.Container != "" ||
			r.ObjectFields == nil || r.ObjectFields.Kind != "syscall" || "seccomp:"+r.ObjectFields.Syscall != tc.hook ||
			!strings.HasSuffix(r.Exe, ".test") || r.SchemaVersion != audit.SchemaVersion {
			t.Errorf("(b) record fields: %+v (object %+v)", r, r.ObjectFields)
		}
		// run prints the records of its cgroup from the daemon's stream.
		if !strings.Contains(run.stderr, "("+tc.hook+") pid=") {
			t.Errorf("(b) run's stderr does not name the %s denial:\n%s", tc.hook, run.stderr)
		}
		recent, err := api.NewClient(e.sock, 5*time.Second).RecentDenials(context.Background(), api.DenialFilter{})
		found := false
		for _, d := range recent {
			found = found || (d.Hook == tc.hook && d.PID == r.PID)
		}
		if err != nil || !found {
			t.Errorf("(b) GET /v1/denials has no %s record of pid %d: %v (%d records)", tc.hook, r.PID, err, len(recent))
		}
	}
	if !lsm && seccompMetric(t, "127.0.0.1:19571", "reported") == "" {
		t.Errorf("enforcerd_seccomp_records_total{result=\"reported\"} absent")
	}
	e.stopDaemon(false)

	// The records cannot be read (a daemon without CAP_AUDIT_READ, audit
	// enabled this time): nothing else changes.
	t.Run("no CAP_AUDIT_READ", func(t *testing.T) {
		restore := setAuditEnabled(t, true)
		defer restore()
		f := newVMEnvAnyLSM(t, "127.0.0.1:19572", "allow_partial: true\n")
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		f.wrap = []string{self, dropAuditReadArg}
		startedDaemon(t, f)
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if res, _ := f.seccompCase(t, "chmod", file, []string{"--write=deny", "--allow-partial"}, nil); res.Errno != unix.EPERM || mode() != 0o600 {
			t.Errorf("BYPASS: chmod under write=deny: %v, mode %v", res, mode())
		}
		if recs := f.seccompRecords(t); len(recs) != 0 {
			t.Errorf("seccomp records although they cannot be read: %+v", recs)
		}
		if lsm {
			return
		}
		const says = "audit multicast group cannot be read"
		log, _ := os.ReadFile(filepath.Join(f.dir, "daemon.log"))
		if n := strings.Count(string(log), says); n != 1 {
			t.Errorf("daemon log says %q %d times, want once:\n%s", says, n, log)
		}
		if v := seccompMetric(t, "127.0.0.1:19572", "unavailable"); v != "1" {
			t.Errorf("enforcerd_seccomp_records_total{result=\"unavailable\"} = %q, want 1", v)
		}
	})
}
