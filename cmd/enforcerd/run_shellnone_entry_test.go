package main

// shell=none entrypoints that would run a shell by way of what the kernel
// starts for them (threat model X2, X6): a script's interpreter, an ELF's
// program interpreter. The run tests need BPF LSM for their controls' and
// refusals' meaning in full (the vmtest guest):
//
//	scripts/vmtest --kernel 6.12 --with-tests --run '/t/cmd/enforcerd.test -test.run ShellNone -test.v'
//
// (the path of the packed test binary is printed by scripts/vmtest).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/internal/testelf"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/internal/probe"
	"github.com/enforcerd/enforcerd/internal/vmtest"
	"github.com/enforcerd/enforcerd/policy"
)

// shellNoneRun runs `enforcerd run` with args; it skips (a failure in the
// VM) when this host cannot enforce shell=none at all.
func shellNoneRun(t *testing.T, args ...string) runResult {
	t.Helper()
	r := enforcerd(t, nil, append([]string{"run", "--pin-dir", testPinDir}, args...)...)
	if r.code == exitCannotEnforce && strings.Contains(r.stderr, "needs BPF LSM") {
		vmtest.Skip(t, "shell=none needs BPF LSM: run this in the vmtest guest ("+r.stderr+")")
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
	if r := shellNoneRun(t, "--", script); r.code != 0 || pathExists(victim) || !pathExists(mark) {
		t.Fatalf("control: exit %d, victim present %v, mark present %v (stderr %s)", r.code, pathExists(victim), pathExists(mark), r.stderr)
	}
	// (b) shell=none
	reset()
	r := shellNoneRun(t, "--shell=none", "--", script)
	t.Logf("shell=none, CMD a #!/bin/sh script: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	if pathExists(mark) || strings.Contains(r.stdout, "SCRIPT-RAN") {
		t.Errorf("BYPASS: enforcerd run --shell=none -- %s: the script's interpreter /bin/sh ran as the entrypoint (its builtin redirect wrote %s), "+
			"although a script's interpreter is documented to be exec-checked and to need allowing", script, mark)
	}
	if !pathExists(victim) {
		t.Errorf("BYPASS: ... and its rm (a BusyBox NOFORK applet here) removed %s without any exec", victim)
	}
	if r.code != exitCannotEnforce || !strings.Contains(r.stderr, "/bin/sh (the #! interpreter of "+script+")") {
		t.Errorf("enforcerd run --shell=none -- %s: exit %d, want %d naming the interpreter /bin/sh: %s", script, r.code, exitCannotEnforce, r.stderr)
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
	if r := shellNoneRun(t, "--", stub, "-c", cmd); r.code != 0 || pathExists(victim) || !pathExists(made) {
		t.Fatalf("control: exit %d, victim present %v, made present %v (stdout %s stderr %s)", r.code, pathExists(victim), pathExists(made), r.stdout, r.stderr)
	}
	reset()
	r := shellNoneRun(t, "--shell=none", "--", stub, "-c", cmd)
	t.Logf("shell=none, CMD a PT_INTERP=%s stub: exit %d\nstdout: %s\nstderr: %s", bb, r.code, r.stdout, r.stderr)
	if r.code != exitCannotEnforce || strings.Contains(r.stdout, "STUB-SH-RAN") {
		t.Errorf("BYPASS: enforcerd run --shell=none -- %s (PT_INTERP %s): exit %d, want %d (a multi-call binary in all but name)", stub, bb, r.code, exitCannotEnforce)
	}
	if !strings.Contains(r.stderr, "program interpreter "+bb+" is not a dynamic loader") {
		t.Errorf("enforcerd run --shell=none -- %s: stderr does not say that its program interpreter %s is not a dynamic loader: %s", stub, bb, r.stderr)
	}
	if !pathExists(victim) || pathExists(made) {
		t.Errorf("BYPASS: BusyBox applets ran under shell=none: victim removed %v, %s created by an allowed exec of the stub %v", !pathExists(victim), made, pathExists(made))
	}
}

// TestShellNoneKernelDeniesUnallowedScriptInterpreter (X2, the kernel
// rule under the userland check): the exec that activates a pending
// shell=none registration notes the file it names as the entrypoint, and
// every later binfmt stage of that exec (a script's interpreter) must be
// on the registration's allow list, as any exec after activation: else
// bprm_check_security denies it (EPERM, with a record). The registration
// is made here directly (enforcer.Register, pending, as `run` and the OCI
// hook make it) so that no program check refuses the script first: its
// interpreters are a copy of this test binary (a program progcheck
// passes) and /bin/sh (BusyBox in the VM).
//
// Tri-state per interpreter: (a) under a pending shell=full registration
// the script runs (the interpreter, a probe, creates MARK; sh writes it);
// (b) under a pending shell=none registration the exec fails with EPERM
// or EACCES; (c) MARK is absent. With the interpreter on the allow list
// the script runs under shell=none too.
func TestShellNoneKernelDeniesUnallowedScriptInterpreter(t *testing.T) {
	vmtest.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	own, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	if !enf.Coverage(policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}).Full() || !enf.CanActivateAtExec() {
		vmtest.Skip(t, "shell=none and activation at exec need BPF LSM and tp_btf")
	}
	rd, err := enf.NewReader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	interp := copyOf(t, self) // a program progcheck passes, not allowed
	scripts := []struct{ name, interp, file, body string }{
		{"a probe copy", interp, "entry-probe.sh", "#!" + interp + "\n"},
		{"/bin/sh", "/bin/sh", "entry-sh.sh", "#!/bin/sh\necho shell-ran > " + mark + "\n"},
	}
	probeEnv := func() []string {
		b, _ := json.Marshal([]string{mark})
		return append(os.Environ(), probe.EnvOp+"=create", probe.EnvArgs+"="+string(b))
	}
	// run execs script as the first exec in a fresh cgroup registered
	// pending with ceiling and allow list; it returns the cgroup's id.
	n := 0
	run := func(script string, ceiling policy.KernelCeiling, allow ...string) (uint64, string, error) {
		t.Helper()
		n++
		cg, err := cgroup.Create(mount, path.Join(own, fmt.Sprintf("enforcerd-interp-%d-%d", os.Getpid(), n)))
		if err != nil {
			t.Fatal(err)
		}
		defer cg.Remove(5 * time.Second)
		en := enforcer.Entry{Ceiling: ceiling, Pending: true}
		for _, a := range allow {
			id, err := enforcer.FileIDOf(a)
			if err != nil {
				t.Fatal(err)
			}
			en.ExecAllow = append(en.ExecAllow, id)
		}
		if err := enf.Register(cg, en); err != nil {
			t.Fatal(err)
		}
		defer enf.Unregister(cg.ID)
		cgdir, err := cg.OpenDir()
		if err != nil {
			t.Fatal(err)
		}
		defer cgdir.Close()
		cmd := exec.Command(script)
		cmd.Env = probeEnv()
		cmd.SysProcAttr = cgroup.SysProcAttr(cgdir)
		out, err := cmd.CombinedOutput()
		return cg.ID, string(out), err
	}
	// denied reports whether a denial record of bprm_check_security names
	// the file at p and registered cgroup id.
	denied := func(id uint64, p string) bool {
		t.Helper()
		fid, err := enforcer.FileIDOf(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := rd.Flush(); err != nil {
			t.Fatal(err)
		}
		found := false
		for {
			d, err := rd.Read()
			if errors.Is(err, enforcer.ErrFlushed) {
				return found
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.CeilingCgroupID == id && d.Hook == enforcer.HookBprmCheckSecurity && d.Field == "shell" && !d.Audited &&
				d.Errno == syscall.EPERM && d.Object.Ino == fid.Ino && d.Object.Dev == fid.Dev {
				found = true
			}
		}
	}
	full := policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}
	none := policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}
	for _, sc := range scripts {
		script := filepath.Join(dir, sc.file)
		if err := os.WriteFile(script, []byte(sc.body), 0o755); err != nil {
			t.Fatal(err)
		}
		// (a) control: the interpreter runs and creates MARK.
		os.Remove(mark)
		if _, out, err := run(script, full); err != nil || !pathExists(mark) {
			t.Fatalf("%s: control (pending shell=full): %v, mark present %v: %s", sc.name, err, pathExists(mark), out)
		}
		// (b), (c): denied at the interpreter stage, nothing ran.
		os.Remove(mark)
		id, out, err := run(script, none)
		t.Logf("%s: pending shell=none, script %s: %v: %s", sc.name, script, err, out)
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) {
			t.Errorf("BYPASS: %s: the exec of %s (#! interpreter not allowed) under a pending shell=none registration: %v, want EPERM or EACCES", sc.name, script, err)
		}
		if pathExists(mark) {
			t.Errorf("BYPASS: %s: the interpreter ran: %s was created", sc.name, mark)
		}
		if !denied(id, sc.interp) {
			t.Errorf("%s: no denial record of bprm_check_security for %s naming registered cgroup %d", sc.name, sc.interp, id)
		}
	}
	// Allowed: the probe copy on the allow list runs under shell=none.
	os.Remove(mark)
	script := filepath.Join(dir, scripts[0].file)
	if _, out, err := run(script, none, interp); err != nil || !pathExists(mark) {
		t.Errorf("shell=none with the interpreter %s allowed: %v, mark present %v: %s", interp, err, pathExists(mark), out)
	}
}

// enoexecFallbackEnv makes this test binary play a runtime whose exec of
// the entrypoint falls back to /bin/sh on ENOEXEC, as glibc's execvp does:
// it waits for a byte on stdin, execs $ENFORCERD_TEST_FALLBACK_FILE, and
// on ENOEXEC execs /bin/sh -c "echo fallback-ran > $ENFORCERD_TEST_FALLBACK_MARK".
const enoexecFallbackEnv = "ENFORCERD_TEST_FALLBACK_FILE"

func init() {
	file := os.Getenv(enoexecFallbackEnv)
	if file == "" {
		return
	}
	b := make([]byte, 1)
	if _, err := os.Stdin.Read(b); err != nil {
		os.Exit(3)
	}
	env := []string{"PATH=/bin:/usr/bin"}
	err := syscall.Exec(file, []string{file}, env)
	fmt.Println("exec entrypoint:", err)
	if !errors.Is(err, syscall.ENOEXEC) {
		os.Exit(4)
	}
	err = syscall.Exec("/bin/sh", []string{"sh", "-c", "echo fallback-ran > " + os.Getenv("ENFORCERD_TEST_FALLBACK_MARK")}, env)
	fmt.Println("exec fallback:", err)
	os.Exit(5)
}

// TestShellNoneKernelEntrypointIsTheFirstExec (X2): the entrypoint of a
// pending shell=none registration is the file its first exec names, even
// when that exec then fails: a later exec while the registration is still
// pending must be on the allow list. Otherwise a runtime's fallback (glibc's
// execvp runs /bin/sh with the file as a script on ENOEXEC) would make
// /bin/sh the entrypoint instead of the program the daemon vetted (a file
// that is neither ELF nor script passes progcheck: the kernel cannot run it).
//
// The runtime is this test binary, already in the cgroup before the
// registration (as runc's init is), released after it. Tri-state: (a)
// under a pending shell=full registration the fallback sh runs and writes
// MARK; (b) under shell=none its exec fails with EPERM; (c) MARK is absent.
func TestShellNoneKernelEntrypointIsTheFirstExec(t *testing.T) {
	vmtest.RequireRoot(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	own, err := cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	enf, err := enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	defer enf.Close()
	if !enf.Coverage(policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}).Full() || !enf.CanActivateAtExec() {
		vmtest.Skip(t, "shell=none and activation at exec need BPF LSM and tp_btf")
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	entry := filepath.Join(dir, "entry")
	if err := os.WriteFile(entry, []byte("not a program the kernel can run\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(n int, ceiling policy.KernelCeiling) string {
		t.Helper()
		cg, err := cgroup.Create(mount, path.Join(own, fmt.Sprintf("enforcerd-fallback-%d-%d", os.Getpid(), n)))
		if err != nil {
			t.Fatal(err)
		}
		defer cg.Remove(5 * time.Second)
		cgdir, err := cg.OpenDir()
		if err != nil {
			t.Fatal(err)
		}
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), enoexecFallbackEnv+"="+entry, "ENFORCERD_TEST_FALLBACK_MARK="+mark)
		cmd.SysProcAttr = cgroup.SysProcAttr(cgdir)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cgdir.Close()
		defer cmd.Wait()
		defer stdin.Close()
		if err := enf.Register(cg, enforcer.Entry{Ceiling: ceiling, Pending: true}); err != nil {
			t.Fatal(err)
		}
		defer enf.Unregister(cg.ID)
		stdin.Write([]byte{1})
		stdin.Close()
		cmd.Wait()
		return out.String()
	}
	os.Remove(mark)
	if out := run(1, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellFull}); !pathExists(mark) || !strings.Contains(out, "exec entrypoint: exec format error") {
		t.Fatalf("control (pending shell=full): the fallback /bin/sh did not run (mark present %v): %s", pathExists(mark), out)
	}
	os.Remove(mark)
	out := run(2, policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone})
	t.Logf("pending shell=none: %s", out)
	if pathExists(mark) {
		t.Errorf("BYPASS: after the entrypoint's exec failed with ENOEXEC, the runtime's fallback /bin/sh ran under shell=none (%s written)", mark)
	}
	if !strings.Contains(out, "exec fallback: operation not permitted") {
		t.Errorf("pending shell=none: the fallback exec of /bin/sh: %q, want EPERM", out)
	}
}
