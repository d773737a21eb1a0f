// Package testelf builds ELF files for tests of the shell=none rules: an
// executable with no code of its own that the kernel runs through another
// program, the way an attacker would smuggle a shell past a check that
// looks only at the file exec'd.
package testelf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
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
