package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerdictTables: the per-operation table names the programs that run
// on the operation and prints each goal's ratio with its verdict; the
// count line adds them up.
func TestVerdictTables(t *testing.T) {
	d := profiled(icountDoc(), OpStat, OpTCPRR)
	d.Reps = 7
	var b strings.Builder
	VerdictTables(&b, []*Doc{d})
	out := b.String()
	for _, s := range []string{
		"**icount/6.12** (kernel 6.12.117+deb12-amd64, 7 rounds)",
		"| stat | inode_permission ×1.0 | 1.010 | 1.010 inconcl. | 1.030 inconcl. | 1.040 inconcl. | – | – |",
		"| tcp_rr | none | 1.010 inconcl. | 1.020 inconcl. | 1.040 inconcl. | 1.050 inconcl. | – | – |",
		"| open_depth28 | (not profiled) |",
		"In all (every part above): b/f <= 1.01: 0 met, 0 **not met**, 3 inconcl.;",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("verdicts lack %q:\n%s", s, out)
		}
	}
}

// TestWithVerdicts: the block between the markers is replaced and the rest
// kept; without the markers it is an error.
func TestWithVerdicts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "perf.md")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(p, []byte("before\n"+VerdictsBegin+"\nold\n"+VerdictsEnd+"\nafter\n"), 0o644))
	b, err := withVerdicts(p, []*Doc{icountDoc()})
	must(err)
	s := string(b)
	if !strings.HasPrefix(s, "before\n"+VerdictsBegin+"\n\n**icount/6.12**") || !strings.HasSuffix(s, VerdictsEnd+"\nafter\n") || strings.Contains(s, "old") {
		t.Errorf("replaced file:\n%s", s)
	}
	for _, bad := range []string{"no markers\n", VerdictsEnd + "\n" + VerdictsBegin + "\n", VerdictsBegin + "\n"} {
		must(os.WriteFile(p, []byte(bad), 0o644))
		if _, err := withVerdicts(p, []*Doc{icountDoc()}); err == nil || !strings.Contains(err.Error(), "want the lines") {
			t.Errorf("%q: err %v, want the markers named", bad, err)
		}
	}
}
