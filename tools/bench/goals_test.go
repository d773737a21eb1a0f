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
	// No profile: the goals of both hook classes, those against (a) among
	// them ((f) <= 1.05, (c2) <= 1.10).
	want := map[string]string{
		"socket_close/f": VerdictMet, "socket_close/b": VerdictMet, "socket_close/c": VerdictNotMet, "socket_close/c2": VerdictMet, "socket_close/d": "none",
		"connect/f": VerdictMet, "connect/b": VerdictMet, "connect/c": VerdictNotMet, "connect/c2": VerdictMet, "connect/d": "none",
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
	for _, bad := range []string{"", ",", "stat,nope", "stat,stat", "macro_untar", "exec_storm", "stat_storm"} {
		if _, err := parseOps(bad); err == nil {
			t.Errorf("parseOps(%q) accepted", bad)
		}
	}
}

func TestParsePhases(t *testing.T) {
	want, err := parsePhases(" a, a0")
	if err != nil || len(want) != 2 || !want[PhaseA] || !want[PhaseA0] {
		t.Errorf("parsePhases = %v, %v", want, err)
	}
	if all, err := parsePhases(strings.Join(allPhases, ",")); err != nil || len(all) != len(allPhases) {
		t.Errorf("parsePhases(all) = %v, %v", all, err)
	}
	for _, bad := range []string{"", ",", "a,zz", "a,a", "scale-k1", "b", "a0,c"} {
		if _, err := parsePhases(bad); err == nil {
			t.Errorf("parsePhases(%q) accepted", bad)
		}
	}
}

// icountDoc is a guest doc in icount mode at Landlock ABI 6 with every
// summary phase measured for stat, open_depth28, tcp_rr and exec_storm,
// and (d), (e0) for connect.
func icountDoc() *Doc {
	d := &Doc{Where: "vm", Kernel: "6.12.117+deb12-amd64", Icount: true, Reps: 3, LandlockABI: 6}
	f := map[string]float64{PhaseA: 100, PhaseA0: 100, PhaseF: 101, PhaseB: 102, PhaseC: 104, PhaseC2: 105, PhaseE1: 110, PhaseE2: 108, PhaseE0: 90, PhaseD: 60}
	for i := 0; i < 3; i++ {
		for _, op := range []Op{OpStat, OpOpenDepth28, OpTCPRR, OpExecStorm} {
			for _, ph := range []string{PhaseA, PhaseA0, PhaseF, PhaseB, PhaseC, PhaseC2, PhaseE1, PhaseE2} {
				d.add(op, ph, 10, f[ph], f[ph])
			}
		}
		d.add(OpConnect, PhaseA, 10, 100, 100)
		d.add(OpConnect, PhaseD, 10, 60, 60)
		d.add(OpConnect, PhaseE0, 10, 90, 90)
	}
	return d
}

func TestSummaryIcountEveryPhase(t *testing.T) {
	var buf bytes.Buffer
	Summary(&buf, []*Doc{icountDoc()})
	out := buf.String()
	for _, op := range []string{"stat", "open_depth28", "tcp_rr", "exec_storm"} {
		for ph, r := range map[string]string{"a0": "1.000", "f": "1.010", "b": "1.020", "c": "1.040", "c2": "1.050", "e1": "1.100", "e2": "1.080"} {
			if l := "bench: icount/6.12/" + op + "/" + ph + " ratio=" + r + "\n"; !strings.Contains(out, l) {
				t.Errorf("missing %q:\n%s", l, out)
			}
		}
		// Only where Landlock mediates the op (not stat, not tcp_rr's I/O).
		for _, l := range []string{"bench: icount/6.12/c_vs_e1/" + op + " ratio=0.945\n", "bench: icount/6.12/c2_vs_e2/" + op + " ratio=0.972\n"} {
			if want := LandlockExpresses(Op(op), 6); strings.Contains(out, l) != want {
				t.Errorf("line %q printed: %v, want %v:\n%s", l, !want, want, out)
			}
		}
	}
	for _, l := range []string{"bench: icount/6.12/connect/d ratio=0.600\n", "bench: icount/6.12/connect/e0 ratio=0.900\n", "bench: icount/6.12/d_vs_e0/connect ratio=0.667\n"} {
		if !strings.Contains(out, l) {
			t.Errorf("missing %q:\n%s", l, out)
		}
	}
	if strings.Contains(out, "/e ratio") || strings.Contains(out, "native/") {
		t.Errorf("stray lines:\n%s", out)
	}
}

// TestGoalsLandlockWhereExpressed: c <= e1 is a goal only where Landlock
// at the doc's ABI expresses the op (open_depth28, exec_storm), not for
// stat or tcp_rr.
func TestGoalsLandlockWhereExpressed(t *testing.T) {
	got, twin := map[string]bool{}, map[string]bool{}
	for _, v := range Goals([]*Doc{icountDoc()}) {
		switch v.Goal {
		case "c <= e1 (Landlock)":
			got[v.Op] = true
		case "c2 <= e2 (Landlock twin)":
			twin[v.Op] = true
		}
	}
	if len(twin) != 2 || !twin["open_depth28"] || !twin["exec_storm"] {
		t.Errorf("c2 <= e2 goals for %v, want open_depth28 and exec_storm", twin)
	}
	want := map[string]bool{"open_depth28": true, "exec_storm": true}
	if len(got) != len(want) || !got["open_depth28"] || !got["exec_storm"] {
		t.Errorf("c <= e1 goals for %v, want %v", got, want)
	}
}

func TestMarkdownLandlockColumns(t *testing.T) {
	var buf bytes.Buffer
	Markdown(&buf, []*Doc{icountDoc()}, "make bench", "test host", 1)
	out := buf.String()
	for _, s := range []string{
		"| (e1)/(a) | (e2)/(a) | (e0)/(a) | (c)/(e1) | (c2)/(e2) | (d)/(e0) | (a0)/(a) |",
		"| connect | 10 | 100 | n/a | n/a | n/a | n/a | 0.600 [",
		"| open_depth28 | 10 | 100 | 1.010 [1.010–1.010] | 1.020 [1.020–1.020] | 1.040 [1.040–1.040] | 1.050 [1.050–1.050] | n/a | 1.100 [1.100–1.100] | 1.080 [1.080–1.080] | n/a | 0.945 [0.945–0.945] | 0.972 [0.972–0.972] | n/a |",
		"(e2) (c2)'s Landlock twin",
		"cgroup at level 4 (/bench/p/q/<phase>)",
		"`open_depth28`",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("markdown lacks %q:\n%s", s, out)
		}
	}
}

// TestPathWalk: the path walks are the ops a lookup dominates, and the
// report's goal section names them.
func TestPathWalk(t *testing.T) {
	for _, op := range []Op{OpOpenRead, OpCreateWrite, OpStat, OpRename, OpOpenDepth28, OpStatStorm, OpChmodXattr} {
		if !PathWalk(op) {
			t.Errorf("%s is no path walk", op)
		}
	}
	for _, op := range []Op{OpGetdents, OpProcStatus, OpExec, OpExecDynamic, OpMacro, OpPread, OpIOUringRW} {
		if PathWalk(op) {
			t.Errorf("%s is a path walk", op)
		}
	}
	var buf bytes.Buffer
	Markdown(&buf, []*Doc{icountDoc()}, "make bench", "test host", 1)
	if !strings.Contains(buf.String(), "`open_depth28`, `chmod_setxattr`, `stat_storm`.\n") {
		t.Errorf("markdown lacks the path walks:\n%s", buf.String())
	}
}

// profiled gives d a (b) profile in which one program runs once per op on
// stay, 0.2 times per op on each of rare (under MinHookRuns; and 3 times
// in (c2), which does not count), and no row of the other ops.
func profiled(d *Doc, stay Op, rare ...Op) *Doc {
	d.Profile = append(d.Profile, ProfileRow{Phase: phaseProfB, Op: stay, Program: "lsm_inode_permission", RunsPerOp: 1, NsPerRun: 90})
	for _, op := range rare {
		d.Profile = append(d.Profile,
			ProfileRow{Phase: phaseProfB, Op: op, Program: "lsm_bpf", RunsPerOp: 0.2, NsPerRun: 170},
			ProfileRow{Phase: "c2", Op: op, Program: "lsm_file_open", RunsPerOp: 3, NsPerRun: 170})
	}
	return d
}

// TestOpGoalsByHookClass: an op a program runs on in (b) is judged against
// (f); one with profile rows and no such program against (a), the floor
// included (1.03 on a path walk and macro_untar, 1.05 elsewhere); one
// without profile rows by both sets.
func TestOpGoalsByHookClass(t *testing.T) {
	names := func(gs []Goal) string {
		var out []string
		for _, g := range gs {
			out = append(out, g.String())
		}
		return strings.Join(out, ", ")
	}
	d := profiled(icountDoc(), OpStat, OpTCPRR, OpOpenDepth28, OpMacro)
	for _, c := range []struct {
		op          Op
		class, want string
	}{
		{OpStat, HooksStay, "b/f <= 1.01, c/f <= 1.03, c2/f <= 1.08"},
		{OpTCPRR, HooksNone, "f/a <= 1.05, b/a <= 1.02, c/a <= 1.05, c2/a <= 1.10"},
		{OpOpenDepth28, HooksNone, "f/a <= 1.03, b/a <= 1.02, c/a <= 1.05, c2/a <= 1.10"},
		{OpMacro, HooksNone, "f/a <= 1.03, b/a <= 1.02, c/a <= 1.05, c2/a <= 1.10"},
		{OpExecStorm, HooksUnknown, "b/f <= 1.01, c/f <= 1.03, c2/f <= 1.08, f/a <= 1.05, b/a <= 1.02, c/a <= 1.05, c2/a <= 1.10"},
	} {
		if got := d.HookClass(c.op); got != c.class {
			t.Errorf("%s: class %q, want %q", c.op, got, c.class)
		}
		if got := names(d.OpGoals(c.op)); got != c.want {
			t.Errorf("%s: goals %q, want %q", c.op, got, c.want)
		}
	}
	rows, _ := d.HookRuns(OpStat)
	if len(rows) != 1 || rows[0].Program != "lsm_inode_permission" {
		t.Errorf("HookRuns(stat) = %+v", rows)
	}
}

// TestGoalsVerdictsAndLines: the verdicts of Goals are over the interval,
// against the right base, and Summary prints one line per goal.
func TestGoalsVerdictsAndLines(t *testing.T) {
	d := &Doc{Where: "vm", Kernel: "6.12.117+deb12-amd64", Icount: true, Reps: 7, LandlockABI: 6}
	for i := 0; i < 7; i++ {
		for _, op := range []Op{OpStat, OpTCPRR} {
			d.add(op, PhaseA, 10, 100, 100)
			d.add(op, PhaseF, 10, 120, 120)  // floor 1.20
			d.add(op, PhaseB, 10, 121, 121)  // 1.0083 over (f)
			d.add(op, PhaseC, 10, 125, 125)  // 1.0417 over (f)
			d.add(op, PhaseC2, 10, 126, 126) // 1.05 over (f)
		}
		d.add(OpSocket, scalePhase(1), 10, 100, 100)
		d.add(OpSocket, scalePhase(10000), 10, 101, 101)
		d.add(OpSocket, scalePhase(20000), 10, 103, 103)
		d.add(OpSocket, unregPhase(0, fromReg), 10, 100, 100)
		d.add(OpSocket, unregPhase(20000, fromReg), 10, 100.5, 100.5)
	}
	profiled(d, OpStat, OpTCPRR)
	got := map[string]string{}
	for _, v := range Goals([]*Doc{d}) {
		got[v.Op+" "+v.ID] = v.Verdict
	}
	want := map[string]string{
		"stat b/f<=1.01": VerdictMet, "stat c/f<=1.03": VerdictNotMet, "stat c2/f<=1.08": VerdictMet,
		"tcp_rr f/a<=1.05": VerdictNotMet, "tcp_rr b/a<=1.02": VerdictNotMet, "tcp_rr c/a<=1.05": VerdictNotMet, "tcp_rr c2/a<=1.10": VerdictNotMet,
		"socket_close scale/k10000<=1.02": VerdictMet, "socket_close scale/k20000<=1.02": VerdictNotMet,
		"socket_close scale-unreg/n20000/from-reg<=1.02": VerdictMet,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d verdicts, want %d: %v", len(got), len(want), got)
	}
	var buf bytes.Buffer
	Summary(&buf, []*Doc{d})
	for _, l := range []string{
		"bench: icount/6.12/goal/stat/b/f<=1.01 ratio=1.0083 lo=1.0083 hi=1.0083 verdict=met\n",
		"bench: icount/6.12/goal/socket_close/scale/k20000<=1.02 ratio=1.0300 lo=1.0300 hi=1.0300 verdict=not-met\n",
	} {
		if !strings.Contains(buf.String(), l) {
			t.Errorf("summary lacks %q:\n%s", l, buf.String())
		}
	}
}

// TestGoalsUntrustedWhereNullCheckFails: an operation whose (a0)/(a) lies
// outside [0.995, 1.005] in a part has every goal of that part untrusted,
// its scale goals aside; the others keep their verdicts.
func TestGoalsUntrustedWhereNullCheckFails(t *testing.T) {
	d := &Doc{Where: "vm", Kernel: "6.12.117+deb12-amd64", Icount: true, Reps: 7, LandlockABI: 6}
	for i := 0; i < 7; i++ {
		for op, a0 := range map[Op]float64{OpMmapExec: 88, OpOpenRead: 100.2} {
			d.add(op, PhaseA, 10, 100, 100)
			d.add(op, PhaseA0, 10, a0, a0)
			d.add(op, PhaseF, 10, 110, 110)
			d.add(op, PhaseB, 10, 110.5, 110.5)
			d.add(op, PhaseC, 10, 111, 111)
			d.add(op, PhaseE1, 10, 112, 112)
		}
	}
	got := map[string]string{}
	for _, v := range Goals([]*Doc{d}) {
		got[v.Op+" "+v.ID] = v.Verdict
	}
	for k, want := range map[string]string{
		"mmap_exec b/f<=1.01": VerdictUntrusted, "mmap_exec c/f<=1.03": VerdictUntrusted,
		"open_read b/f<=1.01": VerdictMet, "open_read c/e1<=1": VerdictMet,
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
	var b strings.Builder
	VerdictTables(&b, []*Doc{d})
	if !strings.Contains(b.String(), "untrusted (null check)") || !strings.Contains(b.String(), ", 1 untrusted;") {
		t.Errorf("tables do not show the untrusted verdicts:\n%s", b.String())
	}
}
