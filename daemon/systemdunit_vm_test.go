package daemon_test

// The shipped systemd units under systemd as PID 1 (the Debian guest),
// installed from the release tarball by its install.sh: socket
// activation, Type=notify readiness, the watchdog restarting a hung
// daemon while enforcement holds, systemctl reload reopening the audit
// log, the journal's ENFORCERD_* fields, the audit trail through the
// unit's capabilities, and systemctl stop plus uninstall.sh leaving
// nothing behind.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// unitSocket is the socket the shipped enforcerd.socket listens on.
const unitSocket = "/run/enforcerd/enforcerd.sock"

// sh runs a shell command line and returns its combined output; a
// failure fails the test.
func sh(t *testing.T, cmd string) string {
	t.Helper()
	out, err := exec.Command("/bin/bash", "-c", cmd).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// unitProp is systemctl show -P PROP UNIT.
func unitProp(t *testing.T, unit, prop string) string {
	t.Helper()
	return sh(t, "systemctl show -P "+prop+" "+unit)
}

// awaitCond polls cond every 100 ms until it holds or within passes, then
// fails with what.
func awaitCond(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
	}
}

// socketLoop is a workload that tries to create an inet socket every 100
// ms and prints "allowed" or "denied" (EPERM) per attempt, until killed.
const socketLoop = `import socket, sys, time
while True:
    try:
        socket.socket().close()
        print("allowed", flush=True)
    except PermissionError:
        print("denied", flush=True)
    time.sleep(0.1)
`

// lineLog collects a command's output lines.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) read(r io.Reader) {
	for sc := bufio.NewScanner(r); sc.Scan(); {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
	}
}

func (l *lineLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// TestVMSystemdUnitInstalledFromDist follows an operator: install the
// release with install.sh (with audit.linux_audit on), and check each
// promise of the units on the way (steps below, in order; each needs the
// one before).
func TestVMSystemdUnitInstalledFromDist(t *testing.T) {
	vmtest.RequireDebianGuest(t)
	vmtest.RequireLSM(t, nil)
	dist := os.Getenv("ENFORCERD_VMTEST_DIST")
	if dist == "" {
		t.Fatal("ENFORCERD_VMTEST_DIST is not set: scripts/vmtest --rootfs debian packs the release tarball for packages with testdata/needs-dist")
	}
	if out, err := exec.Command("python3", "-c", "import socket; socket.socket().close(); print('allowed')").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "allowed" {
		t.Fatalf("control: an inet socket outside any ceiling: %v %s", err, out)
	}
	top := unpackDist(t, dist)
	installFromDist(t, top)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("journal of enforcerd:\n%s", sh(t, "journalctl -b -u enforcerd.service -u enforcerd.socket --no-pager | tail -n 80"))
		}
	})
	stepSocketActivation(t)
	stepNotifyReadiness(t)
	stepHardening(t)
	run, lines := startUnitSandbox(t)
	id := stepSandboxRegistered(t)
	stepJournalAndAuditTrail(t, id)
	stepWatchdog(t, id, lines)
	stepReload(t, id)
	stopUnitSandbox(t, run, lines)
	stepNoSyscallKilled(t)
	stepUninstall(t, top)
}

// unpackDist unpacks the release tarball and returns its top directory.
func unpackDist(t *testing.T, dist string) string {
	t.Helper()
	dir := t.TempDir()
	sh(t, "tar -xzf "+dist+" -C "+dir)
	tops, _ := filepath.Glob(filepath.Join(dir, "enforcerd-*"))
	if len(tops) != 1 {
		t.Fatalf("the tarball has %d top directories, want one: %v", len(tops), tops)
	}
	return tops[0]
}

// installFromDist writes the release's default configuration with
// audit.linux_audit on (install.sh keeps an existing one), adds a drop-in
// that shortens the watchdog to 10 s (WatchdogSec=30s in the unit; the
// test waits for a timeout) and gives the start 10 min (the first program
// load under TCG on shared cores can pass the default 90 s), runs install.sh, and checks both units are
// enabled and active.
func installFromDist(t *testing.T, top string) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(top, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "  linux_audit: false") {
		t.Fatalf("the release's config.yaml has no audit.linux_audit: false line:\n%s", cfg)
	}
	os.MkdirAll("/etc/enforcerd", 0o755)
	if err := os.WriteFile("/etc/enforcerd/config.yaml", []byte(strings.Replace(string(cfg), "  linux_audit: false", "  linux_audit: true", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll("/etc/systemd/system/enforcerd.service.d", 0o755)
	if err := os.WriteFile("/etc/systemd/system/enforcerd.service.d/vmtest-watchdog.conf", []byte("[Service]\nWatchdogSec=10s\nTimeoutStartSec=10min\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	t.Logf("install.sh: %s (%s)", sh(t, "cd "+top+" && ./install.sh"), time.Since(t0).Round(time.Millisecond))
	for _, u := range []string{"enforcerd.socket", "enforcerd.service"} {
		if st := unitProp(t, u, "ActiveState") + "/" + unitProp(t, u, "UnitFileState"); st != "active/enabled" {
			t.Fatalf("%s after install.sh: %s, want active/enabled", u, st)
		}
	}
}

// stepSocketActivation: with the service stopped and the socket
// listening, the first `enforcerd ctl status` starts the daemon and gets
// its answer (its --timeout covers the daemon's start, about 10 s under
// TCG on loaded shared cores).
func stepSocketActivation(t *testing.T) {
	t.Helper()
	sh(t, "systemctl stop enforcerd.service")
	if st := unitProp(t, "enforcerd.service", "ActiveState"); st != "inactive" {
		t.Fatalf("enforcerd.service after stop: %s", st)
	}
	if st := unitProp(t, "enforcerd.socket", "ActiveState"); st != "active" {
		t.Fatalf("enforcerd.socket with the service stopped: %s, want active (listening)", st)
	}
	out := sh(t, "enforcerd ctl status --timeout 60s")
	if !strings.Contains(out, "containers") {
		t.Errorf("ctl status: %s", out)
	}
	if st := unitProp(t, "enforcerd.service", "ActiveState"); st != "active" {
		t.Fatalf("enforcerd.service after the first ctl status: %s, want active (socket activation)", st)
	}
}

// stepNotifyReadiness: systemctl restart returns once the daemon sent
// READY=1, and then it is ready at once (no retry), with its STATUS= line.
func stepNotifyReadiness(t *testing.T) {
	t.Helper()
	sh(t, "systemctl restart enforcerd.service")
	r, err := api.NewClient(unitSocket, 5*time.Second).Ready(context.Background())
	if err != nil || !r.Ready {
		t.Fatalf("right after systemctl restart (Type=notify): ready %v, missing %v, err %v", r.Ready, r.Missing, err)
	}
	if st := unitProp(t, "enforcerd.service", "StatusText"); !strings.HasPrefix(st, "serving ") {
		t.Errorf("StatusText %q, want the daemon's STATUS= line", st)
	}
	if w := unitProp(t, "enforcerd.service", "WatchdogUSec"); w != "10s" {
		t.Errorf("WatchdogUSec %q, want the drop-in's 10s", w)
	}
}

// maxExposure is the highest `systemd-analyze security` exposure the
// shipped enforcerd.service may have (deploy/README.md, Hardening).
const maxExposure = 4.0

// stepHardening: the installed unit's exposure, as systemd-analyze
// security scores the running service, is at most maxExposure; the
// metrics listener answers on the loopback (IPAddressAllow=localhost)
// under the unit's IPAddressDeny=any.
func stepHardening(t *testing.T) {
	t.Helper()
	out := sh(t, "systemd-analyze security --no-pager enforcerd.service")
	score := exposure(t, out)
	t.Logf("systemd-analyze security enforcerd.service: %.1f", score)
	if score > maxExposure {
		t.Errorf("exposure %.1f, want at most %.1f:\n%s", score, maxExposure, out)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://127.0.0.1:9464/readyz")
	if err != nil {
		t.Fatalf("GET /readyz on the loopback under IPAddressDeny=any: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(b)) != "ready" {
		t.Errorf("GET /readyz on the loopback under IPAddressDeny=any: %d %q, want ready", resp.StatusCode, b)
	}
}

// exposure returns the number of systemd-analyze security's "Overall
// exposure level for UNIT: N.N ..." line.
func exposure(t *testing.T, out string) float64 {
	t.Helper()
	_, rest, ok := strings.Cut(out, "Overall exposure level for ")
	if !ok {
		t.Fatalf("no overall exposure line in:\n%s", out)
	}
	_, rest, _ = strings.Cut(rest, ": ")
	f := strings.Fields(rest)
	if len(f) == 0 {
		t.Fatalf("no number in the exposure line: %q", rest)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatalf("exposure %q: %v", f[0], err)
	}
	return v
}

// stepNoSyscallKilled: across start, registration, the watchdog restart,
// reload and the audit records, the system call filter killed nothing
// (SIGSYS ends a call outside the allow list: "status=31/SYS").
func stepNoSyscallKilled(t *testing.T) {
	t.Helper()
	if j := sh(t, "journalctl -b -u enforcerd.service --no-pager"); strings.Contains(j, "31/SYS") {
		t.Errorf("the system call filter killed the daemon:\n%s\naudit: %s", j, seccompRecords())
	}
}

// seccompRecords returns the kernel's SECCOMP audit records (each names
// the system call number the filter refused).
func seccompRecords() string {
	out, _ := exec.Command("/bin/bash", "-c", "grep -h 'type=SECCOMP' /var/log/audit/audit.log; journalctl -b -k --no-pager | grep -i seccomp").CombinedOutput()
	return string(out)
}

// startUnitSandbox starts `enforcerd run --network deny -q` (registered
// through the unit's daemon) around socketLoop; its lines are collected.
func startUnitSandbox(t *testing.T) (*exec.Cmd, *lineLog) {
	t.Helper()
	cmd := exec.Command("enforcerd", "run", "--network", "deny", "-q", "--", "python3", "-c", socketLoop)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &lineLog{}
	go l.read(out)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	awaitCond(t, 60*time.Second, "the sandboxed workload printed nothing", func() bool { return len(l.snapshot()) > 0 })
	return cmd, l
}

// stepSandboxRegistered returns the id under which the daemon lists the
// run (enforcerd-run-PID-CGROUPID).
func stepSandboxRegistered(t *testing.T) string {
	t.Helper()
	list, err := api.NewClient(unitSocket, 5*time.Second).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if strings.HasPrefix(c.ID, "enforcerd-run-") {
			return c.ID
		}
	}
	t.Fatalf("the daemon does not list the run: %+v", list)
	return ""
}

// stepJournalAndAuditTrail: the run's denials are journal entries
// selected by ENFORCERD_CONTAINER, with ENFORCERD_* fields, and
// AUDIT_USER_AVC records (the unit grants CAP_AUDIT_WRITE).
func stepJournalAndAuditTrail(t *testing.T, id string) {
	t.Helper()
	var entry map[string]any
	awaitCond(t, 30*time.Second, "no journal entry with ENFORCERD_CONTAINER="+id, func() bool {
		out, _ := exec.Command("journalctl", "-b", "-o", "json", "--no-pager", "ENFORCERD_CONTAINER="+id).Output()
		for _, line := range strings.Split(string(out), "\n") {
			entry = nil
			if json.Unmarshal([]byte(line), &entry) == nil && entry["ENFORCERD_HOOK"] == "socket_create" {
				return true
			}
		}
		return false
	})
	for k, v := range map[string]string{"ENFORCERD_DECISION": "denied", "ENFORCERD_RULE": "network", "ENFORCERD_TYPE": "denial",
		"SYSLOG_IDENTIFIER": "enforcerd", "_SYSTEMD_UNIT": "enforcerd.service"} {
		if entry[k] != v {
			t.Errorf("journal entry %s=%v, want %s", k, entry[k], v)
		}
	}
	f, _ := awaitAVC(t, id)
	if f["hook"] != "socket_create" || f["ocomm"] != "python3" || f["res"] != "failed" {
		t.Errorf("audit trail record %v: want python3's socket_create denial", f)
	}
}

// stepWatchdog: a hung daemon (SIGSTOP) is killed at the watchdog's
// timeout and restarted (Restart=always); the run stays registered and
// denied throughout.
func stepWatchdog(t *testing.T, id string, lines *lineLog) {
	t.Helper()
	pid := unitProp(t, "enforcerd.service", "MainPID")
	restarts := unitProp(t, "enforcerd.service", "NRestarts")
	before := len(lines.snapshot())
	t0 := time.Now()
	sh(t, "kill -STOP "+pid)
	awaitCond(t, 90*time.Second, "the stopped daemon was not restarted", func() bool {
		p, _ := exec.Command("systemctl", "show", "-P", "MainPID", "enforcerd.service").Output()
		a, _ := exec.Command("systemctl", "show", "-P", "ActiveState", "enforcerd.service").Output()
		np := strings.TrimSpace(string(p))
		return np != pid && np != "0" && strings.TrimSpace(string(a)) == "active"
	})
	t.Logf("watchdog: daemon %s stopped, restarted as %s after %s", pid, unitProp(t, "enforcerd.service", "MainPID"), time.Since(t0).Round(time.Millisecond))
	n, _ := strconv.Atoi(restarts)
	if m, _ := strconv.Atoi(unitProp(t, "enforcerd.service", "NRestarts")); m != n+1 {
		t.Errorf("NRestarts %d after the watchdog, want %d", m, n+1)
	}
	if j := sh(t, "journalctl -b -u enforcerd.service --no-pager"); !strings.Contains(j, "Watchdog timeout") {
		t.Errorf("the journal does not say the watchdog fired:\n%s", j)
	}
	if id2 := stepSandboxRegistered(t); id2 != id {
		t.Errorf("after the restart the daemon lists %s, want %s", id2, id)
	}
	if during := len(lines.snapshot()) - before; during < 10 {
		t.Errorf("the workload made only %d attempts while the daemon was stopped and restarted", during)
	}
}

// stepReload: systemctl reload reopens the audit log after an external
// rotation (the file renamed): a new file at the path gets the next
// records, the renamed one keeps the earlier ones.
func stepReload(t *testing.T, id string) {
	t.Helper()
	const log = "/var/log/enforcerd/audit.jsonl"
	if err := os.Rename(log, log+".rotated"); err != nil {
		t.Fatal(err)
	}
	sh(t, "systemctl reload enforcerd.service")
	awaitCond(t, 30*time.Second, "no record of "+id+" in a reopened "+log, func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), `"container":"`+id+`"`)
	})
	if b, _ := os.ReadFile(log + ".rotated"); !strings.Contains(string(b), `"container":"`+id+`"`) {
		t.Errorf("the rotated log lost the earlier records")
	}
	if j := sh(t, "journalctl -b -u enforcerd.service --no-pager"); !strings.Contains(j, "audit log reopened") {
		t.Errorf("the journal does not say the audit log was reopened")
	}
}

// stopUnitSandbox ends the run and checks every attempt was denied.
func stopUnitSandbox(t *testing.T, run *exec.Cmd, lines *lineLog) {
	t.Helper()
	run.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("enforcerd run did not end on SIGINT")
	}
	all := lines.snapshot()
	for i, l := range all {
		if l != "denied" {
			t.Fatalf("attempt %d: %q: the run must stay denied throughout", i, l)
		}
	}
	t.Logf("the run: %d attempts, all denied, across a watchdog restart and a reload", len(all))
}

// stepUninstall: systemctl stop (uninstall.sh disables and stops both
// units) and uninstall.sh --purge leave no unit, process, pin, socket,
// file or directory of enforcerd behind.
func stepUninstall(t *testing.T, top string) {
	t.Helper()
	os.RemoveAll("/etc/systemd/system/enforcerd.service.d")
	sh(t, "systemctl stop enforcerd.service enforcerd.socket")
	t.Logf("uninstall.sh: %s", sh(t, "cd "+top+" && ./uninstall.sh --purge"))
	if out := sh(t, "systemctl list-unit-files --no-legend 'enforcerd*'; systemctl list-units --all --no-legend 'enforcerd*'"); out != "" {
		t.Errorf("units left:\n%s", out)
	}
	if out, _ := exec.Command("pgrep", "-a", "-x", "enforcerd").Output(); len(out) > 0 {
		t.Errorf("processes left:\n%s", out)
	}
	var left []string
	for _, p := range []string{"/usr/local/bin/enforcerd", "/usr/local/lib/systemd/system/enforcerd.service", "/usr/local/lib/systemd/system/enforcerd.socket",
		"/usr/local/lib/systemd/system/enforcerd-proxy.service", "/usr/local/lib/systemd/system/enforcerd-proxy.socket",
		"/usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json", "/usr/share/containers/oci/hooks.d/50-enforcerd-poststop.json",
		"/usr/local/share/bash-completion/completions/enforcerd", "/etc/enforcerd", "/var/log/enforcerd", "/var/lib/enforcerd",
		"/run/enforcerd", vmtest.SharedPinDir} {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	man, _ := filepath.Glob("/usr/local/share/man/man1/enforcerd*")
	if left = append(left, man...); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
