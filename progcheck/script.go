package progcheck

import (
	"bytes"
	"io"
)

// binprmBufSize is how much of a file the kernel reads to choose its
// binary format (BINPRM_BUF_SIZE): a "#!" line longer than that is cut.
const binprmBufSize = 256

// maxScriptDepth is how many interpreters one exec may chain: the kernel
// gives up (ELOOP) after five binfmt stages beyond the first
// (exec_binprm).
const maxScriptDepth = 5

// scriptInterp returns the interpreter a "#!" script names, parsed as
// the kernel's binfmt_script does (fs/binfmt_script.c): in the first
// binprmBufSize bytes (zero-padded), the first line after "#!" and blanks
// (spaces, tabs), up to the next blank or NUL. ok is false when r is not
// a script the kernel would run through an interpreter (no "#!", no name,
// or a name the buffer may have cut: no newline and no blank or NUL after
// it): the kernel then refuses it as a script (ENOEXEC), and only another
// binary format (binfmt_misc) could run it.
func scriptInterp(r io.ReaderAt) (interp string, ok bool) {
	var buf [binprmBufSize]byte
	n, _ := r.ReadAt(buf[:], 0)
	if n < 2 || buf[0] != '#' || buf[1] != '!' {
		return "", false
	}
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	last := len(buf) - 1 // buf_end: never part of the line
	end := bytes.IndexByte(buf[:], '\n')
	if end < 0 {
		i := 2
		for i <= last && blank(buf[i]) {
			i++
		}
		if i > last {
			return "", false // only blanks
		}
		for i <= last && !blank(buf[i]) && buf[i] != 0 {
			i++
		}
		if i > last {
			return "", false // the name may be cut
		}
		end = last
	}
	i := 2
	for i < end && blank(buf[i]) {
		i++
	}
	j := i
	for j < end && !blank(buf[j]) && buf[j] != 0 {
		j++
	}
	if i == j {
		return "", false
	}
	return string(buf[i:j]), true
}
