package bench

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/enforcerd/enforcerd/cgroup"
)

func TestParseScaleDefaults(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	of := scaleFlags(fs, []Op{OpSocket, OpCreateWrite, OpStat, OpOpenRead}, true)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c, err := of([]Op{OpStat, OpRename, OpSocket})
	if err != nil {
		t.Fatal(err)
	}
	if got := joinOps(c.ops); got != "socket_close,stat" {
		t.Errorf("default scale ops restricted to the run's = %q, want socket_close,stat", got)
	}
	if len(c.ks) != 4 || c.ks[0] != 1 || c.ks[3] != 20000 || c.churnAt != 10000 || len(c.churn) != 3 || c.rate != defaultScaleRate {
		t.Errorf("defaults = %+v", c)
	}
}

func TestParseScaleOpsGiven(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	of := scaleFlags(fs, NetOps, false)
	if err := fs.Parse([]string{"-scale-ops", "stat", "-scale", "1,5", "-churn", ""}); err != nil {
		t.Fatal(err)
	}
	if _, err := of([]Op{OpSocket}); err == nil || !strings.Contains(err.Error(), "-scale-ops") {
		t.Errorf("-scale-ops outside the run's ops: %v", err)
	}
	c, err := of([]Op{OpStat})
	if err != nil || joinOps(c.ops) != "stat" || c.churn != nil || len(c.ks) != 2 {
		t.Errorf("of = %+v, %v", c, err)
	}
}

func TestParseScaleErrors(t *testing.T) {
	have := []Op{OpStat, OpSocket}
	for _, tc := range []struct{ ks, churn string }{
		{"1000,10000", "0,10"},  // no base
		{"1", "0,10"},           // nothing beside the base
		{"1,1000,1000", "0,10"}, // repeat
		{"1,x", "0,10"},         // not a number
		{"1,70000", "0,10"},     // over the map
		{"0,1,10", "0,10"},      // under 1
		{"1,10000", "10,100"},   // churn without its base
		{"1,10000", "0"},        // churn with nothing beside the base
		{"1,20000", "0,10"},     // churn-at 10000 not measured
		{"1,10000", "0,-1"},     // negative rate
	} {
		if _, err := parseScale(tc.ks, tc.churn, 10000, "", 100, "stat", have); err == nil {
			t.Errorf("parseScale(%q, %q) accepted", tc.ks, tc.churn)
		}
	}
	for _, rate := range []float64{0, -1, 2e6} {
		if _, err := parseScale("1,10", "", 10, "", rate, "stat", have); err == nil {
			t.Errorf("rate %v accepted", rate)
		}
	}
	for _, ops := range []string{"", "stat,stat", "connect"} {
		if _, err := parseScale("1,10", "", 10, "", 100, ops, have); err == nil {
			t.Errorf("ops %q accepted", ops)
		}
	}
	c, err := parseScale("", "0,10", 10000, "", 100, "stat", have)
	if err != nil || c.ks != nil {
		t.Errorf("empty -scale: %+v, %v (want no figure)", c, err)
	}
	c, err = parseScale(" 20000, 1,1000 ", "100,0", 20000, "", 100, "stat", have)
	if err != nil || len(c.ks) != 3 || c.ks[0] != 1 || c.ks[2] != 20000 || c.churn[0] != 0 {
		t.Errorf("unsorted lists: %+v, %v", c, err)
	}
}

func TestScaleLayout(t *testing.T) {
	l := scaleLayout{"/bench/scale"}
	for i, want := range map[int]string{
		1: "/bench/scale/s-g000/c000", 100: "/bench/scale/s-g000/c099",
		101: "/bench/scale/s-g001/c000", 19999: "/bench/scale/s-g199/c098",
	} {
		if got := l.cell(i); got != want {
			t.Errorf("cell(%d) = %s, want %s", i, got, want)
		}
		if cgroup.Level(l.cell(i)) != 4 {
			t.Errorf("cell(%d) at level %d, want 4", i, cgroup.Level(l.cell(i)))
		}
	}
	if l.measured() != "/bench/scale/s-m/c0" || cgroup.Level(l.measured()) != 4 || cgroup.Level(l.churnCell(3)) != 4 {
		t.Errorf("measured %s, churn %s", l.measured(), l.churnCell(3))
	}
	// Native: below <tag>/att, also level 4, beside the phases' cgroups.
	if g := (scaleLayout{"/enforcerd-bench-7/att"}).cell(1); g != "/enforcerd-bench-7/att/s-g000/c000" {
		t.Errorf("native cell = %s", g)
	}
	ps := l.parents(201) // cells 1..200: groups 0 and 1
	if strings.Join(ps, " ") != "/bench/scale/s-m /bench/scale/s-p /bench/scale/s-churn /bench/scale/s-g000 /bench/scale/s-g001" {
		t.Errorf("parents(201) = %v", ps)
	}
	if len(l.parents(1)) != 3 {
		t.Errorf("parents(1) = %v", l.parents(1))
	}
}

// TestIdlerSlotLayout: idler_amd64.s addresses idlerSlot's fields by these
// offsets, and each slot is one cache line.
func TestIdlerSlotLayout(t *testing.T) {
	var s idlerSlot
	for name, got := range map[string]uintptr{
		"next": unsafe.Offsetof(s.next), "period": unsafe.Offsetof(s.period), "ts": unsafe.Offsetof(s.ts),
		"count": unsafe.Offsetof(s.count), "fails": unsafe.Offsetof(s.fails), "ppid": unsafe.Offsetof(s.ppid),
		"mask": unsafe.Offsetof(s.mask),
	} {
		want := map[string]uintptr{"next": 0, "period": 8, "ts": 16, "count": 32, "fails": 40, "ppid": 48, "mask": 56}[name]
		if got != want {
			t.Errorf("idlerSlot.%s at %d, idler_amd64.s says %d", name, got, want)
		}
	}
	if unsafe.Sizeof(s) != 64 {
		t.Errorf("idlerSlot is %d bytes, want 64", unsafe.Sizeof(s))
	}
	if unsafe.Sizeof(cloneArgs{}) != 88 {
		t.Errorf("cloneArgs is %d bytes, want 88 (CLONE_ARGS_SIZE_VER2)", unsafe.Sizeof(cloneArgs{}))
	}
}

func TestParsePhaseNumber(t *testing.T) {
	for phase, want := range map[string]int{"scale-k1": 1, "scale-k20000": 20000, "scale-k": -1, "scale-kx": -1, "scale-k01": -1, "c": -1, "churn-10ps": -1} {
		got, ok := parsePhaseNumber(phase, "scale-k", "")
		if (want < 0) == ok || (ok && got != want) {
			t.Errorf("parsePhaseNumber(%q) = %d, %v; want %d", phase, got, ok, want)
		}
	}
	if v, ok := parsePhaseNumber(churnPhase(100), "churn-", "ps"); !ok || v != 100 {
		t.Errorf("churn phase: %d, %v", v, ok)
	}
	if _, ok := parsePhaseNumber("churn-10", "churn-", "ps"); ok {
		t.Error("churn-10 parsed")
	}
}

// scaleDoc: icount doc with scale cells at K 1, 1000, 10000 (K=10000 2 %
// dearer) and churn cells 0 and 100 (100: 5 % dearer), 3 rounds.
func scaleDoc() *Doc {
	d := &Doc{Where: "vm", Kernel: "6.12.117+deb12-amd64", Icount: true, Reps: 3}
	for i := 0; i < 3; i++ {
		for _, op := range []Op{OpStat, OpSocket} {
			d.add(op, scalePhase(1), 10, 100, 100)
			d.add(op, scalePhase(1000), 10, 101, 101)
			d.add(op, scalePhase(10000), 10, 102, 102)
			d.add(op, churnPhase(0), 10, 102, 102)
			d.add(op, churnPhase(100), 10, 107.1, 107.1)
		}
	}
	return d
}

func TestScaleSummaryLines(t *testing.T) {
	var buf bytes.Buffer
	Summary(&buf, []*Doc{scaleDoc()})
	out := buf.String()
	for _, s := range []string{
		"bench: icount/6.12/stat/scale10k ratio=1.0200 lo=1.0200 hi=1.0200\n",
		"bench: icount/6.12/socket_close/scale10k ratio=1.0200",
		"bench: icount/6.12/scale/k1000/stat ratio=1.0100",
		"bench: icount/6.12/scale/k10000/socket_close ratio=1.0200",
		"bench: icount/6.12/churn/100ps/stat ratio=1.0500",
		"bench: icount/6.12/scale_10k_vs_1/stat ratio=1.020\n", // the older line stays
	} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}
	line := regexp.MustCompile(`(?m)^bench: icount/6\.12/(scale/k[0-9]+|churn/[0-9]+ps)/[a-z_]+ ratio=[0-9.]+ lo=[0-9.]+ hi=[0-9.]+$`)
	if n := len(line.FindAllString(out, -1)); n != 6 {
		t.Errorf("%d scale/churn lines, want 6 (k1000, k10000, churn 100 for 2 ops):\n%s", n, out)
	}
	if strings.Contains(out, "scale/k1/") || strings.Contains(out, "churn/0ps") {
		t.Errorf("a base against itself:\n%s", out)
	}
}

func TestScaleMarkdown(t *testing.T) {
	var buf bytes.Buffer
	Markdown(&buf, []*Doc{scaleDoc()}, "make bench", "test host", 1)
	out := buf.String()
	for _, s := range []string{
		"| operation | K=1, ns/op | K=1000 / 1 | K=10000 / 1 |",
		"| stat | 100 | 1.010 [1.010–1.010] | 1.020 [1.020–1.020] |",
		"| operation | R=0, ns/op | R=100 / 0 |",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("markdown lacks %q:\n%s", s, out)
		}
	}
}

func TestMeminfoField(t *testing.T) {
	in := "MemTotal:        1000 kB\nMemAvailable:     750 kB\n"
	if v := meminfoField(strings.NewReader(in), "MemAvailable"); v != 750 {
		t.Errorf("MemAvailable = %v", v)
	}
	if v := meminfoField(strings.NewReader(in), "Nope"); v != 0 {
		t.Errorf("missing field = %v", v)
	}
}

func TestPacers(t *testing.T) {
	for rate, want := range map[float64]int{2000: 20, 50: 1, 150: 2, 100: 1} {
		if got := pacerCount(rate); got != want {
			t.Errorf("pacerCount(%v) = %d, want %d", rate, got, want)
		}
	}
	l := scaleLayout{"/bench/scale"}
	if l.pacer(3) != "/bench/scale/s-p/p03" || cgroup.Level(l.pacer(3)) != 4 {
		t.Errorf("pacer(3) = %s", l.pacer(3))
	}
}

// unregDoc is a doc with the unregistered-cgroups figure: N=0 and N=200,
// from an unregistered and a registered cell, two rounds.
func unregDoc() *Doc {
	d := &Doc{Where: "vm", Kernel: "6.12.1", Icount: true, Reps: 2}
	for i := 0; i < 2; i++ {
		d.add(OpStat, unregPhase(0, fromUnreg), 10, 100, 100)
		d.add(OpStat, unregPhase(200, fromUnreg), 10, 101, 101)
		d.add(OpStat, unregPhase(0, fromReg), 10, 110, 110)
		d.add(OpStat, unregPhase(200, fromReg), 10, 115.5, 115.5)
	}
	return d
}

func TestScaleUnregLines(t *testing.T) {
	var buf bytes.Buffer
	Summary(&buf, []*Doc{unregDoc()})
	out := buf.String()
	for _, s := range []string{
		"bench: icount/6.12/scale-unreg/n200/stat/from-unreg ratio=1.0100 lo=1.0100 hi=1.0100\n",
		"bench: icount/6.12/scale-unreg/n200/stat/from-reg ratio=1.0500 lo=1.0500 hi=1.0500\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "scale-unreg/n0/") {
		t.Errorf("the base against itself:\n%s", out)
	}
	buf.Reset()
	Markdown(&buf, []*Doc{unregDoc()}, "make bench", "test host", 1)
	md := buf.String()
	for _, s := range []string{
		"per-operation cost of a process in an unregistered cgroup (as (b)) while N unregistered cgroups",
		"| operation | N=0, ns/op | N=200 / 0 |",
		"| stat | 100 | 1.010 [1.010–1.010] |",
		"| stat | 110 | 1.050 [1.050–1.050] |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

func TestParseScaleUnreg(t *testing.T) {
	have := []Op{OpStat, OpSocket}
	c, err := parseScale("", "", 10000, "200, 20000", 100, "stat", have)
	if err != nil || c.ks != nil || c.churn != nil || len(c.unreg) != 2 || c.unreg[0] != 200 || c.rate != 100 || joinOps(c.ops) != "stat" {
		t.Errorf("unreg alone: %+v, %v", c, err)
	}
	for _, u := range []string{"0", "70000", "x", "5,5"} {
		if _, err := parseScale("", "", 10000, u, 100, "stat", have); err == nil {
			t.Errorf("-scale-unreg %q accepted", u)
		}
	}
	if _, err := parseScale("", "", 10000, "200", 0, "stat", have); err == nil {
		t.Error("-scale-unreg with rate 0 accepted")
	}
	fs := flag.NewFlagSet("vm", flag.ContinueOnError)
	of := scaleFlags(fs, []Op{OpStat}, true)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c, err := of([]Op{OpStat}); err != nil || len(c.unreg) != 1 || c.unreg[0] != 20000 {
		t.Errorf("default -scale-unreg: %+v, %v", c, err)
	}
	if fs := flag.NewFlagSet("native", flag.ContinueOnError); true {
		scaleFlags(fs, NetOps, false)
		if fs.Lookup("scale-unreg") != nil {
			t.Error("the native part has -scale-unreg but does not measure it")
		}
	}
	if l := (scaleLayout{"/bench/scale-unreg"}); l.measuredAt(1) != "/bench/scale-unreg/s-m/c1" || cgroup.Level(l.measuredAt(1)) != 4 {
		t.Errorf("measuredAt(1) = %s", l.measuredAt(1))
	}
}
