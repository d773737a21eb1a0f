package progcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxScanBytes bounds the size of a file whose content is scanned (1 GiB:
// the largest common single-file runtimes, node or a Go agent with
// everything linked in, are a few hundred MiB). A larger ELF is refused
// with ErrTooLarge: it cannot be told apart from a shell.
const MaxScanBytes = 1 << 30

// scanChunk is how much of a file is searched at a time.
const scanChunk = 4 << 20

// rule is one program's signature: every marker must occur in the file.
type rule struct {
	kind    Kind
	program string   // what the Finding names, e.g. "BusyBox"
	what    string   // what the markers are, for the Finding's reason
	markers [][]byte // filled by init from text
	text    []string // see markerText
	wide    bool     // the markers are UTF-32LE (wchar_t on Linux)
}

// rules is the signature table. Sources are each program's own strings,
// checked against Debian 12's builds (bash 5.2, zsh 5.9, ksh93u+m 1.0,
// mksh R59, posh 0.14, tcsh 6.24, yash 2.52, fish 3.6, BusyBox 1.35,
// toybox 0.8.9, glibc 2.36's ld.so, musl 1.2.3's loader) and, for a
// false positive, against every program in Debian's /usr/bin of a
// development host (kubectl and shellcheck mention BASH_VERSION and
// ZSH_VERSION, so no shell is recognised by those alone).
//
// Each marker is written with a "·" that markerText removes: the markers
// never occur verbatim in a binary built with this package (enforcerd,
// its tests), which would otherwise classify itself as a shell.
var rules = []rule{
	{kind: Shell, program: "bash", what: "its version banner and variable", text: []string{"GNU bash·, version", "BASH_·VERSION"}},
	{kind: Shell, program: "zsh", what: "its version and evaluation-context variables", text: []string{"ZSH_·VERSION", "ZSH_·EVAL_CONTEXT"}},
	{kind: Shell, program: "ksh93", what: "its version variables", text: []string{"KSH_·VERSION", ".sh.·version"}},
	{kind: Shell, program: "mksh", what: "its KSH_VERSION string", text: []string{"@(#)MIRBSD ·KSH"}},
	{kind: Shell, program: "mksh (lksh)", what: "its KSH_VERSION string", text: []string{"@(#)LEGACY ·KSH"}},
	{kind: Shell, program: "pdksh", what: "its KSH_VERSION string", text: []string{"@(#)PD ·KSH"}},
	{kind: Shell, program: "posh", what: "its version variable", text: []string{"POSH_·VERSION"}},
	{kind: Shell, program: "tcsh", what: "its version format", text: []string{"tcsh %d.%.2d·.%.2d"}},
	{kind: Shell, program: "yash", what: "its version banner", text: []string{"Yet another shell·, version"}},
	{kind: Shell, program: "fish", what: "its version variable (a wide string)", text: []string{"FISH_·VERSION"}, wide: true},
	{kind: Shell, program: "fish", what: "its universal variables header", text: []string{"fish universal variable· definitions"}},
	{kind: MultiCall, program: "BusyBox", what: "its banner and usage text", text: []string{"BusyBox ·v", "multi-call ·binary"}},
	{kind: MultiCall, program: "toybox", what: "its banner", text: []string{"Toy·box", "multicall ·binary"}},
	{kind: MultiCall, program: "GNU coreutils (single binary)", what: "its program-selection option", text: []string{"--coreutils·-prog="}},
	{kind: MultiCall, program: "uutils coreutils", what: "its usage text", text: []string{"(multi-call ·binary)"}},
	{kind: Loader, program: "glibc's ld.so", what: "its usage text", text: []string{"You have invoked ·'ld.so'"}},
	{kind: Loader, program: "glibc's ld.so", what: "its usage text", text: []string{"EXECUTABLE-FILE ·[ARGS-FOR-PROGRAM"}},
	{kind: Loader, program: "musl's loader", what: "its usage text", text: []string{"Dynamic Program ·Loader"}},
}

// maxMarker is the length of the longest marker (the scan's overlap).
var maxMarker int

func init() {
	for i := range rules {
		for _, t := range rules[i].text {
			m := markerText(t)
			if rules[i].wide {
				m = utf32le(m)
			}
			rules[i].markers = append(rules[i].markers, m)
			maxMarker = max(maxMarker, len(m))
		}
	}
}

// markerText is t without its "·".
func markerText(t string) []byte { return []byte(strings.ReplaceAll(t, "·", "")) }

// utf32le encodes ASCII text as glibc's wchar_t strings are stored.
func utf32le(b []byte) []byte {
	out := make([]byte, 0, 4*len(b))
	for _, c := range b {
		out = append(out, c, 0, 0, 0)
	}
	return out
}

// Classify classifies one open regular file by its content alone (rules
// 3, 5 and 6 of the package documentation): "" when it is not recognised,
// else the kind and the reason. Errors: the file cannot be read, or an
// ELF is larger than MaxScanBytes (ErrTooLarge).
func Classify(f *os.File) (Kind, string, error) {
	st, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	return ClassifyContent(f, st.Size())
}

// ClassifyContent is Classify for size bytes read from r.
func ClassifyContent(r io.ReaderAt, size int64) (Kind, string, error) {
	info := readELF(io.NewSectionReader(r, 0, size))
	if !info.isELF {
		return "", "", nil
	}
	if loaderSONAME(info.soname) {
		return Loader, fmt.Sprintf("its ELF DT_SONAME is %s", info.soname), nil
	}
	if size > MaxScanBytes {
		return "", "", fmt.Errorf("%w: %d bytes (at most %d are scanned)", ErrTooLarge, size, MaxScanBytes)
	}
	rl, err := scan(io.NewSectionReader(r, 0, size), size)
	if err != nil || len(rl) == 0 {
		return "", "", err
	}
	return rl[0].kind, rl[0].reason(), nil
}

// reason is what a Finding says about a file that matched r.
func (r *rule) reason() string { return fmt.Sprintf("%s: %s", r.program, r.what) }

// interpVerdict says whether an ELF program interpreter is a dynamic
// loader by content (a loader's DT_SONAME or usage text) and nothing
// that runs other programs besides (no shell's or multi-call binary's
// markers): "" when it is, else why not. The whole file is scanned, a
// loader's SONAME included. Errors as ClassifyContent.
func interpVerdict(r io.ReaderAt, size int64) (string, error) {
	info := readELF(io.NewSectionReader(r, 0, size))
	if !info.isELF {
		return "not an ELF file", nil
	}
	if size > MaxScanBytes {
		return "", fmt.Errorf("%w: %d bytes (at most %d are scanned)", ErrTooLarge, size, MaxScanBytes)
	}
	rls, err := scan(io.NewSectionReader(r, 0, size), size)
	if err != nil {
		return "", err
	}
	loader := loaderSONAME(info.soname)
	for _, rl := range rls {
		if rl.kind != Loader {
			return fmt.Sprintf("it is a %s (%s)", rl.kind, rl.reason()), nil
		}
		loader = true
	}
	if !loader {
		return "no dynamic loader's DT_SONAME or usage text", nil
	}
	return "", nil
}

// scan streams the size bytes of r and returns every rule all of whose
// markers occur in them, in table order (none: nil).
func scan(r io.Reader, size int64) ([]*rule, error) {
	found := make([][]bool, len(rules))
	for i := range rules {
		found[i] = make([]bool, len(rules[i].markers))
	}
	overlap := maxMarker - 1
	buf := make([]byte, overlap+int(min(size, scanChunk)))
	carry := 0
	for {
		n, rerr := io.ReadFull(r, buf[carry:])
		window := buf[:carry+n]
		for i := range rules {
			for j, m := range rules[i].markers {
				if !found[i][j] && bytes.Contains(window, m) {
					found[i][j] = true
				}
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
		carry = min(overlap, len(window))
		copy(buf, window[len(window)-carry:])
	}
	var out []*rule
	for i := range rules {
		all := true
		for _, f := range found[i] {
			all = all && f
		}
		if all {
			out = append(out, &rules[i])
		}
	}
	return out, nil
}
