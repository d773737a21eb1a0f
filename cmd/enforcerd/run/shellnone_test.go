package run

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// TestRunShellNoneRefusesProgramsThatRunOthers (threat model X6): under
// shell=none the command and its --exec-allow files are the only programs
// that may be exec'd, so `run` refuses (exit 125, the command never runs)
// a shell, a multi-call binary (BusyBox: the VM's /bin/sh) or the dynamic
// loader among them, whether shell=none comes from --shell or --role.
// Tri-state on a file the command removes: it is removed without the
// ceiling, and still there after every refusal. A command that is not
// such a program still runs under shell=none (with BPF LSM), and its own
// exec of /bin/sh is denied in the kernel.
func TestRunShellNoneRefusesProgramsThatRunOthers(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox not found: the VM has it; on a host, scripts/setup-deps installs busybox-static")
	}
	const sh = "/bin/sh" // busybox in the VM, dash (listed in /etc/shells) on Debian
	file := filepath.Join(t.TempDir(), "README")
	reset := func() {
		t.Helper()
		if err := os.WriteFile(file, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	present := func() bool { _, err := os.Lstat(file); return err == nil }
	rm := "rm -f " + file
	execEnv := func() []string {
		b, _ := json.Marshal([]string{sh, "-c", rm})
		return []string{probe.EnvOp + "=exec", probe.EnvArgs + "=" + string(b)}
	}
	base := []string{"run", "--pin-dir", testPinDir}

	// (a) Controls: without the ceiling, the shell and the probe's exec
	// of the shell remove the file.
	reset()
	if r := clitest.Run(t, nil, append(base, "--", sh, "-c", rm)...); r.Code != 0 || present() {
		t.Fatalf("control: %s -c %q: exit %d, file present %v (stderr: %s)", sh, rm, r.Code, present(), r.Stderr)
	}
	reset()
	r := clitest.Run(t, execEnv(), append(base, "--", self)...)
	if res, err := probe.ParseResult([]byte(r.Stdout)); r.Code != 0 || err != nil || res.Errno != 0 || res.Setup != "" || present() {
		t.Fatalf("control: the probe's exec of %s: exit %d, %v %v, file present %v (stderr: %s)", sh, r.Code, res, err, present(), r.Stderr)
	}

	// (b) Refused before anything runs.
	refusals := []struct {
		name string
		env  []string
		args []string
		says []string
	}{
		{"the command is /bin/sh", nil, []string{"--shell=none", "--", sh, "-c", rm}, []string{sh}},
		{"shell=none from --role advisor", nil, []string{"--role", "advisor", "--", sh, "-c", rm}, []string{sh}},
		{"--exec-allow busybox", execEnv(), []string{"--shell=none", "--exec-allow", busybox, "--", self}, []string{busybox, "multi-call binary", "BusyBox"}},
		{"--exec-allow a copy of busybox", execEnv(), []string{"--shell=none", "--exec-allow", copyOf(t, busybox), "--", self}, []string{"multi-call binary"}},
	}
	for _, ld := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-musl-x86_64.so.1"} {
		if _, err := os.Stat(ld); err == nil {
			refusals = append(refusals, struct {
				name string
				env  []string
				args []string
				says []string
			}{"--exec-allow the loader " + ld, execEnv(), []string{"--shell=none", "--exec-allow", ld, "--", self}, []string{ld, "dynamic loader"}})
		}
	}
	for _, c := range refusals {
		reset()
		r := clitest.Run(t, c.env, append(base, c.args...)...)
		if !present() {
			t.Errorf("BYPASS: %s: the file was removed (exit %d, stderr: %s)", c.name, r.Code, r.Stderr)
		}
		if r.Code != cli.ExitCannotEnforce || r.Stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want %d and the command never run (stderr: %s)", c.name, r.Code, r.Stdout, cli.ExitCannotEnforce, r.Stderr)
		}
		for _, s := range append(c.says, "cannot enforce: shell=none") {
			if !strings.Contains(r.Stderr, s) {
				t.Errorf("%s: stderr does not say %q: %s", c.name, s, r.Stderr)
			}
		}
	}

	// (c) A command that is not such a program runs under shell=none;
	// its exec of /bin/sh is denied and the file stays.
	reset()
	r = clitest.Run(t, execEnv(), append(base, "--shell=none", "--", self)...)
	if !present() {
		t.Errorf("BYPASS: shell=none: the probe's exec of %s removed the file (exit %d, stdout %s, stderr %s)", sh, r.Code, r.Stdout, r.Stderr)
	}
	switch {
	case vmtest.InVM() && !vmtest.NoBPFLSM(), r.Code != cli.ExitCannotEnforce:
		res, err := probe.ParseResult([]byte(r.Stdout))
		if r.Code != 0 || err != nil || res.Setup != "" {
			t.Fatalf("shell=none, a non-shell command: exit %d, probe %v (%v), want it to run (stderr: %s)", r.Code, res, err, r.Stderr)
		}
		if res.Errno != unix.EPERM {
			t.Errorf("BYPASS: shell=none: exec of %s: %v, want EPERM", sh, res)
		}
		if !strings.Contains(r.Stderr, "enforcerd: denied") {
			t.Errorf("no denial printed on stderr: %s", r.Stderr)
		}
	default:
		// No BPF LSM here: shell=none cannot be enforced at all.
		if !strings.Contains(r.Stderr, "shell") {
			t.Errorf("exit 125 without saying that shell cannot be enforced: %s", r.Stderr)
		}
	}
}

// copyOf copies the executable at p into a temp dir (another inode, the
// same content).
func copyOf(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "renamed-tool")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}
