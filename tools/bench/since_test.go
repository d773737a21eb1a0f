package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sinceDoc is a guest part of five rounds measuring stat and tcp_rr in
// (a), (f), (b), (c) and (c2), with (b) at b instructions against (a)'s
// 100 and (f)'s 101, and connect in (a) alone.
func sinceDoc(b float64) *Doc {
	d := &Doc{Where: "vm", Kernel: "6.12.117+deb12-amd64", Icount: true, Reps: 5, LandlockABI: 6}
	f := map[string]float64{PhaseA: 100, PhaseF: 101, PhaseB: b, PhaseC: 104, PhaseC2: 105}
	for i := 0; i < 5; i++ {
		for _, op := range []Op{OpStat, OpTCPRR} {
			for _, ph := range []string{PhaseA, PhaseF, PhaseB, PhaseC, PhaseC2} {
				d.add(op, ph, 10, f[ph], f[ph])
			}
		}
		d.add(OpConnect, PhaseA, 10, 100, 100)
	}
	return profiled(d, OpStat)
}

// TestSinceTables: a part both runs have gets one row per operation, each
// ratio as "old → new"; the verdict counts of both runs follow; a part
// only one run has is left out, and with no part in common the block says
// so.
func TestSinceTables(t *testing.T) {
	old := sinceDoc(103)
	cur := sinceDoc(101.5)
	other := sinceDoc(101.5)
	other.Kernel = "6.1.0-57-amd64"
	var b strings.Builder
	SinceTables(&b, []*Doc{old}, []*Doc{cur, other}, "2026-12-06 (f030479)")
	out := b.String()
	for _, s := range []string{
		"**icount/6.12**, the run of 2026-12-06 (f030479) (kernel 6.12.117+deb12-amd64, 5 rounds) → this run (kernel 6.12.117+deb12-amd64, 5 rounds):",
		"| operation | (f)/(a) | (b)/(f) | (c)/(f) | (c2)/(f) |",
		"| stat | 1.010 → 1.010 | 1.020 → 1.005 | 1.030 → 1.030 | 1.040 → 1.040 |",
		"| goal | the run of 2026-12-06 (f030479) | this run |",
		"| b/f <= 1.01 | 0 / **2** / 0 / 0 | 2 / **0** / 0 / 0 |",
		"| b/a <= 1.02 | 0 / **1** / 0 / 0 | 1 / **0** / 0 / 0 |",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("since tables lack %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "icount/6.1**") || strings.Contains(out, "| connect |") {
		t.Errorf("a part or operation only one run has is in the tables:\n%s", out)
	}
	b.Reset()
	SinceTables(&b, []*Doc{old}, []*Doc{other}, "x")
	if got := b.String(); got != "No part of this run was also measured in the run of x.\n" {
		t.Errorf("no common part: %q", got)
	}
}

// TestReportSince: -since writes its block into the -verdicts file beside
// the verdicts; without -verdicts or -since-label, or with the since
// markers missing, it is an error and no file is written.
func TestReportSince(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	raw := func(name string, d *Doc) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		must(err)
		must(Emit(f, d))
		must(f.Close())
		return p
	}
	oldRaw, curRaw := raw("old.txt", sinceDoc(103)), raw("cur.txt", sinceDoc(101.5))
	perf := filepath.Join(dir, "perf.md")
	md := filepath.Join(dir, "bench.md")
	page := "a\n" + VerdictsBegin + "\n" + VerdictsEnd + "\nb\n" + SinceBegin + "\nold\n" + SinceEnd + "\nc\n"
	must(os.WriteFile(perf, []byte(page), 0o644))

	for _, args := range [][]string{
		{"-md", md, "-since", oldRaw, "-since-label", "x", curRaw},
		{"-md", md, "-verdicts", perf, "-since", oldRaw, curRaw},
	} {
		if err := Report(args); err == nil || !strings.Contains(err.Error(), "-since needs") {
			t.Errorf("%v: err %v, want the missing flag named", args, err)
		}
	}
	noMarkers := filepath.Join(dir, "plain.md")
	must(os.WriteFile(noMarkers, []byte(VerdictsBegin+"\n"+VerdictsEnd+"\n"), 0o644))
	if err := Report([]string{"-md", md, "-verdicts", noMarkers, "-since", oldRaw, "-since-label", "x", curRaw}); err == nil || !strings.Contains(err.Error(), "want the lines") {
		t.Errorf("since markers missing: err %v", err)
	}
	if _, err := os.Stat(md); !os.IsNotExist(err) {
		t.Errorf("a failed report wrote %s (%v)", md, err)
	}

	must(Report([]string{"-md", md, "-verdicts", perf, "-since", oldRaw, "-since-label", "2026-12-06", curRaw}))
	b, err := os.ReadFile(perf)
	must(err)
	s := string(b)
	if !strings.Contains(s, "b\n"+SinceBegin+"\n\n**icount/6.12**, the run of 2026-12-06") || strings.Contains(s, "\nold\n") ||
		!strings.HasSuffix(s, SinceEnd+"\nc\n") || !strings.Contains(s, VerdictsBegin+"\n\n**icount/6.12** (kernel") {
		t.Errorf("performance page after -since:\n%s", s)
	}
}
