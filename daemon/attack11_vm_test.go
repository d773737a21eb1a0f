package daemon_test

// attack11: entry-point attacks on the daemon, the OCI hook and runc. Each
// test FAILS while the bypass or misleading behaviour it demonstrates
// exists. They need BPF LSM (the vmtest guest):
//
//	scripts/vmtest --kernel 6.12 --with-tests --run '/t/daemon.test -test.run Attack11 -test.v'

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/enforcerd/enforcerd/cgroup"
	"github.com/enforcerd/enforcerd/daemon/api"
	"github.com/enforcerd/enforcerd/internal/progcheck"
	"github.com/enforcerd/enforcerd/internal/vmtest"
)

// TestAttack11RuncShellNoneScriptEntrypoint: the hook's help: "Under
// shell=none ... the daemon refuses it ... when it is a shell, a
// multi-call binary ...": deploy/README: "the daemon refuses, say, a
// busybox image's sh". README: "A script is not refused (its interpreter
// is exec-checked and must itself be allowed)". Wrapping the same command
// in a script, the docker-entrypoint.sh pattern of most images, makes the
// image's shell the container's process: the registration is pending until
// runc's exec of the entrypoint, and no stage of that exec (the script,
// then its interpreter) is checked, so BusyBox's sh runs with its builtins
// and NOFORK applets (rm) under shell=none.
//
// Tri-state on /victim and /mark in the rootfs: (a) control (shell=full):
// the script runs; (b) shell=none: documented outcome: the container is
// refused or its interpreter's exec is denied (the script never runs);
// (c) observed: the script runs, /victim removed, /mark written.
func TestAttack11RuncShellNoneScriptEntrypoint(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19481")
	if _, err := exec.LookPath("runc"); err != nil {
		vmtest.Skip(t, "runc not installed")
	}
	e.startDaemon()
	defer e.stopDaemon(t.Failed())
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
}

// attack11InterpStub: see internal/progcheck TestAttack11InterpStubIsAShell.
func attack11InterpStub(t testing.TB, interp string) []byte {
	t.Helper()
	f, err := elf.Open(interp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var extra []elf.Prog64
	for _, p := range f.Progs {
		if p.Type == elf.PT_TLS || p.Type == elf.PT_GNU_RELRO {
			extra = append(extra, elf.Prog64{Type: uint32(p.Type), Flags: uint32(p.Flags), Off: p.Off, Vaddr: p.Vaddr,
				Paddr: p.Paddr, Filesz: p.Filesz, Memsz: p.Memsz, Align: p.Align})
		}
	}
	const ehsize, phsize = 64, 56
	nph := 3 + len(extra)
	ioff := uint64(ehsize + nph*phsize)
	s := []byte(interp + "\x00")
	size := ioff + uint64(len(s))
	progs := append([]elf.Prog64{
		{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Filesz: size, Memsz: size, Align: 0x1000},
		{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Off: ioff, Vaddr: ioff, Paddr: ioff, Filesz: uint64(len(s)), Memsz: uint64(len(s)), Align: 1},
		{Type: uint32(elf.PT_GNU_STACK), Flags: uint32(elf.PF_R | elf.PF_W), Align: 16},
	}, extra...)
	hdr := elf.Header64{Type: uint16(elf.ET_DYN), Machine: uint16(elf.EM_X86_64), Version: 1, Entry: ioff,
		Phoff: ehsize, Ehsize: ehsize, Phentsize: phsize, Phnum: uint16(nph), Shentsize: 64}
	copy(hdr.Ident[:], []byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)})
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, hdr)
	binary.Write(&b, binary.LittleEndian, progs)
	b.Write(s)
	return b.Bytes()
}

// TestAttack11RuncShellNoneInterpStub: the image's entrypoint /app/sh is a
// ~400-byte ELF whose PT_INTERP is the image's /bin/busybox. The hook names
// it, the daemon vets it (passes: no marker), runc execs it, the kernel
// allow-lists its inode and maps BusyBox as its loader: BusyBox's sh runs,
// and a hard link of the stub named busybox runs any applet by exec.
// Documented: 422 unsafe_program, the hook exits 125, runc refuses.
func TestAttack11RuncShellNoneInterpStub(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19482")
	if _, err := exec.LookPath("runc"); err != nil {
		vmtest.Skip(t, "runc not installed")
	}
	e.startDaemon()
	defer e.stopDaemon(t.Failed())
	stub := attack11InterpStub(t, "/bin/busybox") // the rootfs's busybox is a copy of the guest's
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
}

// TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies: README:
// "surface's tool lists never offer a tool the kernel ceiling makes fail:
// with write=false no Write, Edit, ...". A container registered (API or
// hook) in a cgroup below another registered container, without "parent",
// is held by the kernel to the meet of both (design.md: "sub-cgroups and
// nested containers never widen anything"). The daemon used to compute its
// ceiling, "kernel", and GET /surface from its own registration only (the
// response said write=true and the surface offered Write and Edit while
// every write of its processes was denied by the outer ceiling); its
// answer is now the meet the kernel enforces.
func TestNestedRegistrationSurfaceOmitsToolsTheKernelDenies(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19483")
	e.startDaemon()
	defer e.stopDaemon(t.Failed())
	client := api.NewClient(e.sock, 5*time.Second)
	ctx := context.Background()
	outer, inner := "/vmtest-att11/outer", "/vmtest-att11/outer/inner"
	w := startWorkload(t, e, inner, "att11-nested")
	defer removeGroup(e, "/vmtest-att11")
	defer removeGroup(e, outer)
	defer removeGroup(e, inner)
	defer w.stop()
	w.waitFor(t, 2)
	if _, err := client.Register(ctx, api.RegisterRequest{ID: "att11-outer", Cgroup: outer, Ceiling: "write=false"}); err != nil {
		t.Fatal(err)
	}
	c, err := client.Register(ctx, api.RegisterRequest{ID: "att11-inner", Cgroup: inner, Role: "implement"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.Surface(ctx, "att11-inner")
	if err != nil {
		t.Fatal(err)
	}
	n := len(w.snapshot())
	lines := w.waitFor(t, n+6)[n+1:]
	denied := 0
	for _, l := range lines {
		if strings.Contains(l, "write=denied") {
			denied++
		}
	}
	t.Logf("inner: registration kernel %s; surface kernel %s builtin_tools %v; workload: %v", c.Kernel, s.Kernel, s.BuiltinTools, lines)
	if denied != len(lines) {
		t.Fatalf("the outer write=false should deny the inner workload's writes (meet over ancestors): %v", lines)
	}
	for _, tool := range []string{"Write", "Edit"} {
		if slices.Contains(s.BuiltinTools, tool) {
			t.Errorf("MISLEADING: GET /v1/containers/att11-inner/surface offers %s (kernel %s in the answer, %s in the registration response) "+
				"while the kernel denies every write of the container's processes (outer registered cgroup %s, write=false)",
				tool, s.Kernel, c.Kernel, outer)
		}
	}
	if c.Kernel.Write || s.Kernel.Write {
		t.Errorf("the registration response (kernel %s) and the surface (kernel %s) must say write=false, as the kernel enforces", c.Kernel, s.Kernel)
	}
	if list, err := client.List(ctx); err != nil {
		t.Fatal(err)
	} else {
		for _, x := range list {
			if x.ID == "att11-inner" && x.Kernel.Write {
				t.Errorf("the list answers att11-inner with kernel %s, want write=false", x.Kernel)
			}
		}
	}
}

// attack11LookPathInit plays a Go runtime's init (runc's LookPath, built
// with Go >= 1.20): it waits for a byte on stdin, resolves $ATT11_ARG0 with
// exec.LookPath in $ATT11_PATH and execs it with argv $ATT11_ARG0 -c
// $ATT11_CMD.
const attack11LookPathInit = "attack11-lookpath-init"

func init() {
	if os.Getenv(helperEnv) != attack11LookPathInit {
		return
	}
	b := make([]byte, 1)
	if _, err := os.Stdin.Read(b); err != nil {
		os.Exit(3)
	}
	arg0 := os.Getenv("ATT11_ARG0")
	os.Setenv("PATH", os.Getenv("ATT11_PATH"))
	name, err := exec.LookPath(arg0)
	if err != nil {
		fmt.Println("lookpath:", err)
		os.Exit(4)
	}
	err = syscall.Exec(name, []string{arg0, "-c", os.Getenv("ATT11_CMD")}, []string{"PATH=/bin"})
	fmt.Println("exec:", err)
	os.Exit(5)
}

// TestAttack11PendingEntrypointNoexecLookPath: the daemon vets the
// entrypoint it resolves for {"path":"sh","env_path":"/decoy:/bb"} (a
// harmless program on a noexec mount at /decoy/sh: it passes), while a
// runtime that resolves with Go's exec.LookPath (Go >= 1.20 skips files
// that fail eaccess(X_OK), as a noexec mount does) execs /bb/sh, BusyBox:
// the kernel allow-lists it as the entrypoint and every applet runs under
// shell=none. (runc does exactly this LookPath; Debian 12's runc is built
// with Go 1.19, whose LookPath does not skip, so the runtime is simulated
// here by a Go program in the container's cgroup; see also
// internal/progcheck TestAttack11ResolveDivergesFromGoLookPathOnNoexec.)
func TestAttack11PendingEntrypointNoexecLookPath(t *testing.T) {
	e := newVMEnv(t, "127.0.0.1:19484")
	e.startDaemon()
	defer e.stopDaemon(t.Failed())
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
	group := "/vmtest-att11/lookpath"
	cg, err := cgroup.Create(e.mount, group)
	if err != nil {
		t.Fatal(err)
	}
	defer removeGroup(e, group)
	cgdir, _ := cg.OpenDir()
	initCmd := exec.Command("/proc/self/exe")
	initCmd.Env = append(os.Environ(), helperEnv+"="+attack11LookPathInit, "ATT11_ARG0=sh", "ATT11_PATH="+pathEnv,
		"ATT11_CMD=rm -f "+victim+"; echo BUSYBOX-SH-RAN")
	initCmd.SysProcAttr = cgroup.SysProcAttr(cgdir)
	stdin, _ := initCmd.StdinPipe()
	var out bytes.Buffer
	initCmd.Stdout, initCmd.Stderr = &out, &out
	if err := initCmd.Start(); err != nil {
		t.Fatal(err)
	}
	cgdir.Close()
	c, err := client.Register(ctx, api.RegisterRequest{ID: "att11-lookpath", Cgroup: group, Ceiling: "shell=none",
		Activate: api.ActivateExec, InitPID: initCmd.Process.Pid,
		Entrypoint: api.EntrypointFrom(&progcheck.Program{Path: "sh", Root: "/", EnvPath: pathEnv, Cwd: "/"})})
	if err != nil {
		stdin.Close()
		initCmd.Wait()
		t.Logf("registration refused (the fixed behaviour would refuse or vet /bb/sh): %v", err)
		return
	}
	t.Logf("registered: activation %s, kernel %s", c.Activation, c.Kernel)
	stdin.Write([]byte{1})
	stdin.Close()
	initCmd.Wait()
	_, verr := os.Stat(victim)
	t.Logf("init output: %s", out.String())
	if strings.Contains(out.String(), "BUSYBOX-SH-RAN") || verr != nil {
		t.Errorf("BYPASS: the daemon vetted %s/sh, a Go LookPath runtime exec'd %s/sh (BusyBox): sh ran under shell=none and its rm applet removed %s (%v)",
			decoy, bb, victim, verr)
	}
}
