package bpf

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// uninitEffective is a struct effective declared without an initialiser.
var uninitEffective = regexp.MustCompile(`^\s*struct effective (\w+);`)

// typeOpener is a line that opens a struct or union type's body.
var typeOpener = regexp.MustCompile(`^\s*(typedef\s+)?(struct|union)(\s+\w+)?\s*\{`)

// TestUninitialisedEffectiveOnlyBeforeResolve: resolve() (walk.h) writes
// all of a struct effective when it returns 1, but only its pending field
// when it returns 0. The verifier lets a program loaded with CAP_PERFMON
// read uninitialised stack, so nothing at load time would catch a hook
// that reads another field after a 0; this test does. A struct effective
// declared without "= {}" must be followed at once by
// "if (!resolve(&x))" and "return 0;": it is then read only where
// resolve() returned 1. Any other use zeroes it.
func TestUninitialisedEffectiveOnlyBeforeResolve(t *testing.T) {
	files, _ := filepath.Glob("*.[ch]")
	if len(files) == 0 {
		t.Fatal("no eBPF sources found")
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		var open []bool // per open brace: whether it opened a struct or union type
		for i, l := range lines {
			inType := len(open) > 0 && open[len(open)-1]
			for _, c := range l {
				switch c {
				case '{':
					open = append(open, typeOpener.MatchString(l))
				case '}':
					if len(open) > 0 {
						open = open[:len(open)-1]
					}
				}
			}
			m := uninitEffective.FindStringSubmatch(l)
			if m == nil || inType {
				continue // a member of a type, not a variable
			}
			n++
			v := m[1]
			if i+2 >= len(lines) ||
				strings.TrimSpace(lines[i+1]) != "if (!resolve(&"+v+"))" ||
				strings.TrimSpace(lines[i+2]) != "return 0;" {
				t.Errorf("%s:%d: struct effective %s is not zeroed and not followed by \"if (!resolve(&%s)) return 0;\": zero it (= {})", f, i+1, v, v)
			}
		}
	}
	if n == 0 {
		t.Fatal("no uninitialised struct effective found: the pattern no longer matches the sources")
	}
}
