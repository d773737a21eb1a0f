// Package deploy holds no code: its tests check the files operators install
// (systemd units, hooks.d) against what the binary expects of them.
//
// Layering (docs/design.md): a test harness (tests only); nothing imports
// it.
package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon"
	"github.com/enforcerd/enforcerd/daemon/api"
)

// TestHooksDirFiles: the shipped hooks.d files are ordered by an NN-
// prefix, run `enforcerd hook STAGE` for the stage they declare, and give
// the hook more time than its default --timeout (so the hook, which waits
// for a restarting daemon, reports before the runtime kills it).
func TestHooksDirFiles(t *testing.T) {
	files, err := filepath.Glob("hooks.d/*.json")
	if err != nil || len(files) != 2 {
		t.Fatalf("hooks.d files: %v, %v; want 2", files, err)
	}
	for _, f := range files {
		if !regexp.MustCompile(`^[0-9]{2}-enforcerd-[a-z]+\.json$`).MatchString(filepath.Base(f)) {
			t.Errorf("%s: name is not NN-enforcerd-STAGE.json", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Hook struct {
				Args    []string `json:"args"`
				Timeout int      `json:"timeout"`
			} `json:"hook"`
			Stages []string `json:"stages"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(h.Stages) != 1 || len(h.Hook.Args) != 3 || h.Hook.Args[1] != "hook" || h.Hook.Args[2] != h.Stages[0] {
			t.Errorf("%s: args %v for stages %v", f, h.Hook.Args, h.Stages)
		}
		if time.Duration(h.Hook.Timeout)*time.Second <= api.DefaultHookTimeout {
			t.Errorf("%s: runtime timeout %ds is not above the hook's default --timeout %v", f, h.Hook.Timeout, api.DefaultHookTimeout)
		}
	}
}

// TestSystemdUnits: systemd-analyze verify accepts the units without a
// single complaint (unknown keys are only warnings there, so any output
// fails), with ExecStart pointed at a real binary; and the service checks
// its configuration first (ExecStartPre=, --check-config) and runs the
// daemon without --config (the default file is optional), reloads with
// SIGHUP, has a watchdog and the socket the daemon's default config names.
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is needed to verify the units (apt-get install systemd): %v", err)
	}
	dir := t.TempDir()
	for _, u := range []string{"enforcerd.service", "enforcerd.socket"} {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, u), []byte(strings.ReplaceAll(string(b), "/usr/local/bin/enforcerd", "/bin/true")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "enforcerd.socket"), filepath.Join(dir, "enforcerd.service")).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	svc, _ := os.ReadFile("enforcerd.service")
	sock, _ := os.ReadFile("enforcerd.socket")
	for _, want := range []string{"\nExecStartPre=/usr/local/bin/enforcerd daemon --check-config --quiet\nExecStart=/usr/local/bin/enforcerd daemon\n", "\nExecReload=/bin/kill -HUP $MAINPID\n",
		"\nWatchdogSec=", "\nType=notify\n", "\nRequires=enforcerd.socket\n"} {
		if !strings.Contains(string(svc), want) {
			t.Errorf("enforcerd.service lacks %q", want)
		}
	}
	// audit.linux_audit sends AUDIT_USER_AVC messages: the kernel wants
	// CAP_AUDIT_WRITE (daemon TestVMSystemdUnitInstalledFromDist sends
	// them through this unit).
	if !regexp.MustCompile(`(?m)^CapabilityBoundingSet=.*\bCAP_AUDIT_WRITE\b`).Match(svc) {
		t.Error("enforcerd.service's CapabilityBoundingSet lacks CAP_AUDIT_WRITE (audit.linux_audit)")
	}
	// Without BPF LSM the daemon reads the seccomp records of enforcerd
	// run from the audit multicast group: CAP_AUDIT_READ.
	if !regexp.MustCompile(`(?m)^CapabilityBoundingSet=.*\bCAP_AUDIT_READ\b`).Match(svc) {
		t.Error("enforcerd.service's CapabilityBoundingSet lacks CAP_AUDIT_READ (the seccomp trail)")
	}
	if strings.Contains(string(svc), "systemd-nspawn@.service") {
		t.Error("enforcerd.service orders itself against systemd-nspawn@.service, which names no instance")
	}
	if !strings.Contains(string(sock), "\nListenStream=/run/enforcerd/enforcerd.sock\n") {
		t.Error("enforcerd.socket does not listen on the daemon's default socket")
	}
}

// TestDist: `make dist` (scripts/dist) builds a tarball whose SHA-256 file
// verifies, holding the static binary, the units, hooks.d, config, licences
// and install scripts under one top directory; install.sh with DESTDIR
// puts each where deploy/README.md says.
func TestDist(t *testing.T) {
	out := t.TempDir()
	b, err := exec.Command("../scripts/dist", "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/dist: %v\n%s", err, b)
	}
	sums, _ := filepath.Glob(filepath.Join(out, "*.tar.gz.sha256"))
	if len(sums) != 1 {
		t.Fatalf("checksum files %v\n%s", sums, b)
	}
	checkDeb(t, out)
	check := exec.Command("sha256sum", "-c", filepath.Base(sums[0]))
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, b)
	}
	tarball := strings.TrimSuffix(sums[0], ".sha256")
	unpack := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", tarball, "-C", unpack).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	tops, _ := filepath.Glob(filepath.Join(unpack, "enforcerd-*"))
	if len(tops) != 1 {
		t.Fatalf("top directories %v", tops)
	}
	top := tops[0]
	for _, f := range []string{"bin/enforcerd", "systemd/enforcerd.service", "systemd/enforcerd.socket",
		"systemd/enforcerd-proxy.service", "systemd/enforcerd-proxy.socket", "deploy/kubernetes/daemonset.yaml",
		"deploy/nspawn/enforcerd.conf", "deploy/nspawn/example.nspawn", "deploy/runc/config.json",
		"hooks.d/50-enforcerd-createruntime.json", "hooks.d/50-enforcerd-poststop.json", "config.yaml",
		"LICENSE", "LICENSES/GPL-2.0", "README.md", "install.sh", "uninstall.sh",
		"man/enforcerd.1", "man/enforcerd-ctl.1", "completions/enforcerd.bash", "completions/enforcerd.zsh", "completions/enforcerd.fish"} {
		if _, err := os.Stat(filepath.Join(top, f)); err != nil {
			t.Errorf("tarball lacks %s: %v", f, err)
		}
	}
	if b, err := exec.Command("file", filepath.Join(top, "bin/enforcerd")).Output(); err != nil || !strings.Contains(string(b), "statically linked") {
		t.Errorf("bin/enforcerd is not static: %s %v", b, err)
	}
	// A configuration kept from an earlier install that this version
	// refuses stops the install before anything is installed.
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "etc/enforcerd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "etc/enforcerd/config.yaml"), []byte("sweep_interval: 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst := exec.Command("./install.sh")
	inst.Dir = top
	inst.Env = append(os.Environ(), "DESTDIR="+bad)
	if b, err := inst.CombinedOutput(); err == nil || !strings.Contains(string(b), "sweep_interval: want a duration such as 30s") || !strings.Contains(string(b), "nothing was installed") {
		t.Errorf("install.sh over an invalid configuration: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(bad, "usr")); err == nil {
		t.Error("install.sh over an invalid configuration installed files")
	}
	dest := t.TempDir()
	inst = exec.Command("./install.sh")
	inst.Dir = top
	inst.Env = append(os.Environ(), "DESTDIR="+dest)
	if b, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, b)
	}
	for _, f := range []string{"usr/local/bin/enforcerd", "usr/local/lib/systemd/system/enforcerd.service", "usr/local/lib/systemd/system/enforcerd.socket",
		"usr/local/lib/systemd/system/enforcerd-proxy.socket",
		"usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json", "etc/enforcerd/config.yaml",
		"usr/local/share/man/man1/enforcerd-ctl.1", "usr/local/share/bash-completion/completions/enforcerd"} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("install.sh did not install %s: %v", f, err)
		}
	}
	// /etc/systemd/system is the administrator's (overrides, drop-ins):
	// a package's units go to /usr/local/lib/systemd/system.
	if _, err := os.Stat(filepath.Join(dest, "etc/systemd")); err == nil {
		t.Error("install.sh wrote into /etc/systemd, the administrator's directory")
	}
}

// checkDeb: scripts/dist also wrote the Debian package (lintian passed
// inside scripts/dist) with its .sha256: the binary in /usr/bin, the units
// in /lib/systemd/system and hooks naming /usr/bin/enforcerd, the
// configuration as a conffile, the maintainer scripts, the lintian
// overrides each with a reason.
func checkDeb(t *testing.T, out string) {
	t.Helper()
	debs, _ := filepath.Glob(filepath.Join(out, "enforcerd_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("Debian packages in %s: %v", out, debs)
	}
	deb := debs[0]
	check := exec.Command("sha256sum", "-c", filepath.Base(deb)+".sha256")
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c of the package: %v\n%s", err, b)
	}
	root := t.TempDir()
	if b, err := exec.Command("dpkg-deb", "-R", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -R: %v\n%s", err, b)
	}
	for _, f := range []string{"usr/bin/enforcerd", "lib/systemd/system/enforcerd.service", "lib/systemd/system/enforcerd.socket",
		"lib/systemd/system/enforcerd-proxy.service", "lib/systemd/system/enforcerd-proxy.socket",
		"usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json", "usr/share/containers/oci/hooks.d/50-enforcerd-poststop.json",
		"etc/enforcerd/config.yaml", "usr/share/man/man1/enforcerd.1.gz", "usr/share/bash-completion/completions/enforcerd",
		"usr/share/zsh/vendor-completions/_enforcerd", "usr/share/fish/vendor_completions.d/enforcerd.fish",
		"usr/share/doc/enforcerd/copyright", "DEBIAN/postinst", "DEBIAN/prerm", "DEBIAN/postrm", "DEBIAN/md5sums"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the package lacks %s: %v", f, err)
		}
	}
	for _, f := range []string{"lib/systemd/system/enforcerd.service", "usr/share/containers/oci/hooks.d/50-enforcerd-createruntime.json", "etc/enforcerd/config.yaml"} {
		b, _ := os.ReadFile(filepath.Join(root, f))
		if strings.Contains(string(b), "/usr/local") || !strings.Contains(string(b), "/usr/bin/enforcerd") {
			t.Errorf("the package's %s must name /usr/bin/enforcerd, nothing in /usr/local:\n%s", f, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "DEBIAN/conffiles")); string(b) != "/etc/enforcerd/config.yaml\n" {
		t.Errorf("conffiles %q, want /etc/enforcerd/config.yaml", b)
	}
	// postinst runs systemctl only to reload and to restart what ran.
	pi, _ := os.ReadFile(filepath.Join(root, "DEBIAN/postinst"))
	for _, l := range strings.Split(string(pi), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "systemctl ") && l != "systemctl daemon-reload" && !strings.HasPrefix(l, "systemctl try-restart ") {
			t.Errorf("postinst runs %q: it may only reload and restart what ran", l)
		}
	}
	// Every override is preceded by its reason (a comment line).
	b, _ := os.ReadFile(filepath.Join(root, "usr/share/lintian/overrides/enforcerd"))
	prev := ""
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "enforcerd: ") && !strings.HasPrefix(prev, "#") {
			t.Errorf("lintian override %q has no reason above it", l)
		}
		prev = l
	}
}

// TestDistScriptsArguments: install.sh and uninstall.sh print their help
// for --help and refuse an unknown argument (exit 2), in both cases before
// touching anything (the scripts run from the repository: DESTDIR points
// at an empty directory that must stay empty; uninstall.sh with a bad flag
// exits before it looks for the installed binary).
func TestDistScriptsArguments(t *testing.T) {
	for _, c := range []struct {
		script string
		args   []string
		code   int
		want   string
	}{
		{"dist-install.sh", []string{"--help"}, 0, "Usage: [DESTDIR=DIR] ./install.sh"},
		{"dist-install.sh", []string{"-h"}, 0, "Usage: [DESTDIR=DIR] ./install.sh"},
		{"dist-install.sh", []string{"--prefix=/opt"}, 2, "unexpected argument: --prefix=/opt"},
		{"dist-uninstall.sh", []string{"--help"}, 0, "Usage: ./uninstall.sh"},
		{"dist-uninstall.sh", []string{"--force", "--bogus"}, 2, "unknown argument: --bogus"},
		{"dist-uninstall.sh", []string{"--socket"}, 2, "--socket needs a value"},
		{"dist-uninstall.sh", []string{"--config"}, 2, "--config needs a value"},
		{"dist-deb", []string{"--help"}, 0, "Usage: scripts/dist-deb STAGED_TOP VERSION OUT_DIR"},
		{"dist-deb", []string{"a", "b"}, 2, "want STAGED_TOP VERSION OUT_DIR"},
		{"dist-deb", []string{"/nonexistent", "1.0", "out"}, 2, "not a staged release tree"},
	} {
		dest := t.TempDir()
		shell := "sh"
		if c.script == "dist-deb" {
			shell = "bash"
		}
		cmd := exec.Command(shell, append([]string{filepath.Join("../scripts", c.script)}, c.args...)...)
		cmd.Env = append(os.Environ(), "DESTDIR="+dest)
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s %v: %v", c.script, c.args, err)
		}
		if code != c.code || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %v: exit %d, output %q; want exit %d and %q", c.script, c.args, code, b, c.code, c.want)
		}
		if ents, _ := os.ReadDir(dest); len(ents) != 0 {
			t.Errorf("%s %v installed into DESTDIR: %v", c.script, c.args, ents)
		}
	}
}

// TestDeployConfigIsTheDefaults: config.yaml says it holds the defaults;
// it must parse and equal daemon.DefaultConfig (the proxy's lists, empty by
// default, are examples there).
func TestDeployConfigIsTheDefaults(t *testing.T) {
	c, err := daemon.LoadConfig("config.yaml", true)
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.DefaultConfig()
	c.Proxy.AllowDomains, c.Proxy.AllowPrivate, c.Proxy.Resolve = d.Proxy.AllowDomains, d.Proxy.AllowPrivate, d.Proxy.Resolve
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("config.yaml = %+v\nwant %+v", c, d)
	}
}

// TestNspawnDropIn: systemd-analyze verifies Debian's systemd-nspawn@.service
// with deploy/nspawn/enforcerd.conf as its drop-in, without a word of
// complaint; the drop-in registers from ExecStartPre= (before nspawn
// starts: never ExecStartPost=, which runs after the payload started)
// through enforcerd nspawn --prestart, and example.nspawn stops the boot.
func TestNspawnDropIn(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is needed to verify the units (apt-get install systemd): %v", err)
	}
	stock, err := os.ReadFile("/lib/systemd/system/systemd-nspawn@.service")
	if err != nil {
		t.Fatalf("Debian's systemd-nspawn@.service is needed (scripts/setup-deps installs systemd-container): %v", err)
	}
	dropIn, err := os.ReadFile("nspawn/enforcerd.conf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(string(b), "/usr/local/bin/enforcerd", "/bin/true")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("systemd-nspawn@.service", stock)
	write("systemd-nspawn@.service.d/enforcerd.conf", dropIn)
	for _, u := range []string{"enforcerd.service", "enforcerd.socket"} {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		write(u, b)
	}
	cmd := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "systemd-nspawn@agent.service"))
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{"\nExecStartPre=/usr/local/bin/enforcerd nspawn --prestart %i ", "\nExecStopPost=-/usr/local/bin/enforcerd ctl unregister nspawn-%i\n"} {
		if !strings.Contains(string(dropIn), want) {
			t.Errorf("nspawn/enforcerd.conf lacks %q", want)
		}
	}
	if strings.Contains(string(dropIn), "ExecStartPost") {
		t.Error("nspawn/enforcerd.conf registers from ExecStartPost=, after the payload started")
	}
	ex, err := os.ReadFile("nspawn/example.nspawn")
	if err != nil || !strings.Contains(string(ex), "\n[Exec]\nBoot=no\nParameters=") {
		t.Errorf("nspawn/example.nspawn: want [Exec] Boot=no and Parameters= (%v)", err)
	}
}
