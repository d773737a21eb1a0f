package daemon_test

// shell=none entrypoints that would run a shell by way of what the kernel
// starts for them or of the runtime's PATH lookup (threat model X2, X6),
// through the daemon, the OCI hook and runc. They need BPF LSM (the
// vmtest guest):
//
//	scripts/vmtest --kernel 6.12 --with-tests --run '/t/daemon.test -test.run ShellNone -test.v'

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/progcheck"
	"github.com/enforcerd/enforcerd/test/probe"
	"github.com/enforcerd/enforcerd/test/testelf"
)

// TestVMRuncShellNoneRefusesScriptWithShellInterpreter: wrapping the
// command in a script, the docker-entrypoint.sh pattern of most images,
// would make the image's shell the container's process: a script's
// interpreter runs as a later stage of the entrypoint's exec. The daemon
// classifies a "#!" entrypoint by its interpreter and answers 422
// unsafe_program naming it (the hook fails, runc does not start the
// container); the kernel would deny the interpreter's stage all the same
// (cmd/enforcerd/run TestShellNoneKernelDeniesUnallowedScriptInterpreter).
//
// Tri-state on /victim and /mark in the rootfs: (a) control (shell=full):
// the script runs, rm removes /victim and the builtin redirect writes
// /mark; (b) shell=none: refused, the script never runs; (c) /victim
// still there, /mark absent.
func TestVMRuncShellNoneRefusesScriptWithShellInterpreter(t *testing.T) {
	e := startRuncDaemon(t, "127.0.0.1:19481")
	script := "#!/bin/sh\nrm -f /victim\necho shell-ran > /mark\necho ENTRY-SCRIPT-RAN rm-and-redirect-done\n"
	bundle := func(id, ceiling string) string {
		b := runcBundleProcess(t, e, id, []string{"/entry.sh"}, []string{"PATH=/bin"}, map[string]string{"enforcerd.io/ceiling": ceiling})
		if err := os.WriteFile(filepath.Join(b, "rootfs", "entry.sh"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, "rootfs", "victim"), []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return b
	}
	exists := func(b, name string) bool { _, err := os.Lstat(filepath.Join(b, "rootfs", name)); return err == nil }

	b := bundle("script-ctl", "network=true,write=true")
	code, out := runRunc(t, e, "script-ctl", b)
	if code != 0 || !strings.Contains(out, "ENTRY-SCRIPT-RAN") || exists(b, "victim") || !exists(b, "mark") {
		t.Fatalf("control (shell=full): runc exit %d, victim %v, mark %v:\n%s", code, exists(b, "victim"), exists(b, "mark"), out)
	}
	b = bundle("script-none", "network=true,write=true,shell=none")
	code, out = runRunc(t, e, "script-none", b)
	t.Logf("shell=none, entrypoint /entry.sh (#!/bin/sh, BusyBox): runc exit %d:\n%s", code, out)
	if strings.Contains(out, "ENTRY-SCRIPT-RAN") || exists(b, "mark") || !exists(b, "victim") {
		t.Errorf("BYPASS: shell=none container whose entrypoint is a #!/bin/sh script: BusyBox's sh ran as the container's process "+
			"(mark written %v, /victim removed by the rm applet without exec %v); the interpreter was never exec-checked",
			exists(b, "mark"), !exists(b, "victim"))
	}
	if code == 0 || !strings.Contains(out, "/bin/sh (the #! interpreter of /entry.sh)") || !strings.Contains(out, "unsafe") {
		t.Errorf("shell=none, a #!/bin/sh entrypoint: runc exit %d, want the container refused naming the interpreter /bin/sh:\n%s", code, out)
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

// TestVMRuncShellNoneRefusesBusyBoxInterpStub: the image's entrypoint
// /app/sh is a ~400-byte ELF whose PT_INTERP is the image's /bin/busybox.
// The kernel would allow-list it as the entrypoint and map BusyBox as its
// loader, with no exec check of BusyBox: its sh would run, and a hard
// link of the stub named busybox any applet. The daemon refuses it (422
// unsafe_program: its program interpreter is not a dynamic loader), the
// hook exits 125 and runc does not start the container.
//
// Tri-state on /victim and /made: (a) control (shell=full): the applets
// run; (b) shell=none: refused; (c) /victim still there, /made absent.
func TestVMRuncShellNoneRefusesBusyBoxInterpStub(t *testing.T) {
	e := startRuncDaemon(t, "127.0.0.1:19482")
	stub := interpStubELF(t, "/bin/busybox") // the rootfs's busybox is a copy of the guest's
	args := []string{"/app/sh", "-c", "rm -f /victim; /app/l/busybox touch /made; echo STUB-SH-RAN"}
	bundle := func(id, ceiling string) string {
		b := runcBundleProcess(t, e, id, args, []string{"PATH=/bin"}, map[string]string{"enforcerd.io/ceiling": ceiling})
		app := filepath.Join(b, "rootfs", "app")
		if err := os.MkdirAll(filepath.Join(app, "l"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(app, "sh"), stub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(app, "sh"), filepath.Join(app, "l", "busybox")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, "rootfs", "victim"), []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return b
	}
	exists := func(b, name string) bool { _, err := os.Lstat(filepath.Join(b, "rootfs", name)); return err == nil }
	b := bundle("stub-ctl", "network=true,write=true")
	code, out := runRunc(t, e, "stub-ctl", b)
	if code != 0 || !strings.Contains(out, "STUB-SH-RAN") || exists(b, "victim") || !exists(b, "made") {
		t.Fatalf("control: runc exit %d, victim %v, made %v:\n%s", code, exists(b, "victim"), exists(b, "made"), out)
	}
	b = bundle("stub-none", "network=true,write=true,shell=none")
	code, out = runRunc(t, e, "stub-none", b)
	t.Logf("shell=none, entrypoint a PT_INTERP=/bin/busybox stub: runc exit %d:\n%s", code, out)
	if code == 0 || strings.Contains(out, "STUB-SH-RAN") || exists(b, "made") || !exists(b, "victim") {
		t.Errorf("BYPASS: shell=none container whose entrypoint's PT_INTERP is BusyBox: not refused (runc exit %d); "+
			"applets ran: /victim removed %v, /made created through an allowed exec %v", code, !exists(b, "victim"), exists(b, "made"))
	}
	if !strings.Contains(out, "program interpreter /bin/busybox is not a dynamic loader") {
		t.Errorf("the refusal does not say that the program interpreter /bin/busybox is not a dynamic loader:\n%s", out)
	}
}

// The probe lookpath-init ARG0 PATH CMD plays a Go runtime's init (runc's
// LookPath, built with Go >= 1.20): it waits for a byte on stdin, resolves
// ARG0 with exec.LookPath in PATH and execs it with argv ARG0 -c CMD.
func init() {
	probe.Register("lookpath-init", func(r *probe.Result, a []string) {
		if _, err := os.Stdin.Read(make([]byte, 1)); !r.Require(err, "wait for the runtime") {
			return
		}
		os.Setenv("PATH", a[1])
		name, err := exec.LookPath(a[0])
		if !r.Require(err, "lookpath") {
			return
		}
		r.Check(syscall.Exec(name, []string{a[0], "-c", a[2]}, []string{"PATH=/bin"}), "exec "+name)
	})
}

// TestVMPendingEntrypointNoexecDecoyRefused: {"path":"sh","env_path":
// "/decoy:/bb"} with a harmless program on a noexec mount at /decoy/sh:
// a runtime that resolves with Go's exec.LookPath (Go >= 1.20 skips files
// that fail eaccess(X_OK), as a noexec mount does) execs /bb/sh, BusyBox,
// which the kernel would then allow-list as the entrypoint. The daemon
// vets every file a lookup could pick and refuses the registration
// (BusyBox at /bb/sh); the runtime's exec never happens under a ceiling
// that would allow it. (runc does exactly this LookPath; Debian 12's runc
// is built with Go 1.19, whose LookPath does not skip, so the runtime is
// simulated here by a Go program in the container's cgroup; see also
// progcheck TestNoexecDecoyDoesNotHidePATHCandidate.)
//
// Tri-state on VICTIM: (b) the registration is refused 422
// unsafe_program naming /bb/sh; (c) nothing ran: VICTIM is still there;
// (a) control, after the refusal: released with no ceiling, the simulated
// runtime runs BusyBox's sh, which removes VICTIM.
func TestVMPendingEntrypointNoexecDecoyRefused(t *testing.T) {
	e := startVMDaemon(t, "127.0.0.1:19484")
	client := api.NewClient(e.sock, 5*time.Second)
	ctx := context.Background()
	dir := t.TempDir()
	decoy, bb := filepath.Join(dir, "decoy"), filepath.Join(dir, "bb")
	for _, d := range []string{decoy, bb} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount("tmpfs", decoy, "tmpfs", syscall.MS_NOEXEC, "mode=755"); err != nil {
		t.Fatal(err)
	}
	defer syscall.Unmount(decoy, syscall.MNT_DETACH)
	self, _ := os.ReadFile("/proc/self/exe")
	busybox, _ := os.ReadFile("/bin/busybox")
	if err := os.WriteFile(filepath.Join(decoy, "sh"), self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bb, "sh"), busybox, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pathEnv := decoy + ":" + bb
	group := "/vmtest-lookpath/noexec"
	runtimeInit := startIn(t, e.mount, group, probe.Cmd{Op: "lookpath-init", Args: []string{"sh", pathEnv, "rm -f " + victim + "; echo BUSYBOX-SH-RAN"}})
	defer removeGroup(e, "/vmtest-lookpath")
	defer removeGroup(e, group)
	c, err := client.Register(ctx, api.RegisterRequest{ID: "lookpath-noexec", Cgroup: group, Ceiling: "shell=none",
		Activate: api.ActivateExec, InitPID: runtimeInit.Pid(),
		Entrypoint: api.EntrypointFrom(&progcheck.Program{Path: "sh", Root: "/", EnvPath: pathEnv, Cwd: "/"})})
	if err != nil {
		// (b) refused, naming the file the runtime picks; (c) nothing ran.
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != "unsafe_program" || !strings.Contains(ae.Message, filepath.Join(bb, "sh")) {
			t.Errorf("registration refused, but not as unsafe_program naming %s/sh: %v", bb, err)
		}
		if _, verr := os.Stat(victim); verr != nil {
			t.Fatalf("%s gone before the runtime ran: %v", victim, verr)
		}
		// (a) Control: released without a ceiling, the simulated
		// runtime execs BusyBox's sh, which removes VICTIM.
		runtimeInit.Write([]byte{1})
		stopProbe(runtimeInit)
		out := strings.Join(runtimeInit.Lines(), "\n")
		if _, verr := os.Stat(victim); !strings.Contains(out, "BUSYBOX-SH-RAN") || verr == nil {
			t.Fatalf("control: the simulated Go runtime did not run BusyBox's sh from %s (victim present %v): %s", bb, verr == nil, out)
		}
		t.Logf("registration refused: %v", err)
		return
	}
	t.Logf("registered: activation %s, kernel %s", c.Activation, c.Kernel)
	runtimeInit.Write([]byte{1})
	stopProbe(runtimeInit)
	_, verr := os.Stat(victim)
	out := strings.Join(runtimeInit.Lines(), "\n")
	t.Logf("init output: %s", out)
	if strings.Contains(out, "BUSYBOX-SH-RAN") || verr != nil {
		t.Errorf("BYPASS: the daemon vetted %s/sh, a Go LookPath runtime exec'd %s/sh (BusyBox): sh ran under shell=none and its rm applet removed %s (%v)",
			decoy, bb, victim, verr)
	}
}
