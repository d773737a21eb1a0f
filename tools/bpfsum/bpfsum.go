// Package bpfsum records what bpf/'s committed eBPF objects were generated
// from, and checks that record, so committed objects can never silently
// drift from their sources.
//
// `go generate ./bpf` (make generate) runs bpf2go for every program and then
// `bpfsum write`, which writes bpf/objects.sum: SHA-256 of every input in
// the bpf directory (all *.c and *.h files at any depth, vmlinux.h
// included), of the go:generate directives (clang flags, -type lists), the
// bpf2go version (go.mod's github.com/cilium/ebpf lines), and of every
// output (*_bpfel.o and *_bpfel.go); and, for information, the toolchain
// (clang and llvm-strip versions, the system headers clang read, such as
// libbpf's bpf_helpers.h). Before writing, it asks clang which files the
// sources include (clang -M): a file of the module outside the glob is
// recorded as an input too, so no include path can escape the record.
//
// The unit test bpf/objects_test.go calls Check: it recomputes everything
// but the toolchain, which needs no clang, and fails with the inputs that
// changed, appeared or disappeared since the objects were generated, or the
// outputs that are not the ones generated. The toolchain cannot be checked
// there: `go build` and `make unit` need no clang, and another clang (or
// libbpf) version produces other bytes. `bpfsum regen` (make generate-check)
// is the full check where the recorded toolchain is installed: it
// regenerates in a scratch copy of the tree and compares the records.
//
// Layering (docs/design.md): a tool; it may import anything, and only cmd/
// and tools/ import it.
package bpfsum

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// FileName is the record's name in the bpf directory.
const FileName = "objects.sum"

// ErrStale is returned (wrapped) by Check when the committed objects do not
// match the record or the record does not match the sources.
var ErrStale = errors.New("eBPF objects do not match their sources: run `make generate`")

// Record is the content of objects.sum. Paths are slash-separated and
// relative to the bpf directory.
type Record struct {
	// Toolchain lines are informational ("clang: Debian clang version
	// 14.0.6", "include <sha256> /usr/include/bpf/bpf_helpers.h"); Check
	// ignores them.
	Toolchain []string
	// Module holds go.mod's lines naming github.com/cilium/ebpf (bpf2go's
	// version), space-joined and trimmed, one per line.
	Module []string
	// Generate is the SHA-256 of the go:generate directives of the bpf
	// package's non-test Go files, in file order.
	Generate string
	// Inputs and Outputs map a path to its SHA-256.
	Inputs, Outputs map[string]string
}

const header = `# What the committed eBPF objects were generated from (SHA-256). Written by
# go generate ./bpf (make generate) after bpf2go, checked by bpf/objects_test.go;
# never edit it: run make generate. See tools/bpfsum.
`

// Format renders r as objects.sum.
func (r Record) Format() []byte {
	var b bytes.Buffer
	b.WriteString(header)
	for _, t := range r.Toolchain {
		fmt.Fprintf(&b, "toolchain %s\n", t)
	}
	for _, m := range r.Module {
		fmt.Fprintf(&b, "bpf2go %s\n", m)
	}
	fmt.Fprintf(&b, "generate %s\n", r.Generate)
	for _, kv := range []struct {
		kind string
		m    map[string]string
	}{{"input", r.Inputs}, {"output", r.Outputs}} {
		for _, p := range sortedKeys(kv.m) {
			fmt.Fprintf(&b, "%s %s %s\n", kv.kind, kv.m[p], p)
		}
	}
	return b.Bytes()
}

// Parse reads objects.sum.
func Parse(data []byte) (Record, error) {
	r := Record{Inputs: map[string]string{}, Outputs: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "toolchain":
			r.Toolchain = append(r.Toolchain, rest)
		case "bpf2go":
			r.Module = append(r.Module, rest)
		case "generate":
			r.Generate = rest
		case "input", "output":
			sum, path, ok := strings.Cut(rest, " ")
			if !ok || len(sum) != sha256.Size*2 || path == "" {
				return r, fmt.Errorf("%s line %d: want %q", FileName, n, kind+" SHA256 PATH")
			}
			if kind == "input" {
				r.Inputs[path] = sum
			} else {
				r.Outputs[path] = sum
			}
		default:
			return r, fmt.Errorf("%s line %d: unknown line %q", FileName, n, line)
		}
	}
	return r, sc.Err()
}

// Compute computes the checkable part of the record (everything but the
// toolchain) for the bpf directory dir. extra are inputs outside the glob
// that the record already names (Record.Inputs keys not matched by the
// glob, e.g. a header of the module outside dir); they are hashed too, and
// left out when they no longer exist.
func Compute(dir string, extra []string) (Record, error) {
	r := Record{Inputs: map[string]string{}, Outputs: map[string]string{}}
	inputs, err := Inputs(dir)
	if err != nil {
		return r, err
	}
	for i, p := range append(inputs, extra...) {
		sum, err := hashFile(filepath.Join(dir, filepath.FromSlash(p)))
		if i >= len(inputs) && errors.Is(err, fs.ErrNotExist) {
			continue // a recorded input that is gone: Diff says so
		}
		if err != nil {
			return r, fmt.Errorf("input %s: %w", p, err)
		}
		r.Inputs[p] = sum
	}
	outputs, err := Outputs(dir)
	if err != nil {
		return r, err
	}
	for _, p := range outputs {
		sum, err := hashFile(filepath.Join(dir, p))
		if err != nil {
			return r, fmt.Errorf("output %s: %w", p, err)
		}
		r.Outputs[p] = sum
	}
	dirs, err := Directives(dir)
	if err != nil {
		return r, err
	}
	r.Generate = hashBytes([]byte(strings.Join(dirs, "\n")))
	r.Module, err = moduleLines(dir)
	return r, err
}

// Inputs lists the glob's inputs in dir: every *.c and *.h file at any
// depth (the programs, their headers, headers/vmlinux.h), as sorted
// slash-separated paths relative to dir.
func Inputs(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext == ".c" || ext == ".h" {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// Outputs lists bpf2go's outputs in dir: *_bpfel.o and *_bpfel.go (and
// their big-endian twins, should a target ever add them), sorted.
func Outputs(dir string) ([]string, error) {
	var out []string
	for _, pat := range []string{"*_bpfel.o", "*_bpfel.go", "*_bpfeb.o", "*_bpfeb.go"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		for _, p := range m {
			out = append(out, filepath.Base(p))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Directives returns the go:generate lines of dir's non-test Go files, in
// the order go generate runs them (file name order, then line order).
func Directives(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "//go:generate ") {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return out, nil
}

// moduleLines returns the lines of the enclosing go.mod that name
// github.com/cilium/ebpf (its require and any replace), trimmed.
func moduleLines(dir string) ([]string, error) {
	root, err := ModuleRoot(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if slices.Contains(f, "github.com/cilium/ebpf") {
			out = append(out, strings.Join(f, " "))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("go.mod in %s does not name github.com/cilium/ebpf (bpf2go)", root)
	}
	return out, nil
}

// ModuleRoot returns the directory of the go.mod enclosing dir.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		d = parent
	}
}

// Diff compares a recorded and a computed record (toolchain lines aside)
// and describes every difference; none means they match.
func Diff(recorded, current Record) []string {
	var out []string
	if !slices.Equal(recorded.Module, current.Module) {
		out = append(out, fmt.Sprintf("bpf2go version: recorded %q, go.mod has %q", recorded.Module, current.Module))
	}
	if recorded.Generate != current.Generate {
		out = append(out, "the go:generate directives (bpf2go flags, clang flags, programs) changed")
	}
	out = append(out, diffMap("input", recorded.Inputs, current.Inputs)...)
	out = append(out, diffMap("output", recorded.Outputs, current.Outputs)...)
	return out
}

func diffMap(kind string, rec, cur map[string]string) []string {
	var out []string
	for _, p := range sortedKeys(rec) {
		switch c, ok := cur[p]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s is gone", kind, p))
		case c != rec[p]:
			out = append(out, fmt.Sprintf("%s %s changed", kind, p))
		}
	}
	for _, p := range sortedKeys(cur) {
		if _, ok := rec[p]; !ok {
			out = append(out, fmt.Sprintf("%s %s is new", kind, p))
		}
	}
	return out
}

// Check verifies dir's objects.sum against the sources and outputs in dir;
// the error wraps ErrStale and lists the differences.
func Check(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrStale, err)
	}
	rec, err := Parse(b)
	if err != nil {
		return err
	}
	if err := checkWrittenLast(dir); err != nil {
		return err
	}
	glob, err := Inputs(dir)
	if err != nil {
		return err
	}
	var extra []string
	for p := range rec.Inputs {
		if !slices.Contains(glob, p) {
			extra = append(extra, p)
		}
	}
	cur, err := Compute(dir, extra)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %v", ErrStale, err)
		}
		return err
	}
	if d := Diff(rec, cur); len(d) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrStale, strings.Join(d, "\n  "))
	}
	return nil
}

// checkWrittenLast: the record is written by the package's last go:generate
// directive, so that it hashes the outputs bpf2go has just written.
func checkWrittenLast(dir string) error {
	dirs, err := Directives(dir)
	if err != nil {
		return err
	}
	if len(dirs) == 0 || !strings.Contains(dirs[len(dirs)-1], "bpfsum write") {
		return fmt.Errorf("the last go:generate directive of %s (file name order) must be `bpfsum write`, after every bpf2go", dir)
	}
	return nil
}

func hashFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return hashBytes(b), nil
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for p := range m {
		k = append(k, p)
	}
	sort.Strings(k)
	return k
}
