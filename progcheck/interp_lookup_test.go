package progcheck

// Programs that run other programs by way of what the kernel starts for
// them (threat model X6): an ELF's program interpreter, and the file a
// PATH lookup of the entrypoint may pick.

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/testelf"

	"github.com/enforcerd/enforcerd/test/testroot"
	"golang.org/x/sys/unix"
)

// interpStubELF is testelf.InterpStub, failing the test on error.
func interpStubELF(t testing.TB, interp string) []byte {
	t.Helper()
	b, err := testelf.InterpStub(interp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestELFWhoseInterpreterIsBusyBoxIsRefused: an entrypoint (or
// --exec-allow file) that is a 400-byte ELF whose PT_INTERP is BusyBox
// runs BusyBox, with every applet, in the one allowed process: the kernel
// maps and starts a program interpreter with no exec check of its own.
// The stub carries none of BusyBox's markers, its SONAME is not a
// loader's and it is not in /etc/shells; it is refused because its
// program interpreter is not a dynamic loader by content.
//
// Control: the stub really is BusyBox's sh on this host (it prints what
// sh -c echo prints), and BusyBox itself is refused. Then CheckHost and
// the daemon's entrypoint vetting (Program.Check) refuse the stub
// (ErrUnsafe). VM: cmd/enforcerd/run TestRunShellNoneRefusesBusyBoxInterpStub,
// daemon TestVMRuncShellNoneRefusesBusyBoxInterpStub.
func TestELFWhoseInterpreterIsBusyBoxIsRefused(t *testing.T) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox (scripts/setup-deps installs busybox-static)")
	}
	if bb, err = filepath.EvalSymlinks(bb); err != nil {
		t.Fatal(err)
	}
	if !isStatic(t, bb) {
		t.Skip("busybox is not static: the stub only works with a static interpreter")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "sh") // busybox picks the applet from argv[0]
	if err := os.WriteFile(stub, interpStubELF(t, bb), 0o755); err != nil {
		t.Fatal(err)
	}
	// (a) Control: the stub runs BusyBox's sh.
	out, err := exec.Command(stub, "-c", "echo stub-ran-sh").CombinedOutput()
	if err != nil || string(out) != "stub-ran-sh\n" {
		t.Fatalf("control: %s -c echo: %q %v (the stub should run BusyBox's sh)", stub, out, err)
	}
	// BusyBox itself is refused: the check works for the real file.
	if err := CheckHost(bb); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("control: CheckHost(%s) = %v, want ErrUnsafe", bb, err)
	}
	// (b) The stub, which runs exactly that BusyBox, must be refused too.
	if err := CheckHost(stub); !errors.Is(err, ErrUnsafe) {
		t.Errorf("BYPASS: CheckHost(%s) = %v: a %d-byte ELF whose PT_INTERP is %s (a multi-call binary) is not refused; "+
			"under shell=none it runs every BusyBox applet from the one allowed file", stub, err, len(interpStubELF(t, bb)), bb)
	}
	if _, err := (Program{Path: "/sh", Root: dir}).Check(); !errors.Is(err, ErrUnsafe) {
		t.Errorf("BYPASS: Program{/sh in %s}.Check() = %v (the daemon's entrypoint vetting)", dir, err)
	}
}

func isStatic(t *testing.T, p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC
}

// TestNoexecDecoyDoesNotHidePATHCandidate: Go's exec.LookPath (runc's)
// since Go 1.20 skips a PATH entry whose file fails eaccess(X_OK), e.g.
// on a noexec mount; runc resolves args[0] that way inside the container
// after the mounts of config.json are made, so a bundle can bind a
// harmless decoy noexec in front of BusyBox. The daemon vets every file a
// lookup could pick (Program.Check over Root.Candidates), and Resolve
// skips noexec files as execve would: the file the runtime execs is the
// one Resolve names, and it is refused.
//
// Needs root (a noexec tmpfs). Control: Go's LookPath picks the BusyBox
// copy past the decoy.
func TestNoexecDecoyDoesNotHidePATHCandidate(t *testing.T) {
	testroot.Require(t, "mounts a noexec tmpfs")
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox")
	}
	dir := t.TempDir()
	decoyDir, binDir := filepath.Join(dir, "decoy"), filepath.Join(dir, "bin")
	for _, d := range []string{decoyDir, binDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("tmpfs", decoyDir, "tmpfs", unix.MS_NOEXEC, "mode=755"); err != nil {
		t.Skipf("mount tmpfs noexec: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(decoyDir, unix.MNT_DETACH) })
	self, err := os.ReadFile("/proc/self/exe") // harmless: not a shell
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(decoyDir, "sh"), self, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binDir, "sh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	pathEnv := decoyDir + ":" + binDir

	t.Setenv("PATH", pathEnv)
	runtime, err := exec.LookPath("sh") // what runc (Go >= 1.20) resolves
	if err != nil {
		t.Fatal(err)
	}
	if runtime != filepath.Join(binDir, "sh") {
		t.Fatalf("control: Go's LookPath picked %s, want the BusyBox copy %s past the noexec decoy", runtime, filepath.Join(binDir, "sh"))
	}
	vetted, err := Program{Path: "sh", Root: "/", EnvPath: pathEnv}.Check()
	if vetted != runtime {
		t.Errorf("BYPASS: for process.args[0]=\"sh\" with PATH=%s the daemon names %s, but Go's exec.LookPath, "+
			"which runc uses, picks %s: the file a runtime built with Go >= 1.20 execs is not the one named", pathEnv, vetted, runtime)
	}
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), runtime) {
		t.Errorf("BYPASS: Program{sh, PATH=%s}.Check() = %v: the BusyBox copy %s that Go's LookPath picks is not refused", pathEnv, err, runtime)
	}
}
