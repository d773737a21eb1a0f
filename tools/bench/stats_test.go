package bench

import (
	"math"
	"testing"
)

func TestMedianAndPercentile(t *testing.T) {
	if got := Median([]float64{5, 1, 3}); got != 3 {
		t.Errorf("median odd = %v", got)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("median of nothing is not NaN")
	}
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i)
	}
	if got := Percentile(xs, 99); got != 99 {
		t.Errorf("p99 = %v", got)
	}
}

// synth returns n samples base*(1+jitter) with a deterministic spread of
// +-jitter around 1 (a triangle wave, no randomness).
func synth(n int, level, jitter float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		f := float64(i%7)/3 - 1 // -1 .. +1
		xs[i] = level * (1 + jitter*f)
	}
	return xs
}

func TestPairedEstimateExactRatio(t *testing.T) {
	base := synth(31, 1000, 0.3) // rounds drift by +-30 %
	xs := make([]float64, len(base))
	for i := range xs {
		xs[i] = base[i] * 1.01
	}
	e, err := PairedEstimate(xs, base)
	if err != nil {
		t.Fatal(err)
	}
	// Pairing cancels the drift: every per-round ratio is 1.01, so is the
	// interval.
	if math.Abs(e.Ratio-1.01) > 1e-12 || math.Abs(e.Lo-1.01) > 1e-12 || math.Abs(e.Hi-1.01) > 1e-12 {
		t.Errorf("estimate = %+v, want 1.01 [1.01, 1.01]", e)
	}
	if !e.Paired || e.N != 31 {
		t.Errorf("paired=%v n=%d", e.Paired, e.N)
	}
	if v := VerdictOf(e, GoalNotEnforced); v != VerdictMet {
		t.Errorf("verdict = %s, want met", v)
	}
}

func TestPairedEstimateDeterministicAndCovers(t *testing.T) {
	base := synth(31, 1000, 0.2)
	xs := make([]float64, len(base))
	for i := range xs {
		// per-round ratio 1.03 +- 0.02 in a pattern unrelated to base's
		xs[i] = base[i] * (1.03 + 0.02*(float64(i%5)/2-1))
	}
	e1, err := PairedEstimate(xs, base)
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := PairedEstimate(xs, base)
	if e1 != e2 {
		t.Fatalf("same samples, different estimates: %+v vs %+v", e1, e2)
	}
	if !(e1.Lo <= e1.Ratio && e1.Ratio <= e1.Hi) {
		t.Errorf("interval [%v, %v] does not contain the estimate %v", e1.Lo, e1.Hi, e1.Ratio)
	}
	if e1.Lo < 1.01-1e-9 || e1.Hi > 1.05+1e-9 || e1.Hi-e1.Lo <= 0 {
		t.Errorf("interval [%v, %v] outside the per-round ratios 1.01..1.05 or empty", e1.Lo, e1.Hi)
	}
}

func TestPairedEstimateNarrowsWithRounds(t *testing.T) {
	ratios := func(n int) ([]float64, []float64) {
		base := make([]float64, n)
		xs := make([]float64, n)
		for i := range xs {
			base[i] = 1000
			xs[i] = 1000 * (1 + 0.1*(float64(i%11)/5-1)) // 0.9..1.1
		}
		return xs, base
	}
	x7, b7 := ratios(11)
	x63, b63 := ratios(121)
	e7, _ := PairedEstimate(x7, b7)
	e63, _ := PairedEstimate(x63, b63)
	if !(e63.Hi-e63.Lo < e7.Hi-e7.Lo) {
		t.Errorf("interval does not narrow with rounds: 11 rounds %v wide, 121 rounds %v wide", e7.Hi-e7.Lo, e63.Hi-e63.Lo)
	}
}

func TestEstimateErrors(t *testing.T) {
	if _, err := PairedEstimate([]float64{1, 2}, []float64{1}); err == nil {
		t.Error("length mismatch accepted")
	}
	if _, err := PairedEstimate([]float64{1}, []float64{1}); err == nil {
		t.Error("one round accepted")
	}
	if _, err := PairedEstimate([]float64{1, 2}, []float64{1, 0}); err == nil {
		t.Error("zero base accepted")
	}
	if _, err := UnpairedEstimate([]float64{1}, []float64{1, 2}); err == nil {
		t.Error("one sample accepted")
	}
}

func TestUnpairedEstimate(t *testing.T) {
	xs := synth(21, 1100, 0.05) // whole periods: medians are the levels
	base := synth(7, 1000, 0.05)
	e, err := UnpairedEstimate(xs, base)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(e.Ratio-1.1) > 1e-9 || e.Paired || e.N != 7 {
		t.Errorf("estimate = %+v, want ratio 1.1 unpaired n=7", e)
	}
	if !(e.Lo < 1.1 && e.Hi > 1.1 && e.Lo > 0.95 && e.Hi < 1.25) {
		t.Errorf("interval [%v, %v] implausible around 1.1", e.Lo, e.Hi)
	}
}

func TestVerdictOf(t *testing.T) {
	for _, c := range []struct {
		lo, hi, limit float64
		want          string
	}{
		{0.98, 1.02, 1.02, VerdictMet},            // upper end at the goal
		{0.98, 1.0201, 1.02, VerdictInconclusive}, // upper end just over
		{1.0201, 1.03, 1.02, VerdictNotMet},       // whole interval over
		{1.02, 1.03, 1.02, VerdictInconclusive},   // lower end at the goal is not over it
		{1.00, 1.10, 1.05, VerdictInconclusive},   // straddles
		{1.06, 1.10, 1.05, VerdictNotMet},
	} {
		if got := VerdictOf(Estimate{Ratio: (c.lo + c.hi) / 2, Lo: c.lo, Hi: c.hi, N: 31}, c.limit); got != c.want {
			t.Errorf("[%v, %v] vs %v: %s, want %s", c.lo, c.hi, c.limit, got, c.want)
		}
		// Too few rounds: never a verdict.
		if got := VerdictOf(Estimate{Ratio: (c.lo + c.hi) / 2, Lo: c.lo, Hi: c.hi, N: MinVerdictRounds - 1}, c.limit); got != VerdictInconclusive {
			t.Errorf("[%v, %v] vs %v with %d rounds: %s, want inconclusive", c.lo, c.hi, c.limit, MinVerdictRounds-1, got)
		}
	}
}
