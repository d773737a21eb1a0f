package run

// shell=none entrypoints that would run a shell by way of what the kernel
// starts for them (threat model X2, X6): a script's interpreter, an ELF's
// program interpreter. The run tests need BPF LSM for their controls' and
// refusals' meaning in full (the vmtest guest):
//
//	scripts/vmtest --kernel 6.12 --with-tests --run '/t/cmd/enforcerd/run/run.test -test.run ShellNone -test.v'
//
// (the path of the packed test binary is printed by scripts/vmtest).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/test/testelf"

	"github.com/enforcerd/enforcerd/test/vmtest"

	"github.com/enforcerd/enforcerd/cmd/enforcerd/cli"
	"github.com/enforcerd/enforcerd/cmd/enforcerd/clitest"
)

// shellNoneRun runs `enforcerd run` with args; it skips (a failure in the
// VM) when this host cannot enforce shell=none at all.
func shellNoneRun(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	r := clitest.Run(t, nil, append([]string{"run", "--pin-dir", testPinDir}, args...)...)
	if r.Code == cli.ExitCannotEnforce && strings.Contains(r.Stderr, "needs BPF LSM") {
		vmtest.Skip(t, "shell=none needs BPF LSM: run this in the vmtest guest ("+r.Stderr+")")
	}
	return r
}

func pathExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestRunShellNoneRefusesScriptWithShellInterpreter: under shell=none
// a script's interpreter must itself be allowed (README, threat model
// X6). `run` classifies a "#!" CMD by its interpreter and refuses (exit
// 125, CMD never runs) a script whose interpreter is a shell or a
// multi-call binary (the VM's /bin/sh is BusyBox: its builtins and NOFORK
// applets such as rm would run in the one process), naming the
// interpreter. The kernel holds the same line without this check
// (TestShellNoneKernelDeniesUnallowedScriptInterpreter).
//
// Tri-state: (a) without a ceiling the script removes VICTIM (rm) and
// writes MARK (a builtin redirect); (b) with --shell=none run exits 125
// naming /bin/sh; (c) VICTIM is still there, MARK absent, the script's
// output absent.
func TestRunShellNoneRefusesScriptWithShellInterpreter(t *testing.T) {
	vmtest.RequireRoot(t)
	dir := t.TempDir()
	victim, mark := filepath.Join(dir, "victim"), filepath.Join(dir, "mark")
	script := filepath.Join(dir, "entry.sh")
	body := "#!/bin/sh\nrm -f " + victim + "\necho shell-ran > " + mark + "\necho SCRIPT-RAN\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	reset := func() {
		os.Remove(mark)
		if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// (a) control
	reset()
	if r := shellNoneRun(t, "--", script); r.Code != 0 || pathExists(victim) || !pathExists(mark) {
		t.Fatalf("control: exit %d, victim present %v, mark present %v (stderr %s)", r.Code, pathExists(victim), pathExists(mark), r.Stderr)
	}
	// (b) shell=none
	reset()
	r := shellNoneRun(t, "--shell=none", "--", script)
	t.Logf("shell=none, CMD a #!/bin/sh script: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	if pathExists(mark) || strings.Contains(r.Stdout, "SCRIPT-RAN") {
		t.Errorf("BYPASS: enforcerd run --shell=none -- %s: the script's interpreter /bin/sh ran as the entrypoint (its builtin redirect wrote %s), "+
			"although a script's interpreter is documented to be exec-checked and to need allowing", script, mark)
	}
	if !pathExists(victim) {
		t.Errorf("BYPASS: ... and its rm (a BusyBox NOFORK applet here) removed %s without any exec", victim)
	}
	if r.Code != cli.ExitCannotEnforce || !strings.Contains(r.Stderr, "/bin/sh (the #! interpreter of "+script+")") {
		t.Errorf("enforcerd run --shell=none -- %s: exit %d, want %d naming the interpreter /bin/sh: %s", script, r.Code, cli.ExitCannotEnforce, r.Stderr)
	}
}

// interpStubELF is testelf.InterpStub, failing the test on error.
func interpStubELF(t testing.TB, interp string) []byte {
	t.Helper()
	b, err := testelf.InterpStub(interp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRunShellNoneRefusesBusyBoxInterpStub: CMD is a ~400-byte ELF whose
// PT_INTERP is /bin/busybox. The kernel would allow-list it as the
// entrypoint, map BusyBox as its "loader" (no exec check of its own) and
// start it: BusyBox's sh, and through any exec of the stub's inode (a hard
// link named busybox) any applet. run refuses it (exit 125): its program
// interpreter is not a dynamic loader by content.
//
// Tri-state on VICTIM and MADE: (a) control without ceiling: sh runs, rm
// removes VICTIM, the hard-linked stub runs BusyBox touch and creates
// MADE; (b) with --shell=none exit 125 and nothing run; (c) VICTIM still
// there, MADE absent.
func TestRunShellNoneRefusesBusyBoxInterpStub(t *testing.T) {
	vmtest.RequireRoot(t)
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox (the VM has it)")
	}
	if bb, err = filepath.EvalSymlinks(bb); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "sh")
	if err := os.WriteFile(stub, interpStubELF(t, bb), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "l"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l", "busybox") // same inode as the stub
	if err := os.Link(stub, link); err != nil {
		t.Fatal(err)
	}
	victim, made := filepath.Join(dir, "victim"), filepath.Join(dir, "made")
	cmd := "rm -f " + victim + "; " + link + " touch " + made + "; echo STUB-SH-RAN"
	reset := func() {
		os.Remove(made)
		if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reset()
	if r := shellNoneRun(t, "--", stub, "-c", cmd); r.Code != 0 || pathExists(victim) || !pathExists(made) {
		t.Fatalf("control: exit %d, victim present %v, made present %v (stdout %s stderr %s)", r.Code, pathExists(victim), pathExists(made), r.Stdout, r.Stderr)
	}
	reset()
	r := shellNoneRun(t, "--shell=none", "--", stub, "-c", cmd)
	t.Logf("shell=none, CMD a PT_INTERP=%s stub: exit %d\nstdout: %s\nstderr: %s", bb, r.Code, r.Stdout, r.Stderr)
	if r.Code != cli.ExitCannotEnforce || strings.Contains(r.Stdout, "STUB-SH-RAN") {
		t.Errorf("BYPASS: enforcerd run --shell=none -- %s (PT_INTERP %s): exit %d, want %d (a multi-call binary in all but name)", stub, bb, r.Code, cli.ExitCannotEnforce)
	}
	if !strings.Contains(r.Stderr, "program interpreter "+bb+" is not a dynamic loader") {
		t.Errorf("enforcerd run --shell=none -- %s: stderr does not say that its program interpreter %s is not a dynamic loader: %s", stub, bb, r.Stderr)
	}
	if !pathExists(victim) || pathExists(made) {
		t.Errorf("BYPASS: BusyBox applets ran under shell=none: victim removed %v, %s created by an allowed exec of the stub %v", !pathExists(victim), made, pathExists(made))
	}
}
