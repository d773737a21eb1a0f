package bench

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// hostDoc is a native doc of n paired rounds: (b) 1 % over (a) in every
// round, (c) 10 % over, (c2) 3-7 % over, (d) half of (a).
func hostDoc(n int) *Doc {
	d := &Doc{Where: "host", Kernel: "6.18.1", Reps: n, OrderSeed: 42}
	for i := 0; i < n; i++ {
		a := 1000 * (1 + 0.3*float64(i%3)) // drift between rounds
		for _, op := range NetOps {
			d.add(op, PhaseA, 100, a, a)
			d.add(op, PhaseF, 100, a*1.005, a)
			d.add(op, PhaseB, 100, a*1.01, a)
			d.add(op, PhaseC, 100, a*1.10, a)
			d.add(op, PhaseC2, 100, a*(1.03+0.01*float64(i%5)), a)
			d.add(op, PhaseD, 100, a*0.5, a)
		}
	}
	return d
}

func TestSummaryNativeLines(t *testing.T) {
	var buf bytes.Buffer
	Summary(&buf, []*Doc{hostDoc(31)})
	out := buf.String()
	line := regexp.MustCompile(`(?m)^bench: native/([a-z_]+)/([a-z0-9]+) ratio=([0-9.]+) lo=([0-9.]+) hi=([0-9.]+) verdict=(met|not-met|inconclusive|none)$`)
	got := map[string]string{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		got[m[1]+"/"+m[2]] = m[6]
	}
	want := map[string]string{
		"socket_close/f": "none", "socket_close/b": VerdictMet, "socket_close/c": VerdictNotMet, "socket_close/c2": VerdictInconclusive, "socket_close/d": "none",
		"connect/f": "none", "connect/b": VerdictMet, "connect/c": VerdictNotMet, "connect/c2": VerdictInconclusive, "connect/d": "none",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("native/%s verdict %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d native lines, want %d:\n%s", len(got), len(want), out)
	}
	// The lines the docs already quote stay.
	if !strings.Contains(out, "bench: host/socket_close/b ratio=1.010\n") {
		t.Errorf("host ratio line missing:\n%s", out)
	}
}

func TestSummaryIcountLabel(t *testing.T) {
	d := &Doc{Where: "vm", Kernel: "6.12.117+deb12-amd64", Icount: true, Reps: 3}
	for i := 0; i < 3; i++ {
		d.add(OpStat, PhaseA, 10, 100, 100)
		d.add(OpStat, PhaseB, 10, 102, 102)
	}
	var buf bytes.Buffer
	Summary(&buf, []*Doc{d})
	if !strings.Contains(buf.String(), "bench: icount/6.12/stat/b ratio=1.020\n") {
		t.Errorf("icount line missing:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "native/") {
		t.Errorf("native lines for a guest doc:\n%s", buf.String())
	}
}

func TestMarkdownSaysHowMeasured(t *testing.T) {
	var buf bytes.Buffer
	Markdown(&buf, []*Doc{hostDoc(31)}, "make bench", "test host", 1)
	out := buf.String()
	for _, s := range []string{
		"native, phase order shuffled per round (seed 42); median of 31 paired rounds (per-round ratios), bootstrap 95% interval",
		"| host | socket_close | c/a <= 1.05 | 1.100 | 1.100–1.100 | 31 | **not met** |",
		"| host | connect | b/a <= 1.02 | 1.010 | 1.010–1.010 | 31 | met |",
		"1.010 [1.010–1.010]",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("markdown lacks %q:\n%s", s, out)
		}
	}
}

func TestParseOps(t *testing.T) {
	ops, err := parseOps("stat, socket_close")
	if err != nil || len(ops) != 2 || ops[0] != OpStat || ops[1] != OpSocket {
		t.Errorf("parseOps = %v, %v", ops, err)
	}
	for _, bad := range []string{"", ",", "stat,nope", "stat,stat", "macro_untar"} {
		if _, err := parseOps(bad); err == nil {
			t.Errorf("parseOps(%q) accepted", bad)
		}
	}
}
