package bench

import (
	"fmt"
	"io"
	"sort"
)

// The performance goals: ratios within one run, each judged over its
// bootstrap 95% interval (VerdictOf). Every hook enforcerd attaches closes
// a kind of the threat model (docs/threat-model.md, "What each hook
// closes and what it costs"), so what attaching at a hook costs at all, the
// floor (f), is paid for a kind, and an operation that reaches such a hook
// is judged by what enforcerd's program bodies add over the floor; an
// operation that reaches none is judged against no programs at all (a),
// its floor included.
const (
	// An operation that reaches a hook that stays: against (f).
	GoalBodyNotEnforced = 1.01 // (b)/(f)
	GoalBodyEnforced    = 1.03 // (c)/(f)
	GoalBodyTypical     = 1.08 // (c2)/(f)

	// An operation that reaches no hook that stays: against (a).
	GoalFloorPathWalk = 1.03 // (f)/(a) on path walks (PathWalk) and macro_untar
	GoalFloorOther    = 1.05 // (f)/(a) on every other operation
	GoalNotEnforced   = 1.02 // (b)/(a)
	GoalEnforced      = 1.05 // (c)/(a)
	GoalTypical       = 1.10 // (c2)/(a)

	// Scale: K = 10,000 and 20,000 registered cgroups against K = 1, and
	// N = 20,000 unregistered busy cgroups against none, each measured
	// from an unregistered and from a registered cgroup.
	GoalScale = 1.02
)

// MinHookRuns is how often per operation one of enforcerd's programs must
// run in phase (b) of a part's profile for the operation to count as
// reaching its hook (below it: a program woken now and then by something
// else on the guest, such as the benchmark's own BPF calls).
const MinHookRuns = 0.5

// PathWalk reports whether op's cost is dominated by a path lookup: the
// kernel's walk of the path's components (8 or more beneath the phase
// directory, where enforcerd's inode_permission program runs once per
// component), with little else in the operation. These ops measure what
// enforcement adds to a lookup; the others what it adds to the work
// named. Path walks: open_read, create_unlink, stat, rename, the
// open_depth ops, stat_storm, and chmod_setxattr (two lookups of the same
// path, fchmodat's and setxattr's, each followed only by an inode update
// in memory). Not path walks, though each opens a path: getdents_1k
// (reading 1,000 directory entries costs many times the one lookup of the
// open: about 230 µs against about 2.5 µs for an open+close on this
// project's development host), proc_status (the read formats the task's
// state, about 1.4 KiB of text: about 11 µs against that 2.5 µs), exec,
// exec_dynamic, exec_storm and macro_untar (process creation and program
// loading; unpacking and reading files). The floor's goal of the path
// walks also holds macro_untar, a lookup per file it unpacks and reads
// (floorGoal).
func PathWalk(op Op) bool {
	switch op {
	case OpOpenRead, OpCreateWrite, OpStat, OpRename, OpOpenDepth1, OpOpenDepth10, OpOpenDepth28, OpStatStorm, OpChmodXattr:
		return true
	}
	return false
}

// floorGoal is the limit of (f)/(a) for an op that reaches no hook that
// stays: GoalFloorPathWalk for the path walks and macro_untar,
// GoalFloorOther for the rest.
func floorGoal(op Op) float64 {
	if PathWalk(op) || op == OpMacro {
		return GoalFloorPathWalk
	}
	return GoalFloorOther
}

// Hook classes of an operation in one part (Doc.HookClass).
const (
	// HooksStay: the part's profile shows one of enforcerd's programs
	// running at least MinHookRuns times per operation in (b).
	HooksStay = "stay"
	// HooksNone: the part's profile has rows of the operation in (b), and
	// no program of enforcerd's runs that often on it.
	HooksNone = "none"
	// HooksUnknown: the part's profile has no row of the operation in (b)
	// (the profile does not run the macro workloads, and a run may leave
	// it out); every goal of both classes is checked.
	HooksUnknown = "unknown"
)

// HookRuns returns the programs of d's profile that run at least
// MinHookRuns times per op in phase (b), the dearest per operation first;
// profiled is false when d's profile has no row of op in (b).
func (d *Doc) HookRuns(op Op) (rows []ProfileRow, profiled bool) {
	for _, r := range d.Profile {
		if r.Phase != phaseProfB || r.Op != op {
			continue
		}
		profiled = true
		if r.RunsPerOp >= MinHookRuns {
			rows = append(rows, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		return rows[i].RunsPerOp*rows[i].NsPerRun > rows[j].RunsPerOp*rows[j].NsPerRun
	})
	return rows, profiled
}

// HookClass is op's class in d: HooksStay, HooksNone or HooksUnknown
// (HookRuns).
func (d *Doc) HookClass(op Op) string {
	rows, profiled := d.HookRuns(op)
	switch {
	case !profiled:
		return HooksUnknown
	case len(rows) > 0:
		return HooksStay
	}
	return HooksNone
}

// Goal is one ratio goal: Phase over Base at most Limit.
type Goal struct {
	Phase, Base string
	Limit       float64
}

// String is the goal as the report prints it: "b/f <= 1.01".
func (g Goal) String() string { return fmt.Sprintf("%s/%s <= %.2f", g.Phase, g.Base, g.Limit) }

// OpGoals are the goals op is judged by in d against (f) and (a), by its
// hook class (HookClass): with hooks that stay (b)/(f) <= 1.01, (c)/(f)
// <= 1.03, (c2)/(f) <= 1.08; with none (f)/(a) <= floorGoal(op), (b)/(a)
// <= 1.02, (c)/(a) <= 1.05, (c2)/(a) <= 1.10; unknown, both sets.
func (d *Doc) OpGoals(op Op) []Goal {
	body := []Goal{{PhaseB, PhaseF, GoalBodyNotEnforced}, {PhaseC, PhaseF, GoalBodyEnforced}, {PhaseC2, PhaseF, GoalBodyTypical}}
	bare := []Goal{{PhaseF, PhaseA, floorGoal(op)}, {PhaseB, PhaseA, GoalNotEnforced}, {PhaseC, PhaseA, GoalEnforced}, {PhaseC2, PhaseA, GoalTypical}}
	switch d.HookClass(op) {
	case HooksStay:
		return body
	case HooksNone:
		return bare
	}
	return append(body, bare...)
}

// Verdict is one goal check.
type Verdict struct {
	Doc, Op, Goal string
	// ID names the goal in a summary line: "b/f<=1.01", "c/e1<=1",
	// "scale/k10000<=1.02", "scale-unreg/n20000/from-reg<=1.02".
	ID string
	Estimate
	Limit float64
	// Verdict is VerdictMet, VerdictNotMet or VerdictInconclusive
	// (VerdictOf over the 95% interval).
	Verdict string
}

// The Landlock goals' names: (c) no slower than (e1), the allow-everything
// Landlock sandbox, and (c2) no slower than (e2), its Landlock twin.
const (
	GoalNameE1 = "c <= e1 (Landlock)"
	GoalNameE2 = "c2 <= e2 (Landlock twin)"
)

// The null check's band: (a0), (a) measured again in its own worker, over
// (a) must lie within it for the method to be trusted on an operation.
const (
	NullLo = 0.995
	NullHi = 1.005
)

// VerdictUntrusted is the verdict of every goal of an operation whose
// null check failed in the part ((a0)/(a) outside [NullLo, NullHi]): the
// two measurements of the same thing disagree by more than a goal's
// margin, so no ratio of that operation in that part decides a goal.
const VerdictUntrusted = "untrusted"

// nullFailed reports whether d measured (a0) for op and (a0)/(a) lies
// outside [NullLo, NullHi].
func nullFailed(d *Doc, op Op) bool {
	r, ok := d.Ratio(op, PhaseA0, PhaseA)
	return ok && (r < NullLo || r > NullHi)
}

// Goals checks every figure of docs against the performance goals: the
// op's goals against (f) or (a) (Doc.OpGoals), (c) <= (e1) and (c2) <=
// (e2) where Landlock at the doc's ABI expresses the op
// (LandlockExpresses), and the scale goals (scaleGoals); each verdict is
// over the ratio's bootstrap 95% interval, or VerdictUntrusted for every
// goal against (a), (f) or Landlock of an operation whose null check
// failed in the part.
func Goals(docs []*Doc) []Verdict {
	var out []Verdict
	for _, d := range docs {
		for _, op := range allOps() {
			first := len(out)
			for _, g := range d.OpGoals(op) {
				if e, ok := d.Estimate(op, g.Phase, g.Base); ok {
					out = append(out, Verdict{d.Label(), string(op), g.String(), fmt.Sprintf("%s/%s<=%.2f", g.Phase, g.Base, g.Limit), e, g.Limit, VerdictOf(e, g.Limit)})
				}
			}
			if LandlockExpresses(op, d.LandlockABI) {
				if e, ok := d.Estimate(op, PhaseC, PhaseE1); ok {
					out = append(out, Verdict{d.Label(), string(op), GoalNameE1, "c/e1<=1", e, 1, VerdictOf(e, 1)})
				}
				if e, ok := d.Estimate(op, PhaseC2, PhaseE2); ok {
					out = append(out, Verdict{d.Label(), string(op), GoalNameE2, "c2/e2<=1", e, 1, VerdictOf(e, 1)})
				}
			}
			untrust(out[first:], nullFailed(d, op))
		}
		out = append(out, scaleGoals(d)...)
	}
	return out
}

// untrust marks every verdict of vs VerdictUntrusted when failed.
func untrust(vs []Verdict, failed bool) {
	if !failed {
		return
	}
	for i := range vs {
		vs[i].Verdict = VerdictUntrusted
	}
}

// scaleGoals checks d's scale figures against GoalScale: every K above
// 1,000 registered cgroups against K = 1 ("scale k10000 <= 1.02"), and
// every N of unregistered busy cgroups against none, from an unregistered
// and from a registered cgroup ("scale-unreg n20000 from-reg <= 1.02").
func scaleGoals(d *Doc) []Verdict {
	var out []Verdict
	ks, _ := scaleNumbers(d)
	ns := unregNumbers(d)
	ops := append(append([]Op{}, MicroOps...), OpMacro)
	for _, op := range ops {
		for _, k := range ks {
			if k < 10000 {
				continue
			}
			if e, ok := d.Estimate(op, scalePhase(k), scalePhase(1)); ok {
				out = append(out, Verdict{d.Label(), string(op), fmt.Sprintf("scale k%d <= %.2f", k, GoalScale), fmt.Sprintf("scale/k%d<=%.2f", k, GoalScale), e, GoalScale, VerdictOf(e, GoalScale)})
			}
		}
		for _, n := range ns {
			if n == 0 {
				continue
			}
			for _, from := range []string{fromUnreg, fromReg} {
				if e, ok := d.Estimate(op, unregPhase(n, from), unregPhase(0, from)); ok {
					out = append(out, Verdict{d.Label(), string(op), fmt.Sprintf("scale-unreg n%d %s <= %.2f", n, from, GoalScale), fmt.Sprintf("scale-unreg/n%d/%s<=%.2f", n, from, GoalScale), e, GoalScale, VerdictOf(e, GoalScale)})
				}
			}
		}
	}
	return out
}

// SummaryPhases are the phases of the per-op summary lines, each against
// (a) of the same run.
var SummaryPhases = []string{PhaseA0, PhaseF, PhaseB, PhaseC, PhaseC2, PhaseD, PhaseE1, PhaseE2, PhaseE0}

// Summary writes one line per figure: "bench: <name> ratio=<r>" or
// "bench: <name> value=<v> <unit>", <name> starting with the doc's Label
// (host, vm6.12, icount/6.12): for every op and phase of SummaryPhases
// measured, "bench: <label>/<op>/<phase> ratio=R" (R the ratio against (a)
// of the same run, Doc.Ratio); for the two Landlock comparisons, where both
// ran and Landlock mediates the op (LandlockExpresses), "bench:
// <label>/c_vs_e1/<op> ratio=R" ((c)/(e1)), "bench:
// <label>/c2_vs_e2/<op> ratio=R" ((c2)/(e2)) and
// "bench: <label>/d_vs_e0/<op> ratio=R" ((d)/(e0)); for the native part,
// one more line per op and phase: "bench: native/<op>/<phase> ratio=R lo=L
// hi=H verdict=V", [L, H] the bootstrap 95% interval and V one of met,
// not-met, inconclusive (none where the op has no goal of that phase
// against (a): Doc.OpGoals); and, last, one line per goal checked
// (Goals): "bench: <label>/goal/<op>/<id> ratio=R lo=L hi=H verdict=V",
// <id> the goal's Verdict.ID ("b/f<=1.01").
func Summary(w io.Writer, docs []*Doc) {
	defer goalSummary(w, docs)
	for _, d := range docs {
		l := d.Label()
		ops := allOps()
		for _, op := range ops {
			for _, ph := range SummaryPhases {
				if r, ok := d.Ratio(op, ph, PhaseA); ok {
					fmt.Fprintf(w, "bench: %s/%s/%s ratio=%.3f\n", l, op, ph, r)
				}
			}
		}
		for _, cmp := range [][2]string{{PhaseC, PhaseE1}, {PhaseC2, PhaseE2}, {PhaseD, PhaseE0}} {
			for _, op := range ops {
				if !LandlockExpresses(op, d.LandlockABI) {
					continue // (e1) would be (a) again: no comparison
				}
				if r, ok := d.Ratio(op, cmp[0], cmp[1]); ok {
					fmt.Fprintf(w, "bench: %s/%s_vs_%s/%s ratio=%.3f\n", l, cmp[0], cmp[1], op, r)
				}
			}
		}
		if d.Where == "host" {
			for _, op := range ops {
				for _, ph := range []string{PhaseF, PhaseB, PhaseC, PhaseC2, PhaseD} {
					e, ok := d.Estimate(op, ph, PhaseA)
					if !ok {
						continue
					}
					v := "none"
					for _, g := range d.OpGoals(op) {
						if g.Phase == ph && g.Base == PhaseA {
							v = VerdictOf(e, g.Limit)
						}
					}
					fmt.Fprintf(w, "bench: native/%s/%s ratio=%.4f lo=%.4f hi=%.4f verdict=%s\n", op, ph, e.Ratio, e.Lo, e.Hi, v)
				}
			}
		}
		for _, op := range ops {
			if r, ok := d.Ratio(op, PhaseTenK, PhaseOne); ok {
				fmt.Fprintf(w, "bench: %s/scale_10k_vs_1/%s ratio=%.3f\n", l, op, r)
			}
		}
		scaleSummary(w, d)
		for _, v := range d.Values {
			fmt.Fprintf(w, "bench: %s/%s value=%s %s\n", l, v.Name, fmtNum(v.Value), v.Unit)
		}
	}
}

// goalSummary writes Summary's goal lines.
func goalSummary(w io.Writer, docs []*Doc) {
	for _, v := range Goals(docs) {
		fmt.Fprintf(w, "bench: %s/goal/%s/%s ratio=%.4f lo=%.4f hi=%.4f verdict=%s\n",
			v.Doc, v.Op, v.ID, v.Ratio, v.Lo, v.Hi, v.Verdict)
	}
}
