package bpf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourcesStateGPL: every eBPF source and header states GPL-2.0 (see
// LICENSES/README.md: the kernel gives the helpers these programs call
// only to GPL-compatible programs), and every object with programs declares it to
// the kernel.
func TestSourcesStateGPL(t *testing.T) {
	files, _ := filepath.Glob("*.[ch]")
	if len(files) == 0 {
		t.Fatal("no eBPF sources found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head := string(b)
		if len(head) > 400 {
			head = head[:400]
		}
		if !strings.Contains(head, "SPDX-License-Identifier: GPL-2.0") {
			t.Errorf("%s: no SPDX-License-Identifier: GPL-2.0 line at its top", f)
		}
		hasProgs := strings.Contains(string(b), `SEC("lsm`) || strings.Contains(string(b), `SEC("cgroup`) ||
			strings.Contains(string(b), `SEC("tp`) || strings.Contains(string(b), `SEC("fentry`)
		if hasProgs && !strings.Contains(string(b), `char LICENSE[] SEC("license") = "GPL";`) {
			t.Errorf("%s: the program does not declare its GPL licence to the kernel", f)
		}
	}
}
