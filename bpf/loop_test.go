package bpf

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// loopCall is a bpf_loop() call in code (not in a comment line).
var loopCall = regexp.MustCompile(`^\s*bpf_loop\(`)

// TestEveryLoopStateUnknown: every bpf_loop() call has LOOP_CTX_UNKNOWN or
// LOOP_STATE_UNKNOWN (loop.h) before it in its function, so that no
// verifier that checks a callback for one iteration (before Linux 6.8)
// knows the loop's state and removes the branches that need more
// iterations. It fails on a call without one; it cannot tell whether the
// right fields are covered (loop.h says which must be).
func TestEveryLoopStateUnknown(t *testing.T) {
	files, _ := filepath.Glob("*.[ch]")
	calls := 0
	for _, f := range files {
		if f == "loop.h" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if !loopCall.MatchString(l) {
				continue
			}
			calls++
			found := false
			// Back to the start of the function: a line that opens
			// it at column 0.
			for j := i - 1; j >= 0 && !strings.HasPrefix(lines[j], "{"); j-- {
				if strings.Contains(lines[j], "LOOP_CTX_UNKNOWN(") || strings.Contains(lines[j], "LOOP_STATE_UNKNOWN(") {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s:%d: bpf_loop() without LOOP_CTX_UNKNOWN or LOOP_STATE_UNKNOWN before it in its function (loop.h)", f, i+1)
			}
		}
	}
	if calls == 0 {
		t.Fatal("no bpf_loop() call found: the pattern no longer matches the sources")
	}
}
