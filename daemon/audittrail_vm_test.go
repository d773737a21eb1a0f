package daemon_test

// The Linux audit trail (audit.linux_audit), in the Debian guest with
// auditd running: a denial reaches ausearch as an AUDIT_USER_AVC record
// with its fields; with audit disabled at run time (auditctl -e 0) or
// without CAP_AUDIT_WRITE nothing else fails (the denial stands, the
// audit log has it, the daemon runs), and the failure is counted and said
// once; linux_audit_required refuses the start without the capability.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/audit"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// ausearchAVC returns the AUDIT_USER_AVC records' texts (the msg='...'
// part) that ausearch finds for the container whose name starts with
// container, raw and interpreted (-i).
func ausearchAVC(t *testing.T, container string) (texts []string, interpreted string) {
	t.Helper()
	raw, _ := exec.Command("ausearch", "-m", "USER_AVC").CombinedOutput()
	for _, m := range regexp.MustCompile(`msg='([^']*)'`).FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(m[1], `container="`+container) {
			texts = append(texts, m[1])
		}
	}
	in, _ := exec.Command("ausearch", "-m", "USER_AVC", "-i").CombinedOutput()
	return texts, string(in)
}

// awaitAVC polls ausearch for container's records (auditd writes
// asynchronously) and returns the first one's fields.
func awaitAVC(t *testing.T, container string) (map[string]string, string) {
	t.Helper()
	var texts []string
	var in string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if texts, in = ausearchAVC(t, container); len(texts) > 0 {
			break
		}
	}
	if len(texts) == 0 {
		out, _ := exec.Command("auditctl", "-s").CombinedOutput()
		t.Fatalf("no AUDIT_USER_AVC record of container %s in ausearch -m USER_AVC; auditctl -s:\n%s", container, out)
	}
	f, _, err := audit.ParseAVCText(texts[0])
	if err != nil {
		t.Fatalf("record %q: %v", texts[0], err)
	}
	return f, in
}

// linuxAuditMetric is enforcerd_linux_audit_records_total{result} read
// from addr's /metrics ("" when absent).
func linuxAuditMetric(addr, result string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^enforcerd_linux_audit_records_total\{result="` + result + `"\} (\S+)$`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// requireAuditd fails unless auditd runs and audit is enabled: the Debian
// guest (scripts/vmtest --rootfs debian) has it; the initramfs guest
// leaves these tests out by name.
func requireAuditd(t *testing.T) {
	t.Helper()
	vmtest.RequireDebianGuest(t)
	vmtest.RequireLSM(t, nil)
	out, err := exec.Command("auditctl", "-s").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^enabled 1$`).Match(out) || regexp.MustCompile(`(?m)^pid 0$`).Match(out) {
		t.Fatalf("auditd is not running with audit enabled (the Debian guest has it): %v\n%s", err, out)
	}
}

// TestVMAuditTrailUserAVC: each case runs a daemon with linux_audit on,
// registers a network=false container whose workload is denied sockets,
// and checks the denial stands, the JSON audit log has it, and the Linux
// audit trail has it (or not, and the failure is counted) as expected.
func TestVMAuditTrailUserAVC(t *testing.T) {
	requireAuditd(t)
	for _, tc := range []struct {
		name, container, metrics string
		disable                  bool     // auditctl -e 0 during the case
		wrap                     []string // the daemon's command prefix
		wantAVC                  bool
	}{
		{name: "enabled", container: "avc-on", metrics: "127.0.0.1:19481", wantAVC: true},
		// USER_AVC is the one user message the kernel keeps with audit
		// disabled at run time.
		{name: "disabled", container: "avc-off", metrics: "127.0.0.1:19482", disable: true, wantAVC: true},
		{name: "no-cap-audit-write", container: "avc-nocap", metrics: "127.0.0.1:19483",
			wrap: []string{"setpriv", "--bounding-set=-audit_write", "--inh-caps=-audit_write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.disable {
				if out, err := exec.Command("auditctl", "-e", "0").CombinedOutput(); err != nil {
					t.Fatalf("auditctl -e 0: %v\n%s", err, out)
				}
				t.Cleanup(func() { exec.Command("auditctl", "-e", "1").Run() })
			}
			e := newVMEnv(t, tc.metrics)
			e.auditConfig(t, "  linux_audit: true\n")
			e.wrap = tc.wrap
			startedDaemon(t, e)
			c, code, msg := e.create(tc.container, "network=false")
			if code != 0 {
				t.Fatalf("createRuntime: exit %d: %s", code, msg)
			}
			c.start(t)
			for deadline := time.Now().Add(10 * time.Second); c.count() < 3; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the workload printed %d lines", c.count())
				}
			}
			lines := c.stop(t, e)
			for _, l := range lines {
				if !strings.HasPrefix(l, "net=denied") {
					t.Fatalf("workload line %q: the socket must be denied", l)
				}
			}
			rec := awaitLogged(t, e.audit, tc.container)
			if tc.wantAVC {
				f, in := awaitAVC(t, tc.container)
				// The same denial as the JSON audit log's first record.
				want := map[string]string{"record": "denial", "container": tc.container, "hook": "socket_create", "rule": "network",
					"operation": rec.Operation, "object": rec.Object, "decision": "denied", "errno": "1", "res": "failed",
					"opid": strconv.FormatUint(uint64(rec.PID), 10), "ouid": "0", "ocomm": rec.Comm, "oexe": rec.Exe,
					"fingerprint": rec.FingerprintID}
				for k, v := range want {
					if f[k] != v {
						t.Errorf("%s=%q, want %q (record %v)", k, f[k], v, f)
					}
				}
				if rec.FingerprintID == "" || rec.Object == "" || rec.Exe == "" {
					t.Errorf("the audit log's record lacks fingerprint_id, object or exe: %+v", rec)
				}
				if !strings.Contains(in, `container="`+tc.container+`"`) || !strings.Contains(in, "type=USER_AVC") {
					t.Errorf("ausearch -i does not show the record:\n%s", in)
				}
				if n := linuxAuditMetric(tc.metrics, "sent"); n == "" || n == "0" {
					t.Errorf("enforcerd_linux_audit_records_total{result=\"sent\"} = %q", n)
				}
				return
			}
			var failed string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if failed = linuxAuditMetric(tc.metrics, "failed"); failed != "" && failed != "0" {
					break
				}
			}
			if failed == "" || failed == "0" {
				t.Errorf("enforcerd_linux_audit_records_total{result=\"failed\"} = %q, want the records counted", failed)
			}
			if texts, _ := ausearchAVC(t, tc.container); len(texts) != 0 {
				t.Errorf("records without CAP_AUDIT_WRITE: %q", texts)
			}
			b, _ := os.ReadFile(filepath.Join(e.dir, "daemon.log"))
			if n := strings.Count(string(b), "linux audit"); n != 1 || !strings.Contains(string(b), "operation not permitted") {
				t.Errorf("daemon log says the failure %d times (want once, with EPERM):\n%s", n, b)
			}
		})
	}
}

// auditConfig adds lines to the audit: mapping of e's configuration.
func (e *vmEnv) auditConfig(t *testing.T, lines string) {
	t.Helper()
	b, err := os.ReadFile(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.cfg, []byte(strings.Replace(string(b), "audit:\n", "audit:\n"+lines, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// awaitLogged returns the first socket_create denial record of container
// in the JSON audit log at path, waiting up to 10 s for it.
func awaitLogged(t *testing.T, path, container string) audit.Record {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(b), "\n") {
			var r audit.Record
			if json.Unmarshal([]byte(line), &r) == nil && r.Container == container && r.Type == audit.TypeDenial && r.Hook == "socket_create" {
				return r
			}
		}
	}
	t.Fatalf("the audit log has no socket_create denial record of %s", container)
	return audit.Record{}
}

// TestVMAuditTrailRequiredRefusesStart: with linux_audit_required and no
// CAP_AUDIT_WRITE the daemon does not start, and says why.
func TestVMAuditTrailRequiredRefusesStart(t *testing.T) {
	requireAuditd(t)
	e := newVMEnv(t, "127.0.0.1:19484")
	e.auditConfig(t, "  linux_audit: true\n  linux_audit_required: true\n")
	out, err := exec.Command("setpriv", "--bounding-set=-audit_write", "--inh-caps=-audit_write", e.bin, "daemon", "--config", e.cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CAP_AUDIT_WRITE") || !strings.Contains(string(out), "operation not permitted") {
		t.Fatalf("daemon without CAP_AUDIT_WRITE, linux_audit_required: err %v, want a refusal naming CAP_AUDIT_WRITE:\n%s", err, out)
	}
	if _, err := os.Stat(e.sock); err == nil {
		t.Errorf("the refused daemon left its socket %s", e.sock)
	}
}

// TestVMAuditTrailRunFlag: enforcerd run --linux-audit, reading its own
// denial records (no daemon on the pins), sends them to the audit trail
// (container enforcerd-run-PID-CGROUPID), also with -q; CMD is denied
// either way.
func TestVMAuditTrailRunFlag(t *testing.T) {
	requireAuditd(t)
	e := newVMEnv(t, "")
	out, err := exec.Command(e.bin, "run", "--network", "deny", "--linux-audit", "-q", "--pin-dir", e.pin,
		"--socket", filepath.Join(e.dir, "none.sock"), "--", "/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "not permitted") {
		t.Fatalf("bash's connect under --network deny: %v, want exit 1 and EPERM:\n%s", err, out)
	}
	if strings.Contains(string(out), "enforcerd: denied") {
		t.Errorf("-q printed a denial:\n%s", out)
	}
	f, _ := awaitAVC(t, "enforcerd-run-")
	if f["ocomm"] != "bash" || f["decision"] != "denied" || f["rule"] != "network" || f["res"] != "failed" {
		t.Errorf("record %v: want bash's network denial", f)
	}
}
