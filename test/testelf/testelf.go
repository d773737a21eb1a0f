// Package testelf builds ELF files for tests of the shell=none rules: an
// executable with no code of its own that the kernel runs through another
// program, the way an attacker would smuggle a shell past a check that
// looks only at the file exec'd.
//
// Layering (docs/design.md): a test harness; it may import the product and
// the other harnesses, and no product package imports it.
package testelf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// InterpStub returns a tiny x86-64 ELF (a few hundred bytes) whose
// PT_INTERP is interp. The kernel maps interp as the program's "dynamic
// loader" and jumps to interp's entry point, so exec'ing the stub runs
// interp with the stub's argv (a stub named "sh" whose interpreter is a
// static BusyBox is BusyBox's sh). For a static glibc interpreter (Debian's
// busybox-static) the stub also carries a copy of interp's PT_TLS and
// PT_GNU_RELRO headers: static glibc sets up TLS and RELRO from the main
// program's headers (AT_PHDR).
//
// Errors: interp cannot be opened or is not an ELF file.
func InterpStub(interp string) ([]byte, error) {
	f, err := elf.Open(interp)
	if err != nil {
		return nil, fmt.Errorf("interpreter %s: %w", interp, err)
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
	return b.Bytes(), nil
}

// DynamicCopy writes to dst a copy of the dynamic ELF program src whose
// program interpreter (PT_INTERP) is interp instead: a program of the
// same code that the kernel starts through another loader file. interp
// must fit the original segment (a glibc program's holds 27 bytes).
// Errors: src cannot be read or has no PT_INTERP, interp is too long, dst
// cannot be written.
func DynamicCopy(src, dst, interp string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		if uint64(len(interp)) >= p.Filesz {
			return fmt.Errorf("%s: interpreter %q does not fit its %d-byte PT_INTERP", src, interp, p.Filesz)
		}
		seg := b[p.Off : p.Off+p.Filesz]
		for i := range seg {
			seg[i] = 0
		}
		copy(seg, interp)
		return os.WriteFile(dst, b, 0o755)
	}
	return fmt.Errorf("%s: no PT_INTERP (not a dynamic program)", src)
}

// InterpFixture is a dynamic program whose program interpreter is a copy
// of the system's glibc loader at a path of its own, for tests of the
// shell=none interpreter rule: Prog's PT_INTERP names LD, and Root is a
// directory holding BusyBox at /bb (a root to chroot into).
type InterpFixture struct {
	Dir, LD, Prog, Root string
}

// NewInterpFixture builds an InterpFixture in a new directory beneath
// parent (which must be short: LD's path must fit runc's PT_INTERP),
// from the glibc loader (/lib64/ld-linux-x86-64.so.2), runc (a dynamic
// program found in PATH; the vmtest guest packs it with its libraries)
// and /bin/busybox. Errors: any of them missing, or a write failing.
func NewInterpFixture(parent string) (InterpFixture, error) {
	const loader = "/lib64/ld-linux-x86-64.so.2"
	runc, err := exec.LookPath("runc")
	if err != nil {
		return InterpFixture{}, fmt.Errorf("a dynamic program: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "ei")
	if err != nil {
		return InterpFixture{}, err
	}
	f := InterpFixture{Dir: dir, LD: filepath.Join(dir, "ld"), Prog: filepath.Join(dir, "prog"), Root: filepath.Join(dir, "root")}
	for _, c := range []struct{ src, dst string }{{loader, f.LD}, {"/bin/busybox", filepath.Join(f.Root, "bb")}} {
		b, err := os.ReadFile(c.src)
		if err != nil {
			return f, err
		}
		if err := os.MkdirAll(filepath.Dir(c.dst), 0o755); err != nil {
			return f, err
		}
		if err := os.WriteFile(c.dst, b, 0o755); err != nil {
			return f, err
		}
	}
	return f, DynamicCopy(runc, f.Prog, f.LD)
}

// TestInterpFixture is NewInterpFixture("/") for a test: the fixture is
// removed when the test ends, and an error fails the test.
func TestInterpFixture(t testing.TB) InterpFixture {
	t.Helper()
	f, err := NewInterpFixture("/")
	if f.Dir != "" {
		t.Cleanup(func() { os.RemoveAll(f.Dir) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}
