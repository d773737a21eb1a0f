package bench

import (
	"fmt"
	"io"
)

// The performance goals (ratios against (a), the same run).
const (
	GoalNotEnforced = 1.02 // (b)/(a)
	GoalEnforced    = 1.05 // (c)/(a) and (c2)/(a)
)

// PathWalk reports whether op's cost is dominated by a path lookup: the
// kernel's walk of the path's components (8 or more beneath the phase
// directory, where enforcerd's inode_permission program runs once per
// component), with little else in the operation. These ops measure what
// enforcement adds to a lookup; the others what it adds to the work
// named. The goals are the same for both kinds (Goals); the report lists
// the path walks with them, so that a table is read knowing which
// figures one cost shapes. Path walks: open_read, create_unlink, stat,
// rename, the open_depth ops, stat_storm, and chmod_setxattr (two lookups
// of the same path, fchmodat's and setxattr's, each followed only by an
// inode update in memory). Not path walks, though each opens a path:
// getdents_1k (reading 1,000 directory entries costs many times the one
// lookup of the open: about 230 µs against about 2.5 µs for an
// open+close on this project's development host), proc_status (the read
// formats the task's state, about 1.4 KiB of text: about 11 µs against
// that 2.5 µs), exec, exec_dynamic, exec_storm and macro_untar (process
// creation and program loading; unpacking and reading files).
func PathWalk(op Op) bool {
	switch op {
	case OpOpenRead, OpCreateWrite, OpStat, OpRename, OpOpenDepth1, OpOpenDepth10, OpOpenDepth28, OpStatStorm, OpChmodXattr:
		return true
	}
	return false
}

// goalOf is the limit of phase's goal against (a); false for a phase with
// no goal ((f), (d), (e1), (e0)).
func goalOf(phase string) (float64, bool) {
	switch phase {
	case PhaseB:
		return GoalNotEnforced, true
	case PhaseC, PhaseC2:
		return GoalEnforced, true
	}
	return 0, false
}

// Verdict is one goal check.
type Verdict struct {
	Doc, Op, Goal string
	Estimate
	Limit float64
	// Verdict is VerdictMet, VerdictNotMet or VerdictInconclusive
	// (VerdictOf over the 95% interval).
	Verdict string
}

// Goals checks every figure against the performance goals: (b)/(a) <= 1.02,
// (c)/(a) and (c2)/(a) <= 1.05, and (c) no slower than (e1), the
// allow-everything Landlock sandbox, where Landlock at the doc's ABI
// expresses the op (LandlockExpresses), and likewise (c2) no slower than
// (e2), its Landlock twin; each verdict is over the ratio's
// bootstrap 95% interval.
func Goals(docs []*Doc) []Verdict {
	var out []Verdict
	for _, d := range docs {
		for _, op := range allOps() {
			for _, ph := range []string{PhaseB, PhaseC, PhaseC2} {
				lim, _ := goalOf(ph)
				if e, ok := d.Estimate(op, ph, PhaseA); ok {
					out = append(out, Verdict{d.Label(), string(op), fmt.Sprintf("%s/a <= %.2f", ph, lim), e, lim, VerdictOf(e, lim)})
				}
			}
			if !LandlockExpresses(op, d.LandlockABI) {
				continue
			}
			if e, ok := d.Estimate(op, PhaseC, PhaseE1); ok {
				out = append(out, Verdict{d.Label(), string(op), "c <= e1 (Landlock)", e, 1, VerdictOf(e, 1)})
			}
			if e, ok := d.Estimate(op, PhaseC2, PhaseE2); ok {
				out = append(out, Verdict{d.Label(), string(op), "c2 <= e2 (Landlock twin)", e, 1, VerdictOf(e, 1)})
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
// not-met, inconclusive (none for a phase without a goal).
func Summary(w io.Writer, docs []*Doc) {
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
					if lim, ok := goalOf(ph); ok {
						v = VerdictOf(e, lim)
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
