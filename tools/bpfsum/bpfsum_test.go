package bpfsum

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture writes a small module with a bpf directory shaped like the real
// one and a record that matches it.
func fixture(t *testing.T) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "bpf")
	files := map[string]string{
		"go.mod":                "module example.com/m\n\ngo 1.26\n\nrequire github.com/cilium/ebpf v0.22.0\n",
		"bpf/gen.go":            "package bpf\n\n//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel -type event Net net.bpf.c -- -O2 -g -I./headers -I.\n",
		"bpf/objects.go":        "package bpf\n\n//go:generate go run example.com/m/cmd/bpfsum write\n",
		"bpf/objects_test.go":   "package bpf\n\n//go:generate not-a-step\n",
		"bpf/net.bpf.c":         "#include \"common.h\"\n",
		"bpf/common.h":          "#include \"vmlinux.h\"\n",
		"bpf/headers/vmlinux.h": "struct task_struct;\n",
		"bpf/net_bpfel.o":       "\x7fELF object",
		"bpf/net_bpfel.go":      "package bpf\n",
	}
	for p, c := range files {
		write(t, filepath.Join(root, p), c)
	}
	r, err := Compute(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Toolchain = []string{"clang: Debian clang version 14.0.6"}
	write(t, filepath.Join(dir, FileName), string(r.Format()))
	return root, dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPassesOnAFreshRecord(t *testing.T) {
	_, dir := fixture(t)
	if err := Check(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	for _, want := range []string{"input ", " headers/vmlinux.h\n", " common.h\n", " net.bpf.c\n", " net_bpfel.o\n", "bpf2go require github.com/cilium/ebpf v0.22.0\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("record lacks %q:\n%s", want, b)
		}
	}
}

// TestCheckCatchesEveryDrift: any change of an input, an output, the
// directives or bpf2go's version since the record was written fails the
// check and names what changed; so does a header added by a split.
func TestCheckCatchesEveryDrift(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, root, dir string)
		want   string
	}{
		{"source edited", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "net.bpf.c"), "// comment\n") }, "input net.bpf.c changed"},
		{"header edited", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "common.h"), "") }, "input common.h changed"},
		{"vmlinux.h edited", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "headers/vmlinux.h"), "") }, "input headers/vmlinux.h changed"},
		{"header split", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "maps.h"), "") }, "input maps.h is new"},
		{"new program", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "x.bpf.c"), "") }, "input x.bpf.c is new"},
		{"header in a new directory", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "include/a.h"), "") }, "input include/a.h is new"},
		{"header removed", func(t *testing.T, _, dir string) { os.Remove(filepath.Join(dir, "common.h")) }, "input common.h is gone"},
		{"object swapped", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "net_bpfel.o"), "other") }, "output net_bpfel.o changed"},
		{"bindings edited", func(t *testing.T, _, dir string) { write(t, filepath.Join(dir, "net_bpfel.go"), "package bpf // x\n") }, "output net_bpfel.go changed"},
		{"object removed", func(t *testing.T, _, dir string) { os.Remove(filepath.Join(dir, "net_bpfel.o")) }, "output net_bpfel.o is gone"},
		{"flags changed", func(t *testing.T, _, dir string) {
			write(t, filepath.Join(dir, "gen.go"), "package bpf\n\n//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Net net.bpf.c -- -O1 -I./headers -I.\n")
		}, "go:generate directives"},
		{"bpf2go upgraded", func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "go.mod"), "module example.com/m\n\ngo 1.26\n\nrequire github.com/cilium/ebpf v0.23.0\n")
		}, "bpf2go version"},
		{"record written first", func(t *testing.T, _, dir string) {
			write(t, filepath.Join(dir, "zz.go"), "package bpf\n\n//go:generate go run github.com/cilium/ebpf/cmd/bpf2go Y y.c\n")
		}, "must be `bpfsum write`"},
		{"no record", func(t *testing.T, _, dir string) { os.Remove(filepath.Join(dir, FileName)) }, "objects.sum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, dir := fixture(t)
			c.change(t, root, dir)
			err := Check(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want an error naming %q", err, c.want)
			}
			if c.name != "record written first" && !errors.Is(err, ErrStale) {
				t.Errorf("error does not wrap ErrStale: %v", err)
			}
		})
	}
}

func TestTestFilesAndToolchainLinesDoNotCount(t *testing.T) {
	_, dir := fixture(t)
	write(t, filepath.Join(dir, "more_test.go"), "package bpf\n//go:generate echo\n")
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	write(t, filepath.Join(dir, FileName), strings.Replace(string(b), "clang version 14.0.6", "clang version 19.1.7", 1))
	if err := Check(dir); err != nil {
		t.Fatal(err)
	}
}

func TestParseRejectsMalformedLines(t *testing.T) {
	for _, s := range []string{"input abc x.c\n", "output " + strings.Repeat("a", 64) + "\n", "bogus line\n"} {
		if _, err := Parse([]byte(s)); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	r := Record{Toolchain: []string{"clang: x"}, Module: []string{"require m v1"}, Generate: "g",
		Inputs: map[string]string{"a.h": strings.Repeat("1", 64)}, Outputs: map[string]string{"a_bpfel.o": strings.Repeat("2", 64)}}
	back, err := Parse(r.Format())
	if err != nil || len(Diff(r, back)) != 0 || !slices.Equal(back.Toolchain, r.Toolchain) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestBpf2goSource(t *testing.T) {
	src, cflags, ok := bpf2goSource("//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel -type event -type ceiling Network network.bpf.c -- -O2 -g -Wall -D__TARGET_ARCH_x86 -I./headers -I.")
	if !ok || src != "network.bpf.c" || !slices.Equal(cflags, []string{"-O2", "-g", "-Wall", "-D__TARGET_ARCH_x86", "-I./headers", "-I."}) {
		t.Errorf("got %q %q %v", src, cflags, ok)
	}
	if _, _, ok := bpf2goSource("//go:generate go run ./cmd/bpfsum write"); ok {
		t.Error("bpfsum write taken for a bpf2go directive")
	}
	deps := parseDeps("network.o: network.bpf.c ./enforcerd.h headers/vmlinux.h \\\n  /usr/include/bpf/bpf_helpers.h\n")
	if !slices.Equal(deps, []string{"network.bpf.c", "./enforcerd.h", "headers/vmlinux.h", "/usr/include/bpf/bpf_helpers.h"}) {
		t.Errorf("parseDeps: %q", deps)
	}
}

// TestWriteRecordsWhatClangReads: with clang installed, Write records a
// header the sources include from outside the bpf directory, and the system
// headers as toolchain lines.
func TestWriteRecordsWhatClangReads(t *testing.T) {
	if _, err := exec.LookPath(Compiler()); err != nil {
		t.Skip("needs clang (scripts/setup-deps --bpf)")
	}
	if _, err := exec.LookPath(Strip()); err != nil {
		t.Skip("needs llvm-strip (scripts/setup-deps --bpf)")
	}
	root, dir := fixture(t)
	write(t, filepath.Join(root, "include/outside.h"), "")
	write(t, filepath.Join(dir, "common.h"), "#include \"vmlinux.h\"\n#include \"outside.h\"\n#include <stddef.h>\n")
	write(t, filepath.Join(dir, "gen.go"), "package bpf\n\n//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -go-package bpf -target bpfel Net net.bpf.c -- -O2 -I./headers -I. -I../include\n")
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	for _, want := range []string{" ../include/outside.h\n", "toolchain clang: ", "toolchain include ", "stddef.h\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("record lacks %q:\n%s", want, b)
		}
	}
	if err := Check(dir); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "include/outside.h"), "// changed")
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "input ../include/outside.h changed") {
		t.Errorf("Check after changing a header outside the directory: %v", err)
	}
}
