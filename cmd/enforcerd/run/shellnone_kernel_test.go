package run

// The kernel rule under the userland check (threat model X2): with a
// pending shell=none registration made directly, the exec that activates
// it names the entrypoint, and every binfmt stage after it must be on the
// allow list. Needs BPF LSM (the vmtest guest; see
// shellnone_entry_test.go).

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

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/denial"
	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/entry"
	"github.com/enforcerd/enforcerd/policy"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/vmtest"
)

// TestShellNoneKernelDeniesUnallowedScriptInterpreter (X2, the kernel
// rule under the userland check): the exec that activates a pending
// shell=none registration notes the file it names as the entrypoint, and
// every later binfmt stage of that exec (a script's interpreter) must be
// on the registration's allow list, as any exec after activation: else
// its open for exec is refused (file_open, EPERM, with a record). The registration
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
	enf, mount, own := kernelShellNone(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
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
		en := entry.Entry{Ceiling: ceiling, Pending: true}
		for _, a := range allow {
			id, err := entry.FileIDOf(a)
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
	// denied reports whether a denial record names the file at p and
	// registered cgroup id: of its open for exec (file_open, rule
	// exec-open: the script passed its check, its interpreter is opened
	// next) or of its own binfmt stage (bprm_check_security).
	denied := func(id uint64, p string) bool {
		t.Helper()
		fid, err := entry.FileIDOf(p)
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
			byHook := d.Hook == denial.HookBprmCheckSecurity || d.Hook == denial.HookFileOpen && d.Rule == denial.RuleExecOpen
			if d.CeilingCgroupID == id && byHook && d.Field == "shell" && !d.Audited &&
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
			t.Errorf("%s: no denial record (file_open exec-open or bprm_check_security) for %s naming registered cgroup %d", sc.name, sc.interp, id)
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
	runtimeWait()
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
	enf, mount, own := kernelShellNone(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "mark")
	ent := filepath.Join(dir, "entry")
	if err := os.WriteFile(ent, []byte("not a program the kernel can run\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(n int, ceiling policy.KernelCeiling) string {
		t.Helper()
		env := []string{enoexecFallbackEnv + "=" + ent, "ENFORCERD_TEST_FALLBACK_MARK=" + mark}
		return runtimeRun(t, enf, mount, own, fmt.Sprintf("enforcerd-fallback-%d-%d", os.Getpid(), n), env, entry.Entry{Ceiling: ceiling, Pending: true})
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

// firstExecEnv makes this test binary a runtime that, once released,
// execs the file it names (argv[0] the file) with its own environment
// minus this variable: a copy of this binary then runs as the probe the
// environment names.
const firstExecEnv = "ENFORCERD_TEST_FIRST_EXEC"

func init() {
	file := os.Getenv(firstExecEnv)
	if file == "" {
		return
	}
	runtimeWait()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, firstExecEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(file, []string{file}, env)
	fmt.Println("exec entrypoint:", err)
	os.Exit(4)
}

// TestShellNoneKernelFirstExecMustBeTheVettedEntrypoint (X7): a pending
// shell=none registration that lists its vetted entrypoints
// (Entry.Entrypoints) takes only one of them as its first exec: a file
// swapped in at the entrypoint's path after the vetting (here: the
// runtime execs another file) is refused, not taken. Tri-state: (a)
// without a listed entrypoint the other file is taken and runs (it
// creates its mark); (b) with the vetted one listed, its exec fails with
// EPERM; (c) its mark is absent. The listed file itself still runs.
func TestShellNoneKernelFirstExecMustBeTheVettedEntrypoint(t *testing.T) {
	enf, mount, own := kernelShellNone(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	vetted, swapped := copyOf(t, self), copyOf(t, self)
	vettedID, err := entry.FileIDOf(vetted)
	if err != nil {
		t.Fatal(err)
	}
	none := policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}
	run := func(n int, file, mark string, ent entry.Entry, afterRegister ...func()) string {
		t.Helper()
		env := append([]string{firstExecEnv + "=" + file}, probe.Env("create", mark)...)
		ent.Ceiling, ent.Pending = none, true
		return runtimeRun(t, enf, mount, own, fmt.Sprintf("enforcerd-firstexec-%d-%d", os.Getpid(), n), env, ent, afterRegister...)
	}
	listed := entry.Entry{Entrypoints: []entry.FileID{vettedID}}
	// (a) control: nothing listed, the swapped-in file is taken and runs.
	mark := filepath.Join(dir, "swapped-unlisted")
	if out := run(1, swapped, mark, entry.Entry{}); !pathExists(mark) {
		t.Fatalf("control (no entrypoint listed): the first exec's file did not run: %s", out)
	}
	// The vetted entrypoint runs.
	mark = filepath.Join(dir, "vetted")
	if out := run(2, vetted, mark, listed); !pathExists(mark) {
		t.Fatalf("the listed entrypoint did not run: %s", out)
	}
	// (b), (c): another file in its place is refused, and never runs.
	mark = filepath.Join(dir, "swapped")
	out := run(3, swapped, mark, listed)
	t.Logf("listed entrypoint, another file exec'd: %s", out)
	if !strings.Contains(out, "exec entrypoint: operation not permitted") {
		t.Errorf("BYPASS: the first exec of a file that is not the vetted entrypoint: %q, want EPERM", out)
	}
	if pathExists(mark) {
		t.Errorf("BYPASS: a file swapped in for the vetted entrypoint ran (%s created)", mark)
	}
	// The vetted file itself rewritten in place after the registration
	// (same device and inode, the same bytes even): a change since the
	// registration, refused as under a ceiling in force (X4).
	mark = filepath.Join(dir, "rewritten")
	rewrite := func() {
		b, err := os.ReadFile(vetted)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vetted, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if id, err := entry.FileIDOf(vetted); err != nil || id != vettedID {
			t.Fatalf("the rewrite changed the file's identity (%v, %v): the case would prove nothing", id, err)
		}
	}
	out = run(4, vetted, mark, listed, rewrite)
	t.Logf("listed entrypoint rewritten in place: %s", out)
	if !strings.Contains(out, "exec entrypoint: operation not permitted") {
		t.Errorf("BYPASS: the first exec of the vetted entrypoint rewritten after the registration: %q, want EPERM", out)
	}
	if pathExists(mark) {
		t.Errorf("BYPASS: the vetted entrypoint rewritten in place after the registration ran (%s created)", mark)
	}
}

// kernelShellNone opens the pinned enforcer for this file's kernel tests
// and returns it with the cgroup2 mount and this process's cgroup; a host
// without BPF LSM or tp_btf is a skip (a failure inside the VM).
func kernelShellNone(t *testing.T) (enf *enforcer.Enforcer, mount, own string) {
	t.Helper()
	vmtest.RequireRoot(t)
	mount, err := cgroup.Mountpoint()
	if err != nil {
		t.Fatal(err)
	}
	own, err = cgroup.PidGroup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	enf, err = enforcer.Open(enforcer.Options{PinDir: testPinDir, CgroupMount: mount})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Close() })
	if !enf.Coverage(policy.KernelCeiling{Network: true, Write: true, Shell: policy.ShellNone}).Full() || !enf.CanActivateAtExec() {
		vmtest.Skip(t, "shell=none and activation at exec need BPF LSM and tp_btf")
	}
	return enf, mount, own
}

// runtimeRun starts this test binary as a runtime (env selects its init
// mode: enoexecFallbackEnv, firstExecEnv) directly inside a fresh cgroup
// name below own, waits until it runs (its own exec must not be the one
// that activates the registration), registers entry there, calls after,
// releases the runtime to exec and returns its output once it ended.
func runtimeRun(t *testing.T, enf *enforcer.Enforcer, mount, own, name string, env []string, ent entry.Entry, after ...func()) string {
	t.Helper()
	cg, err := cgroup.Create(mount, path.Join(own, name))
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
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = cgroup.SysProcAttr(cgdir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	cmd.ExtraFiles = []*os.File{readyW}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyW.Close()
	cgdir.Close()
	defer cmd.Wait()
	defer stdin.Close()
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the runtime did not start: %v", err)
	}
	if err := enf.Register(cg, ent); err != nil {
		t.Fatal(err)
	}
	defer enf.Unregister(cg.ID)
	for _, f := range after {
		f()
	}
	stdin.Write([]byte{1})
	stdin.Close()
	cmd.Wait()
	return out.String()
}

// runtimeWait is the runtime's side of runtimeRun: it says it runs (a
// byte on descriptor 3: the exec that started it has passed
// sched_process_exec, so a registration made now is not activated by this
// runtime's own exec) and waits to be released (a byte on stdin); it
// exits 3 when either fails.
func runtimeWait() {
	ready := os.NewFile(3, "ready")
	if _, err := ready.Write([]byte{1}); err != nil {
		os.Exit(3)
	}
	ready.Close()
	if _, err := os.Stdin.Read(make([]byte, 1)); err != nil {
		os.Exit(3)
	}
}
