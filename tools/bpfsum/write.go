package bpfsum

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Compiler returns the C compiler bpf2go uses: $BPF2GO_CC, else clang.
func Compiler() string {
	if cc := os.Getenv("BPF2GO_CC"); cc != "" {
		return cc
	}
	return "clang"
}

// Strip returns the strip tool bpf2go uses: $BPF2GO_STRIP, else llvm-strip.
func Strip() string {
	if s := os.Getenv("BPF2GO_STRIP"); s != "" {
		return s
	}
	return "llvm-strip"
}

// Write computes dir's record, with the toolchain, and writes objects.sum.
// Run it right after bpf2go (the last go:generate directive of the bpf
// package does), so the outputs it hashes are the ones just generated.
func Write(dir string) error {
	deps, err := Dependencies(dir)
	if err != nil {
		return err
	}
	root, err := ModuleRoot(dir)
	if err != nil {
		return err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	glob, err := Inputs(dir)
	if err != nil {
		return err
	}
	inGlob := map[string]bool{}
	for _, p := range glob {
		inGlob[p] = true
	}
	var extra, system []string
	for _, d := range deps {
		rel, err := filepath.Rel(absDir, d)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case inGlob[rel]:
		case isWithin(root, d):
			// A file of the module the glob does not match (an include
			// path outside bpf/): record it by its path from dir.
			extra = append(extra, rel)
		default:
			system = append(system, d)
		}
	}
	r, err := Compute(dir, extra)
	if err != nil {
		return err
	}
	r.Toolchain, err = toolchain(system)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FileName), r.Format(), 0o644)
}

func isWithin(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// toolchain describes the compiler, the strip tool and the system headers
// (absolute paths, hashed).
func toolchain(system []string) ([]string, error) {
	var out []string
	for _, tool := range []string{Compiler(), Strip()} {
		v, err := exec.Command(tool, "--version").Output()
		if err != nil {
			return nil, fmt.Errorf("%s --version: %w", tool, err)
		}
		out = append(out, fmt.Sprintf("%s: %s", filepath.Base(tool), versionLine(string(v))))
	}
	sort.Strings(system)
	for _, s := range system {
		sum, err := hashFile(s)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("include %s %s", sum, s))
	}
	return out, nil
}

// versionLine picks the line of a --version output that names the version
// (llvm-strip's first line does not), else the first non-empty line.
func versionLine(s string) string {
	first := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(strings.ToLower(l), "version") {
			return l
		}
		if first == "" {
			first = l
		}
	}
	return first
}

// Dependencies asks the compiler which files each bpf2go program of dir
// reads (clang -M with the directive's C flags) and returns their absolute
// paths, deduplicated and sorted.
func Dependencies(dir string) ([]string, error) {
	dirs, err := Directives(dir)
	if err != nil {
		return nil, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	n := 0
	for _, d := range dirs {
		src, cflags, ok := bpf2goSource(d)
		if !ok {
			continue
		}
		n++
		args := append([]string{"-M", "-target", "bpf"}, cflags...)
		args = append(args, strings.Fields(os.Getenv("BPF2GO_CFLAGS"))...)
		cmd := exec.Command(Compiler(), append(args, src)...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s -M %s: %w: %s", Compiler(), src, err, strings.TrimSpace(stderr.String()))
		}
		for _, p := range parseDeps(string(out)) {
			if !filepath.IsAbs(p) {
				p = filepath.Join(absDir, p)
			}
			seen[filepath.Clean(p)] = true
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("no bpf2go go:generate directive in %s", dir)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// bpf2goSource picks the C source (the *.c argument before "--") and the C
// flags (after "--") out of a bpf2go go:generate directive.
func bpf2goSource(directive string) (src string, cflags []string, ok bool) {
	f := strings.Fields(directive)
	i := 0
	for i < len(f) && !strings.HasSuffix(f[i], "/bpf2go") && f[i] != "bpf2go" {
		i++
	}
	if i == len(f) {
		return "", nil, false
	}
	for i++; i < len(f) && f[i] != "--"; i++ {
		if strings.HasSuffix(f[i], ".c") && !strings.HasPrefix(f[i], "-") {
			src = f[i]
		}
	}
	if i < len(f) {
		cflags = f[i+1:]
	}
	return src, cflags, src != ""
}

// parseDeps reads make-style dependencies ("obj: a.c b.h \", one target).
func parseDeps(s string) []string {
	_, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return nil
	}
	var out []string
	for _, f := range strings.Fields(strings.ReplaceAll(rest, "\\\n", " ")) {
		if f != "\\" {
			out = append(out, f)
		}
	}
	return out
}
