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

// resolveCall is the test of a resolve() or resolve_for() (walk.h) answer
// for the variable named in its first group.
var resolveCall = regexp.MustCompile(`^if \(!(?:resolve\(&(\w+)\)|resolve_for\(&(\w+), [A-Z_| ]+\))\)$`)

// TestUninitialisedEffectiveOnlyBeforeResolve: resolve() (walk.h) writes
// all of a struct effective when it returns 1, but only its pending field
// when it returns 0; resolve_for() writes all of it when it returns 1 and
// nothing it promises when it returns 0. The verifier lets a program
// loaded with CAP_PERFMON read uninitialised stack, so nothing at load
// time would catch a hook that reads another field after a 0; this test
// does. A struct effective declared without "= {}" must be followed at
// once by "if (!resolve(&x))" or "if (!resolve_for(&x, BITS))" and by the
// hook's allow ("return 0;", or "return 1;" in a cgroup-BPF object,
// sock.bpf.c): it is then read only where the call returned 1. Any other
// use zeroes it.
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
			allow := "return 0;"
			if strings.HasPrefix(f, "sock.") {
				allow = "return 1;" // cgroup-BPF: 1 allows
			}
			if i+2 >= len(lines) || !resolvesThenAllows(lines[i+1], lines[i+2], v, allow) {
				t.Errorf("%s:%d: struct effective %s is not zeroed and not followed by \"if (!resolve(&%s)) %s\" (or resolve_for): zero it (= {})", f, i+1, v, v, allow)
			}
		}
	}
	if n == 0 {
		t.Fatal("no uninitialised struct effective found: the pattern no longer matches the sources")
	}
}

// resolvesThenAllows: test and next are "if (!resolve(&v))" (or
// resolve_for(&v, BITS)) and allow.
func resolvesThenAllows(test, next, v, allow string) bool {
	m := resolveCall.FindStringSubmatch(strings.TrimSpace(test))
	if m == nil || (m[1] != v && m[2] != v) {
		return false
	}
	return strings.TrimSpace(next) == allow
}
