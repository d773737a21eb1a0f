package progcheck

import (
	"bytes"
	"debug/elf"
	"io"
	"os"
	"strings"
)

// maxInterpBytes bounds a PT_INTERP string (the kernel's own limit is
// PATH_MAX).
const maxInterpBytes = 4096

// elfInfo is what the ELF headers say about a file.
type elfInfo struct {
	isELF  bool   // starts with the ELF magic
	interp string // PT_INTERP, "" when none
	soname string // DT_SONAME, "" when none or unreadable
}

// readELF reads the ELF magic, PT_INTERP and DT_SONAME of r. A malformed
// ELF (which debug/elf refuses, or panics on) keeps isELF: its content is
// still scanned.
func readELF(r io.ReaderAt) (info elfInfo) {
	var magic [4]byte
	if n, _ := r.ReadAt(magic[:], 0); n < 4 || string(magic[:]) != elf.ELFMAG {
		return info
	}
	info.isELF = true
	defer func() {
		if recover() != nil {
			info.interp, info.soname = "", ""
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return info
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(p.Open(), maxInterpBytes))
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		info.interp = string(b)
		break
	}
	if names, err := f.DynString(elf.DT_SONAME); err == nil && len(names) > 0 {
		info.soname = names[0]
	}
	return info
}

// loaderSONAMEs are the DT_SONAME prefixes of dynamic loaders: glibc
// (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-linux.so.2,
// ld64.so.2 on ppc64/s390x), older and other libcs (ld.so.1,
// ld-uClibc.so.0) and musl (ld-musl-ARCH.so.1, when a build sets one).
var loaderSONAMEs = []string{"ld-linux", "ld.so", "ld64.so", "ld-musl-", "ld-uClibc"}

func loaderSONAME(soname string) bool {
	for _, p := range loaderSONAMEs {
		if strings.HasPrefix(soname, p) {
			return true
		}
	}
	return false
}

// ELFInterp returns the program interpreter (PT_INTERP) of the ELF file at
// path: "" for a static ELF or a file that is not ELF. Errors: the file
// cannot be opened.
func ELFInterp(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readELF(f).interp, nil
}
