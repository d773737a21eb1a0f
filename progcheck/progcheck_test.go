package progcheck

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The tests build every marker from the rule table at run time, never as
// a literal: a literal would put the marker into this test binary, which
// TestOwnExecutableIsNotFlagged classifies.

// fakeELF is a minimal ELF64 x86-64 file: a PT_INTERP when interp is set,
// a .dynamic section with DT_SONAME when soname is set, then payload.
func fakeELF(t testing.TB, interp, soname string, payload ...[]byte) []byte {
	t.Helper()
	var data bytes.Buffer // everything after the program headers
	var phdrs []elf.Prog64
	nph := 0
	if interp != "" {
		nph++
	}
	if soname != "" {
		nph++
	}
	base := uint64(64 + 56*nph)
	off := func() uint64 { return base + uint64(data.Len()) }
	if interp != "" {
		o := off()
		data.WriteString(interp + "\x00")
		phdrs = append(phdrs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Off: o, Filesz: uint64(len(interp) + 1), Memsz: uint64(len(interp) + 1), Align: 1})
	}
	var sections []elf.Section64
	shstr := "\x00.dynstr\x00.dynamic\x00.shstrtab\x00"
	sections = append(sections, elf.Section64{})
	if soname != "" {
		strOff := off()
		dynstr := "\x00" + soname + "\x00"
		data.WriteString(dynstr)
		dynOff := off()
		binary.Write(&data, binary.LittleEndian, []elf.Dyn64{{Tag: int64(elf.DT_SONAME), Val: 1}, {Tag: int64(elf.DT_NULL)}})
		phdrs = append(phdrs, elf.Prog64{Type: uint32(elf.PT_DYNAMIC), Flags: uint32(elf.PF_R), Off: dynOff, Filesz: 32, Memsz: 32, Align: 8})
		sections = append(sections,
			elf.Section64{Name: 1, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(dynstr)), Addralign: 1},
			elf.Section64{Name: 9, Type: uint32(elf.SHT_DYNAMIC), Off: dynOff, Size: 32, Link: 1, Addralign: 8, Entsize: 16})
	}
	for _, p := range payload {
		data.Write(p)
	}
	shstrOff := off()
	data.WriteString(shstr)
	sections = append(sections, elf.Section64{Name: 18, Type: uint32(elf.SHT_STRTAB), Off: shstrOff, Size: uint64(len(shstr)), Addralign: 1})
	for data.Len()%8 != 0 {
		data.WriteByte(0)
	}
	hdr := elf.Header64{
		Type: uint16(elf.ET_DYN), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Shoff: off(), Ehsize: 64, Phentsize: 56, Phnum: uint16(nph),
		Shentsize: 64, Shnum: uint16(len(sections)), Shstrndx: uint16(len(sections) - 1),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var out bytes.Buffer
	binary.Write(&out, binary.LittleEndian, hdr)
	binary.Write(&out, binary.LittleEndian, phdrs)
	out.Write(data.Bytes())
	binary.Write(&out, binary.LittleEndian, sections)
	return out.Bytes()
}

// ruleFor returns the first rule of program.
func ruleFor(t testing.TB, program string) *rule {
	t.Helper()
	for i := range rules {
		if rules[i].program == program {
			return &rules[i]
		}
	}
	t.Fatalf("no rule for %s", program)
	return nil
}

// signature is the markers of r, separated by filler.
func signature(r *rule, only ...int) []byte {
	var b bytes.Buffer
	for i, m := range r.markers {
		if len(only) > 0 && i != only[0] {
			continue
		}
		b.WriteString("\x00filler\x00")
		b.Write(m)
	}
	b.WriteString("\x00")
	return b.Bytes()
}

func classifyBytes(t *testing.T, b []byte) (Kind, string) {
	t.Helper()
	k, why, err := ClassifyContent(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("classify: %v", err)
	}
	return k, why
}

func TestFakeELFParses(t *testing.T) {
	info := readELF(bytes.NewReader(fakeELF(t, "/lib/ld-x.so.1", "libx.so.1")))
	if !info.isELF || info.interp != "/lib/ld-x.so.1" || info.soname != "libx.so.1" {
		t.Fatalf("readELF = %+v", info)
	}
}

// Every rule of the table recognises a file carrying its markers, and
// names its kind and program.
func TestEveryRuleRecognisesItsProgram(t *testing.T) {
	for i := range rules {
		r := &rules[i]
		k, why := classifyBytes(t, fakeELF(t, "", "", signature(r)))
		if k != r.kind || !strings.Contains(why, r.program) {
			t.Errorf("%s (%s): classified as %q (%s), want %q", r.program, r.what, k, why, r.kind)
		}
	}
}

// A rule needs all of its markers: bash and zsh variable names alone are
// in kubectl and shellcheck.
func TestOneMarkerOfTwoIsNotEnough(t *testing.T) {
	for _, p := range []string{"bash", "zsh", "ksh93", "BusyBox", "toybox"} {
		r := ruleFor(t, p)
		if len(r.markers) < 2 {
			t.Fatalf("%s: rule has %d markers", p, len(r.markers))
		}
		for j := range r.markers {
			if k, why := classifyBytes(t, fakeELF(t, "", "", signature(r, j))); k != "" {
				t.Errorf("%s: marker %d alone classified as %s (%s)", p, j, k, why)
			}
		}
	}
}

// A marker split across two scan chunks is found.
func TestMarkerAcrossChunkBoundary(t *testing.T) {
	r := ruleFor(t, "GNU coreutils (single binary)")
	head := fakeELF(t, "", "")
	pad := make([]byte, scanChunk-len(head)-3)
	b := append(append(head, pad...), r.markers[0]...)
	if k, _ := classifyBytes(t, b); k != MultiCall {
		t.Fatalf("marker at offset %d (chunk %d): classified %q", len(head)+len(pad), scanChunk, k)
	}
}

// Scripts and other non-ELF files are not classified by content: the
// kernel exec-checks their interpreter.
func TestScriptsAndDataAreNotClassified(t *testing.T) {
	sig := signature(ruleFor(t, "BusyBox"))
	for name, b := range map[string][]byte{
		"script": append([]byte("#!/bin/sh\n"), sig...),
		"data":   append([]byte("plain text\n"), sig...),
		"empty":  nil,
	} {
		if k, why := classifyBytes(t, b); k != "" {
			t.Errorf("%s: classified %s (%s)", name, k, why)
		}
	}
}

func TestLoaderBySONAME(t *testing.T) {
	for soname, want := range map[string]Kind{
		"ld-linux-x86-64.so.2":  Loader,
		"ld-linux-aarch64.so.1": Loader,
		"ld64.so.2":             Loader,
		"ld-musl-x86_64.so.1":   Loader,
		"ld.so.1":               Loader,
		"libc.so.6":             "",
		"libld-helper.so":       "",
	} {
		if k, why := classifyBytes(t, fakeELF(t, "", soname)); k != want {
			t.Errorf("DT_SONAME %s: %q (%s), want %q", soname, k, why, want)
		}
	}
}

// sparseELF is an ELF header followed by size zero bytes, without memory.
type sparseELF struct{ head []byte }

func (s sparseELF) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for i := range p {
		if o := off + int64(i); o < int64(len(s.head)) {
			p[i] = s.head[o]
		} else {
			p[i] = 0
		}
		n++
	}
	return n, nil
}

func TestTooLargeFailsClosed(t *testing.T) {
	_, _, err := ClassifyContent(sparseELF{fakeELF(t, "", "")}, MaxScanBytes+1)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("classify of %d bytes: %v, want ErrTooLarge", MaxScanBytes+1, err)
	}
}

// testRoot builds a root directory:
//
//	etc/shells          /bin/dash, a missing shell, a comment, a relative entry
//	bin/dash            an ELF without markers (a login shell by identity)
//	bin/sh -> dash      bin/dash-hard (hard link), bin/dash-copy (copy)
//	bin/bb              BusyBox's markers; bin/ls -> bb; bin/abs -> /bin/bb
//	lib/ld-test.so.1    a loader (its DT_SONAME)
//	bin/app             PT_INTERP /lib/ld-test.so.1 (an ELF without markers)
//	bin/ldlink -> /lib/ld-test.so.1
//	bin/outside -> /../../../../../usr/bin/bash (stays inside: missing)
//	bin/data            mode 0644; bin/fifo a FIFO; bin/dir/ a directory
//	sbin/tool           an ELF without markers
func testRoot(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	write := func(p string, b []byte, mode os.FileMode) {
		t.Helper()
		p = filepath.Join(d, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(d, p)); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/shells", []byte("# login shells\n\n/bin/dash\n/usr/bin/missing\nrelative/sh\n"), 0o644)
	plain := fakeELF(t, "", "", []byte("a program"))
	write("bin/dash", plain, 0o755)
	link("dash", "bin/sh")
	if err := os.Link(filepath.Join(d, "bin/dash"), filepath.Join(d, "bin/dash-hard")); err != nil {
		t.Fatal(err)
	}
	write("bin/dash-copy", plain, 0o755)
	write("bin/bb", fakeELF(t, "", "", signature(ruleFor(t, "BusyBox"))), 0o755)
	link("bb", "bin/ls")
	link("/bin/bb", "bin/abs")
	write("lib/ld-test.so.1", fakeELF(t, "", "ld-linux-test.so.1", []byte("loader")), 0o755)
	write("bin/app", fakeELF(t, "/lib/ld-test.so.1", ""), 0o755)
	link("/lib/ld-test.so.1", "bin/ldlink")
	link("/../../../../../usr/bin/bash", "bin/outside")
	write("bin/data", plain, 0o644)
	if err := unix.Mkfifo(filepath.Join(d, "bin/fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d, "bin/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("sbin/tool", plain, 0o755)
	return d
}

func openRoot(t *testing.T, d string) *Root {
	t.Helper()
	r, err := OpenRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// kinds returns the kind of each finding of err, or fails on another error.
func kinds(t *testing.T, err error) []Kind {
	t.Helper()
	if err == nil {
		return nil
	}
	var ue *UnsafeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("error %v is not an UnsafeError", err)
	}
	var out []Kind
	for _, f := range ue.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func TestRootCheck(t *testing.T) {
	r := openRoot(t, testRoot(t))
	for _, c := range []struct {
		name  string
		paths []string
		want  []Kind
		says  string
	}{
		{"a login shell by identity", []string{"/bin/dash"}, []Kind{Shell}, "/etc/shells as /bin/dash"},
		{"a symlink to it", []string{"/bin/sh"}, []Kind{Shell}, ""},
		{"a hard link to it", []string{"/bin/dash-hard"}, []Kind{Shell}, ""},
		// A copy is another inode without markers: the documented limit.
		{"a copy of an unmarked shell", []string{"/bin/dash-copy"}, nil, ""},
		{"BusyBox by content", []string{"/bin/bb"}, []Kind{MultiCall}, "BusyBox"},
		{"BusyBox named ls", []string{"/bin/ls"}, []Kind{MultiCall}, "/bin/ls"},
		{"an absolute symlink stays in the root", []string{"/bin/abs"}, []Kind{MultiCall}, ""},
		{"a dynamic program alone", []string{"/bin/app"}, nil, ""},
		{"its loader allowed too", []string{"/bin/app", "/lib/ld-test.so.1"}, []Kind{Loader}, "PT_INTERP"},
		{"its loader by another name", []string{"/bin/ldlink", "/bin/app"}, []Kind{Loader}, "/bin/ldlink"},
		{"a plain program", []string{"/sbin/tool"}, nil, ""},
		{"every finding named", []string{"/sbin/tool", "/bin/ls", "/bin/sh"}, []Kind{MultiCall, Shell}, ""},
	} {
		err := r.Check(c.paths...)
		got := kinds(t, err)
		if strings.Join(kindStrings(got), ",") != strings.Join(kindStrings(c.want), ",") {
			t.Errorf("%s: %v: %v, want %v", c.name, c.paths, err, c.want)
		}
		if c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%s: message %v does not say %q", c.name, err, c.says)
		}
	}
	for _, p := range []string{"/bin/fifo", "/bin/dir", "/bin/outside", "/no/such"} {
		if err := r.Check(p); err == nil || errors.Is(err, ErrUnsafe) {
			t.Errorf("Check(%s) = %v, want an error (fail closed)", p, err)
		}
	}
}

func kindStrings(ks []Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func TestResolveLikeExecvp(t *testing.T) {
	r := openRoot(t, testRoot(t))
	for _, c := range []struct{ name, pathEnv, cwd, want string }{
		{"ls", "/usr/bin:/bin", "", "/bin/ls"},
		{"tool", "", "", "/sbin/tool"}, // DefaultPath
		{"tool", "relative:/sbin", "", "/sbin/tool"},
		{"app", "/sbin::/bin", "", "/bin/app"},
		{"/bin/app", "/sbin", "", "/bin/app"},
		{"./app", "", "/bin", "/bin/app"},
		{"../bin/app", "", "/sbin", "/bin/app"},
		{"dir/../app", "", "/bin", "/bin/app"},
		{"tool", "sbin", "", "/sbin/tool"},         // a relative entry, from cwd
		{"app", "/sbin::/usr", "/bin", "/bin/app"}, // "" is cwd
	} {
		got, err := r.Resolve(c.name, c.pathEnv, c.cwd)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q, %q, %q) = %q, %v; want %q", c.name, c.pathEnv, c.cwd, got, err, c.want)
		}
	}
	for _, c := range []struct{ name, pathEnv string }{
		{"nope", "/bin"},
		{"data", "/bin"},    // no execute bit
		{"fifo", "/bin"},    // not a regular file
		{"dir", "/bin"},     // a directory
		{"outside", "/bin"}, // the host's bash is not reachable
		{"", "/bin"},
		{"a\x00b", "/bin"},
		{"tool", "bin:usr"}, // only relative entries, from cwd "/"
	} {
		if got, err := r.Resolve(c.name, c.pathEnv, ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(%q, %q) = %q, %v; want ErrNotFound", c.name, c.pathEnv, got, err)
		}
	}
}

func TestProgramCheck(t *testing.T) {
	d := testRoot(t)
	res, err := Program{Path: "ls", Root: d, EnvPath: "/bin"}.Check()
	if res != "/bin/ls" || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("ls: %q, %v; want /bin/ls, ErrUnsafe", res, err)
	}
	if res, err := (Program{Path: "tool", Root: d}).Check(); res != "/sbin/tool" || err != nil {
		t.Fatalf("tool: %q, %v", res, err)
	}
	if _, err := (Program{Path: "nope", Root: d}).Check(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("nope: %v", err)
	}
	if _, err := (Program{Path: "tool", Root: filepath.Join(d, "missing")}).Check(); err == nil {
		t.Fatal("a missing root passed")
	}
	for _, p := range []Program{
		{Root: d},
		{Path: "x", Root: "relative"},
		{Path: "x"},
		{Path: "x", Root: d, Cwd: "relative"},
		{Path: strings.Repeat("a", maxPathBytes+1), Root: d},
		{Path: "x", Root: d, EnvPath: "/bin\x00"},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) passed", p)
		}
		if _, err := p.Check(); err == nil || errors.Is(err, ErrUnsafe) {
			t.Errorf("Check(%+v) = %v, want a validation error", p, err)
		}
	}
}

func TestParseShells(t *testing.T) {
	got := ParseShells([]byte("# c\n /bin/sh \n\nbin/x\n/usr/bin/zsh\r\n#/bin/no\n"))
	if strings.Join(got, ",") != "/bin/sh,/usr/bin/zsh" {
		t.Fatalf("ParseShells = %q", got)
	}
}

// This test binary contains the marker table: it must not classify
// itself (nor would enforcerd, which contains the same table).
func TestOwnExecutableIsNotFlagged(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHost(self); err != nil {
		t.Fatalf("%s: %v", self, err)
	}
}

// Processes already running: each process's program, inside its root.
func TestCheckProcesses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	bb := filepath.Join(d, "bb")
	// A copy of this test binary with BusyBox's markers appended: it
	// still runs, and now it is a multi-call binary.
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bb, append(b, signature(ruleFor(t, "BusyBox"))...), 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(bin string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^TestHelperBlocks$")
		cmd.Env = append(os.Environ(), "PROGCHECK_TEST_BLOCK=1")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Wait() })
		return cmd
	}
	plain, multi := start(self), start(bb)
	if err := CheckProcesses([]int{plain.Process.Pid, 0x7ffffff0}); err != nil {
		t.Fatalf("this test binary and a missing pid: %v", err)
	}
	err = CheckProcesses([]int{plain.Process.Pid, multi.Process.Pid, multi.Process.Pid})
	if k := kinds(t, err); len(k) != 1 || k[0] != MultiCall {
		t.Fatalf("with the BusyBox-marked copy: %v", err)
	}
	if !strings.Contains(err.Error(), bb) {
		t.Fatalf("finding does not name %s: %v", bb, err)
	}
}

// TestHelperBlocks is the process TestCheckProcesses starts: it waits for
// its stdin to close.
func TestHelperBlocks(t *testing.T) {
	if os.Getenv("PROGCHECK_TEST_BLOCK") == "" {
		return
	}
	io.Copy(io.Discard, os.Stdin)
}

// The host's own programs, where installed (Debian: bash, dash in
// /etc/shells, ld.so; busybox-static from scripts/setup-deps).
func TestHostPrograms(t *testing.T) {
	checked := 0
	for p, want := range map[string]Kind{
		"/usr/bin/bash":               Shell,
		"/usr/bin/busybox":            MultiCall,
		"/lib64/ld-linux-x86-64.so.2": Loader,
		"/usr/bin/env":                "",
		"/usr/bin/ls":                 "",
	} {
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s: not installed", p)
			continue
		}
		checked++
		got := kinds(t, CheckHost(p))
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
			t.Errorf("%s: %v, want %q", p, got, want)
		}
	}
	if checked == 0 {
		t.Fatal("none of the host programs is installed")
	}
}

func TestAllKindsExplained(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range AllKinds {
		c := k.Consequence()
		if seen[c] || c == Kind("unknown").Consequence() {
			t.Errorf("kind %s has no consequence of its own", k)
		}
		seen[c] = true
	}
	in := map[Kind]bool{}
	for _, k := range AllKinds {
		in[k] = true
	}
	for _, r := range rules {
		if !in[r.kind] {
			t.Errorf("rule %s: kind %q is not in AllKinds", r.program, r.kind)
		}
		if len(r.markers) == 0 || len(r.markers) != len(r.text) {
			t.Errorf("rule %s: %d markers for %d texts", r.program, len(r.markers), len(r.text))
		}
		for i, m := range r.markers {
			if len(m) < 6 || bytes.Contains(m, []byte("·")) || !strings.Contains(r.text[i], "·") {
				t.Errorf("rule %s: marker %q (text %q): want 6+ bytes, written with one \"·\"", r.program, m, r.text[i])
			}
		}
	}
}

// TestVetReturnsInterpreters: a vetting returns the identity of each
// file it vetted and of each program interpreter it vetted as a loader
// (what the kernel will open by path at every exec), once, and nothing
// when the check refuses.
func TestVetReturnsInterpreters(t *testing.T) {
	d := testRoot(t)
	r := openRoot(t, d)
	ref := func(p string) FileRef {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(d, p), &st); err != nil {
			t.Fatal(err)
		}
		return FileRef{Path: p, Dev: st.Dev, Ino: st.Ino}
	}
	ld := []FileRef{ref("/lib/ld-test.so.1")}
	got, err := r.Vet("/bin/app", "/sbin/tool")
	if want := (Vetted{Files: []FileRef{ref("/bin/app"), ref("/sbin/tool")}, Interps: ld}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Vet(app, tool) = %+v, %v; want %+v", got, err, want)
	}
	if got, err := r.Vet("/sbin/tool"); err != nil || len(got.Interps) != 0 {
		t.Errorf("Vet(tool) = %+v, %v; want no interpreter (a static program)", got, err)
	}
	if got, err := r.Vet("/bin/app", "/bin/ls"); !errors.Is(err, ErrUnsafe) || !reflect.DeepEqual(got, Vetted{}) {
		t.Errorf("Vet(app, ls) = %+v, %v; want ErrUnsafe and nothing", got, err)
	}
	// A program whose interpreter is not a loader: refused, nothing listed.
	if err := os.WriteFile(filepath.Join(d, "bin/odd"), fakeELF(t, "/sbin/tool", ""), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Vet("/bin/odd"); !errors.Is(err, ErrUnsafe) || !reflect.DeepEqual(got, Vetted{}) {
		t.Errorf("Vet(odd) = %+v, %v; want ErrUnsafe and nothing", got, err)
	}
	got, err = Program{Path: "app", Root: d, EnvPath: "/bin:/usr/bin"}.Vet()
	if want := (Vetted{Resolved: "/bin/app", Files: []FileRef{ref("/bin/app")}, Interps: ld}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Program.Vet(app) = %+v, %v; want %+v", got, err, want)
	}
}
