package main

// attack11: entry-point attacks on `enforcerd run`. Each test FAILS while
// the bypass or misleading behaviour it demonstrates exists. The shell=none
// tests need BPF LSM (the vmtest guest):
//
//	scripts/vmtest --kernel 6.12 --with-tests --run '/t/cmd/enforcerd.test -test.run Attack11 -test.v'
//
// (the path of the packed test binary is printed by scripts/vmtest).

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/internal/vmtest"
)

// attack11Sandboxed runs `enforcerd run` with args; it skips (a failure in
// the VM) when this host cannot enforce shell=none at all.
func attack11Sandboxed(t *testing.T, args ...string) runResult {
	t.Helper()
	r := enforcerd(t, nil, append([]string{"run", "--pin-dir", testPinDir}, args...)...)
	if r.code == exitCannotEnforce && strings.Contains(r.stderr, "needs BPF LSM") {
		vmtest.Skip(t, "shell=none needs BPF LSM: run this in the vmtest guest ("+r.stderr+")")
	}
	return r
}

func attack11Exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestAttack11RunShellNoneScriptEntrypoint: README: "A script is not
// refused (its interpreter is exec-checked and must itself be allowed)";
// threat model X6: "that interpreter is exec-checked as its own
// bprm_check_security stage, so it must itself be allowed (and is then
// checked)". Under `run` the registration is pending until CMD's exec, and
// bprm_check_security skips every stage of that exec (resolve() ignores
// pending entries; only the script is noted as the entrypoint), so the
// script's interpreter, a shell, runs as the sandbox's entrypoint with no
// check at all: its builtins and, with BusyBox as /bin/sh (the VM, Alpine,
// BusyBox images), its NOFORK applets such as rm, all in the one process.
//
// Tri-state: (a) without a ceiling the script removes VICTIM (rm) and
// writes MARK (a builtin redirect); (b) with --shell=none the documented
// outcome is that the interpreter is refused: the script never runs; (c)
// observed in the VM (6.12): it runs, VICTIM is removed and MARK written.
func TestAttack11RunShellNoneScriptEntrypoint(t *testing.T) {
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
	if r := attack11Sandboxed(t, "--", script); r.code != 0 || attack11Exists(victim) || !attack11Exists(mark) {
		t.Fatalf("control: exit %d, victim present %v, mark present %v (stderr %s)", r.code, attack11Exists(victim), attack11Exists(mark), r.stderr)
	}
	// (b) shell=none
	reset()
	r := attack11Sandboxed(t, "--shell=none", "--", script)
	t.Logf("shell=none, CMD a #!/bin/sh script: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	if attack11Exists(mark) || strings.Contains(r.stdout, "SCRIPT-RAN") {
		t.Errorf("BYPASS: enforcerd run --shell=none -- %s: the script's interpreter /bin/sh ran as the entrypoint (its builtin redirect wrote %s), "+
			"although a script's interpreter is documented to be exec-checked and to need allowing", script, mark)
	}
	if !attack11Exists(victim) {
		t.Errorf("BYPASS: ... and its rm (a BusyBox NOFORK applet here) removed %s without any exec", victim)
	}
}

// attack11InterpStub is internal/progcheck's interpStubELF: a tiny ELF
// whose PT_INTERP is interp (a static BusyBox), which therefore runs
// BusyBox with the stub's argv.
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

// TestAttack11RunShellNoneInterpStub: run's --shell help: "run refuses
// (exit 125) when one of them is a shell, a multi-call binary (BusyBox
// ...) ... recognised by content, not name". CMD here is a ~400-byte ELF
// whose PT_INTERP is /bin/busybox: progcheck passes it (no marker, no
// loader SONAME, not in /etc/shells), the kernel allow-lists it as the
// entrypoint, maps BusyBox as its "loader", and BusyBox's sh runs; any
// exec of the stub's inode (a hard link named busybox) is allowed and runs
// any applet.
//
// Tri-state on VICTIM and MADE: (a) control without ceiling; (b) with
// --shell=none the documented outcome is exit 125 and nothing run; (c)
// observed in the VM: sh runs, rm removes VICTIM, the hard-linked stub
// runs BusyBox touch and creates MADE (an exec the kernel allowed).
func TestAttack11RunShellNoneInterpStub(t *testing.T) {
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
	if err := os.WriteFile(stub, attack11InterpStub(t, bb), 0o755); err != nil {
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
	if r := attack11Sandboxed(t, "--", stub, "-c", cmd); r.code != 0 || attack11Exists(victim) || !attack11Exists(made) {
		t.Fatalf("control: exit %d, victim present %v, made present %v (stdout %s stderr %s)", r.code, attack11Exists(victim), attack11Exists(made), r.stdout, r.stderr)
	}
	reset()
	r := attack11Sandboxed(t, "--shell=none", "--", stub, "-c", cmd)
	t.Logf("shell=none, CMD a PT_INTERP=%s stub: exit %d\nstdout: %s\nstderr: %s", bb, r.code, r.stdout, r.stderr)
	if r.code != exitCannotEnforce || strings.Contains(r.stdout, "STUB-SH-RAN") {
		t.Errorf("BYPASS: enforcerd run --shell=none -- %s (PT_INTERP %s): exit %d, want %d (a multi-call binary in all but name)", stub, bb, r.code, exitCannotEnforce)
	}
	if !attack11Exists(victim) || attack11Exists(made) {
		t.Errorf("BYPASS: BusyBox applets ran under shell=none: victim removed %v, %s created by an allowed exec of the stub %v", !attack11Exists(victim), made, attack11Exists(made))
	}
}
