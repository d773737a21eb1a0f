package bpf

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// ProgramSections lists the programs of the embedded object of stem (the
// object's bpf2go name in lower case: "file" for file_bpfel.o) by name,
// with the ELF section each is in: "lsm/file_open", "cgroup/connect4",
// "tp_btf/sched_process_exec", "fentry/crypto_alg_mod_lookup". The
// section names the program's type and attach point. It reads only the
// section headers and the symbol table, a small fraction of the work of
// Load<Stem> (BTF, relocations), for callers that need the list and not
// the programs. Errors: no such object, or an unreadable one.
func ProgramSections(stem string) (map[string]string, error) {
	b, err := objectFiles.ReadFile(stem + "_bpfel.o")
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", stem, err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", stem, err)
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("object %s: symbols: %w", stem, err)
	}
	out := map[string]string{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || elf.ST_BIND(s.Info) != elf.STB_GLOBAL ||
			s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if sec.Flags&elf.SHF_EXECINSTR == 0 || sec.Name == ".text" {
			continue // .text holds subprograms (resolve, ...), not programs
		}
		out[s.Name] = sec.Name
	}
	return out, nil
}
