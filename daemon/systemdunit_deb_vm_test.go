package daemon_test

// The Debian package of make dist under systemd as PID 1 (the Debian
// guest): dpkg -i starts nothing, the administrator's check and enable
// work, the packaged daemon registers and denies, dpkg -r stops it and
// removes every pin, dpkg -P leaves nothing behind.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/vmtest"
)

// debDropIn is the test's drop-in directory for enforcerd.service.
const debDropIn = "/etc/systemd/system/enforcerd.service.d"

// debUnits are the units the package ships.
var debUnits = []string{"enforcerd.service", "enforcerd.socket", "enforcerd-proxy.service", "enforcerd-proxy.socket"}

// TestVMSystemdUnitDebPackage follows an administrator through the
// package's life: install, check, enable, use, remove, purge.
func TestVMSystemdUnitDebPackage(t *testing.T) {
	vmtest.RequireDebianGuest(t)
	vmtest.RequireLSM(t, nil)
	deb := os.Getenv("ENFORCERD_VMTEST_DEB")
	if deb == "" {
		t.Fatal("ENFORCERD_VMTEST_DEB is not set: scripts/vmtest --rootfs debian packs the Debian package for packages with testdata/needs-dist")
	}
	files := debFiles(t, deb)
	keepHarnessBinary(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("journal of enforcerd:\n%s", sh(t, "journalctl -b -u enforcerd.service -u enforcerd.socket --no-pager | tail -n 60"))
			exec.Command("dpkg", "-P", "enforcerd").Run()
		}
	})
	debInstallStartsNothing(t, deb)
	// Under TCG on shared cores the first program load can take longer
	// than the default 90 s start timeout; purge leaves /etc's drop-ins
	// to their owner, the test removes its own before the checks.
	os.MkdirAll(debDropIn, 0o755)
	if err := os.WriteFile(debDropIn+"/vmtest-timeout.conf", []byte("[Service]\nTimeoutStartSec=10min\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(debDropIn) })
	debEnableAndUse(t)
	os.RemoveAll(debDropIn)
	debRemove(t, files)
	debPurge(t, files)
}

// keepHarnessBinary saves the harness's /usr/bin/enforcerd (/bin is
// /usr/bin in the Debian guest: ENFORCERD_BIN), which dpkg -i replaces
// and dpkg -P removes, and puts it back when the test ends.
func keepHarnessBinary(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/usr/bin/enforcerd")
	if err != nil {
		return
	}
	t.Cleanup(func() {
		if err := os.WriteFile("/usr/bin/enforcerd", b, 0o755); err != nil {
			t.Errorf("putting the harness's /usr/bin/enforcerd back: %v", err)
		}
	})
}

// debFiles lists the regular files and links the package installs
// (dpkg-deb -c), as absolute paths.
func debFiles(t *testing.T, deb string) []string {
	t.Helper()
	var files []string
	for _, l := range strings.Split(sh(t, "dpkg-deb -c "+deb), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || strings.HasPrefix(f[0], "d") {
			continue
		}
		files = append(files, strings.TrimPrefix(f[5], "."))
	}
	if len(files) < 10 {
		t.Fatalf("the package lists %d files: %v", len(files), files)
	}
	return files
}

// debInstallStartsNothing: dpkg -i installs the binary in /usr/bin, the
// units in /lib/systemd/system, the hooks naming /usr/bin/enforcerd and
// the configuration as a conffile, and enables and starts nothing.
func debInstallStartsNothing(t *testing.T, deb string) {
	t.Helper()
	out := sh(t, "dpkg -i "+deb)
	if !strings.Contains(out, "enforcerd installed and not started") {
		t.Errorf("dpkg -i does not say what to do next:\n%s", out)
	}
	if p, err := exec.LookPath("enforcerd"); err != nil || p != "/usr/bin/enforcerd" {
		t.Errorf("enforcerd in PATH: %q %v, want /usr/bin/enforcerd", p, err)
	}
	for _, u := range debUnits {
		frag, _ := filepath.EvalSymlinks(unitProp(t, u, "FragmentPath"))
		if want, _ := filepath.EvalSymlinks("/lib/systemd/system/" + u); frag != want {
			t.Errorf("%s from %s, want %s", u, frag, want)
		}
		if st := unitProp(t, u, "ActiveState") + "/" + unitProp(t, u, "UnitFileState"); st != "inactive/disabled" {
			t.Errorf("%s after dpkg -i: %s, want inactive/disabled (the package starts nothing)", u, st)
		}
	}
	for _, f := range []string{"/usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json", "/lib/systemd/system/enforcerd.service"} {
		b, err := os.ReadFile(f)
		if err != nil || strings.Contains(string(b), "/usr/local") || !strings.Contains(string(b), "/usr/bin/enforcerd") {
			t.Errorf("%s must name /usr/bin/enforcerd and nothing in /usr/local: %v\n%s", f, err, b)
		}
	}
	if c := sh(t, "dpkg-query -W -f '${Conffiles}' enforcerd"); !strings.Contains(c, "/etc/enforcerd/config.yaml") {
		t.Errorf("conffiles: %q, want /etc/enforcerd/config.yaml", c)
	}
}

// debEnableAndUse: enforcerd check passes; the administrator enables the
// units; ctl status answers through the socket; a run registered through
// the packaged daemon is denied an inet socket.
func debEnableAndUse(t *testing.T) {
	t.Helper()
	t.Logf("enforcerd check:\n%s", sh(t, "enforcerd check"))
	sh(t, "systemctl enable --now enforcerd.socket enforcerd.service")
	if out := sh(t, "enforcerd ctl status"); !strings.Contains(out, "containers") {
		t.Errorf("ctl status: %s", out)
	}
	out, err := exec.Command("enforcerd", "run", "--network", "deny", "-q", "--", "python3", "-c", socketOnce).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "denied" {
		t.Fatalf("a run under network=deny through the packaged daemon: %v %q, want denied", err, out)
	}
	if _, err := os.Stat(vmtest.SharedPinDir); err != nil {
		t.Fatalf("the daemon pinned nothing at %s: %v", vmtest.SharedPinDir, err)
	}
}

// socketOnce tries one inet socket and prints "allowed" or "denied".
const socketOnce = `import socket
try:
    socket.socket().close()
    print("allowed")
except PermissionError:
    print("denied")
`

// debRemove: dpkg -r stops the units and removes every pin (prerm runs
// enforcerd uninstall) and the package's files but the conffile; the
// audit log stays until purge.
func debRemove(t *testing.T, files []string) {
	t.Helper()
	t.Logf("dpkg -r: %s", sh(t, "dpkg -r enforcerd"))
	if out, _ := exec.Command("pgrep", "-a", "-x", "enforcerd").Output(); len(out) > 0 {
		t.Errorf("processes left after dpkg -r:\n%s", out)
	}
	// The links systemctl enable made stay until purge (as debhelper
	// keeps them): systemd may list the units, gone and dead.
	for _, l := range strings.Split(sh(t, "systemctl list-units --all --no-legend --plain 'enforcerd*'"), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && (f[1] != "not-found" || f[2] != "inactive" || f[3] != "dead") {
			t.Errorf("a unit after dpkg -r: %q, want none or not-found inactive dead", l)
		}
	}
	for _, p := range []string{vmtest.SharedPinDir, "/run/enforcerd"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left after dpkg -r", p)
		}
	}
	for _, f := range files {
		if _, err := os.Lstat(f); err == nil && f != "/etc/enforcerd/config.yaml" {
			t.Errorf("%s left after dpkg -r", f)
		}
	}
	for _, p := range []string{"/etc/enforcerd/config.yaml", "/var/log/enforcerd"} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v; dpkg -r keeps it until purge", p, err)
		}
	}
}

// debPurge: dpkg -P removes the configuration, the state, the audit log
// and the links systemctl enable made: nothing of enforcerd is left.
func debPurge(t *testing.T, files []string) {
	t.Helper()
	sh(t, "dpkg -P enforcerd")
	if out, _ := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "enforcerd").Output(); len(out) > 0 && string(out) != "not-installed" {
		t.Errorf("dpkg status after purge: %q", out)
	}
	left := []string{}
	for _, p := range append(files, "/etc/enforcerd", "/var/log/enforcerd", "/var/lib/enforcerd", "/run/enforcerd", vmtest.SharedPinDir) {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	links, _ := filepath.Glob("/etc/systemd/system/*.wants/enforcerd*")
	if left = append(left, links...); len(left) > 0 {
		t.Errorf("left after dpkg -P: %v", left)
	}
	if out := sh(t, "systemctl list-unit-files --no-legend 'enforcerd*'; systemctl list-units --all --no-legend 'enforcerd*'"); out != "" {
		t.Errorf("units left after dpkg -P:\n%s", out)
	}
}
