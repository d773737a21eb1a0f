package bpf_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestNoCORERelocationOnOwnTypes: no CO-RE relocation of any program
// names a struct the objects declare themselves (their contexts, map
// values): the kernel has no such type, so the loader poisons the
// instruction and every kernel refuses the program ("bad CO-RE
// relocation"). BPF_CORE_READ(w->node, next) on a bpf_loop context w is
// the usual slip: the macro relocates every access in its first argument.
// Flavours (name___suffix) of kernel types are the kernel's.
func TestNoCORERelocationOnOwnTypes(t *testing.T) {
	kernel, err := os.ReadFile(filepath.Join("headers", "vmlinux.h"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^struct ([a-z_0-9]+) \{`)
	inKernel := map[string]bool{}
	for _, m := range decl.FindAllStringSubmatch(string(kernel), -1) {
		inKernel[m[1]] = true
	}
	own := map[string]bool{}
	files, _ := filepath.Glob("*.[ch]")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			if !inKernel[m[1]] && !strings.Contains(m[1], "___") {
				own[m[1]] = true
			}
		}
	}
	if len(own) == 0 {
		t.Fatal("no struct of the objects' own found: the scan is broken")
	}
	for stem, load := range programObjects {
		spec, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for name, ps := range spec.Programs {
			for i := range ps.Instructions {
				r := btf.CORERelocationMetadata(&ps.Instructions[i])
				if r == nil {
					continue
				}
				if n := r.String(); relocNamesOwn(n, own) != "" {
					t.Errorf("%s: program %s: %s names struct %s, which only the objects declare", stem, name, n, relocNamesOwn(n, own))
				}
			}
		}
	}
}

var relocType = regexp.MustCompile(`Struct:"([a-z_0-9]+)"`)

func relocNamesOwn(s string, own map[string]bool) string {
	if m := relocType.FindStringSubmatch(s); m != nil && own[m[1]] {
		return m[1]
	}
	return ""
}
