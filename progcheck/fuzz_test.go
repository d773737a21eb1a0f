package progcheck

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzClassifyContent: arbitrary file content never panics (debug/elf
// included) and yields a known kind or none.
func FuzzClassifyContent(f *testing.F) {
	f.Add([]byte("#!/bin/sh\n"))
	f.Add([]byte("\x7fELF"))
	f.Add(fakeELF(f, "/lib/ld.so", "ld-linux-x86-64.so.2"))
	f.Add(fakeELF(f, "", "", signature(ruleFor(f, "BusyBox"))))
	f.Add(fakeELF(f, "", "", signature(&rules[len(rules)-1])))
	known := map[Kind]bool{"": true}
	for _, k := range AllKinds {
		known[k] = true
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, why, err := ClassifyContent(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("in-memory content: %v", err)
		}
		if !known[k] || (k != "") != (why != "") {
			t.Fatalf("kind %q, reason %q", k, why)
		}
	})
}

// FuzzParseShells: every entry is one absolute, trimmed line.
func FuzzParseShells(f *testing.F) {
	f.Add([]byte("# c\n/bin/sh\n\n/usr/bin/zsh\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range ParseShells(b) {
			if !strings.HasPrefix(e, "/") || strings.ContainsAny(e, "\n") || strings.TrimSpace(e) != e {
				t.Fatalf("entry %q", e)
			}
		}
	})
}
