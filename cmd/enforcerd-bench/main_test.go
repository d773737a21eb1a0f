package main

import (
	"os"
	"strings"
	"testing"

	"github.com/enforcerd/enforcerd/enforcer"
	"github.com/enforcerd/enforcerd/tools/bench"
)

// TestEveryAttachedHookClosesAKind: every hook enforcerd attaches a
// program to is named in the "closed by" column of a kind of
// docs/threat-model.md. The goals judge an operation that reaches a hook
// against the floor because every hook closes a kind (bench.Doc.OpGoals):
// a hook the threat model does not name would be a cost nobody answered
// for. It lives with the command whose report writes the table of hooks
// because it reads the source tree, and the package tools/bench also runs
// inside the test VMs, which have none.
func TestEveryAttachedHookClosesAKind(t *testing.T) {
	md, err := os.ReadFile("../../docs/threat-model.md")
	if err != nil {
		t.Fatal(err)
	}
	points, err := enforcer.AttachPoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(points) < 50 {
		t.Fatalf("only %d attach points", len(points))
	}
	kinds := bench.KindsByHook(md, points)
	seen := map[string]bool{}
	for _, p := range points {
		if !seen[p.Hook] && len(kinds[p.Hook]) == 0 {
			t.Errorf("hook %s (program %s, object %s) closes no kind of docs/threat-model.md: name it in the \"closed by\" column of the kinds it closes", p.Hook, p.Program, p.Object)
		}
		seen[p.Hook] = true
	}
}

// TestAnalysisPagesHaveTheirMarkers: the pages `make bench` rewrites at
// the end of a run (about an hour in icount mode) have the lines around
// each generated block, in order, so a page edited by hand fails here and
// not after the run.
func TestAnalysisPagesHaveTheirMarkers(t *testing.T) {
	for _, c := range []struct {
		page    string
		markers []string
	}{
		{"../../docs/performance.md", []string{bench.VerdictsBegin, bench.VerdictsEnd, bench.SinceBegin, bench.SinceEnd}},
		{"../../docs/threat-model.md", []string{bench.HooksBegin, bench.HooksEnd}},
	} {
		b, err := os.ReadFile(c.page)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		at := 0
		for _, m := range c.markers {
			i := strings.Index(s[at:], m)
			if i < 0 {
				t.Errorf("%s: no line %q after byte %d", c.page, m, at)
				break
			}
			if strings.Count(s, m) != 1 {
				t.Errorf("%s: the line %q appears %d times", c.page, m, strings.Count(s, m))
			}
			at += i + len(m)
		}
	}
}
