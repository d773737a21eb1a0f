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

// goalOf is the limit of phase's goal against (a); false for a phase with
// no goal ((f), (d), (e)).
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
// (c)/(a) and (c2)/(a) <= 1.05, and (c) no slower than (e) where Landlock
// expresses the op; each verdict is over the ratio's bootstrap 95% interval.
func Goals(docs []*Doc) []Verdict {
	var out []Verdict
	for _, d := range docs {
		ops := append(append([]Op{}, MicroOps...), OpMacro)
		for _, op := range ops {
			for _, ph := range []string{PhaseB, PhaseC, PhaseC2} {
				lim, _ := goalOf(ph)
				if e, ok := d.Estimate(op, ph, PhaseA); ok {
					out = append(out, Verdict{d.Label(), string(op), fmt.Sprintf("%s/a <= %.2f", ph, lim), e, lim, VerdictOf(e, lim)})
				}
			}
			if e, ok := d.Estimate(op, PhaseC, PhaseE); ok {
				out = append(out, Verdict{d.Label(), string(op), "c <= e (Landlock)", e, 1, VerdictOf(e, 1)})
			}
		}
	}
	return out
}

// Summary writes one line per figure: "bench: <name> ratio=<r>" or
// "bench: <name> value=<v> <unit>", <name> starting with the doc's Label
// (host, vm6.12, icount/6.12); and for the native part, one more line per
// op and phase: "bench: native/<op>/<phase> ratio=R lo=L hi=H verdict=V",
// [L, H] the bootstrap 95% interval and V one of met, not-met, inconclusive
// (none for a phase without a goal).
func Summary(w io.Writer, docs []*Doc) {
	for _, d := range docs {
		l := d.Label()
		ops := append(append([]Op{}, MicroOps...), OpMacro)
		for _, op := range ops {
			for _, ph := range []string{PhaseA0, PhaseF, PhaseB, PhaseC, PhaseC2, PhaseD, PhaseE} {
				if r, ok := d.Ratio(op, ph, PhaseA); ok {
					fmt.Fprintf(w, "bench: %s/%s/%s ratio=%.3f\n", l, op, ph, r)
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
