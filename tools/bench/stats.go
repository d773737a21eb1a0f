package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Median of xs (NaN when empty). Medians, not means: the machines are shared
// and TCG timings have long upper tails.
func Median(xs []float64) float64 { return Percentile(xs, 50) }

// Percentile p (0..100) of xs by nearest rank (NaN when empty).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if p <= 0 {
		return s[0]
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	if p == 50 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[rank-1]
}

// Bootstrap settings. The seed is fixed so that a report (and its tests)
// computes the same interval from the same samples every time.
const (
	BootstrapResamples = 10000
	BootstrapSeed      = 0x656e66 // "enf"
)

// Estimate is one ratio figure with its bootstrap 95% interval.
type Estimate struct {
	// Ratio is the point estimate: the median of the per-round ratios
	// phase[i]/base[i] when both ran in the same rounds (Paired), else the
	// ratio of the two medians.
	Ratio float64
	// Lo and Hi bound the percentile bootstrap 95% interval of Ratio
	// (2.5th and 97.5th percentiles of BootstrapResamples resampled
	// estimates, seed BootstrapSeed).
	Lo, Hi float64
	// N is the number of rounds (paired) or the smaller sample size.
	N      int
	Paired bool
}

// PairedEstimate estimates the ratio of xs to base where xs[i] and base[i]
// ran in the same round: the median of the per-round ratios, with a
// percentile bootstrap 95% interval over rounds (rounds are resampled
// whole, so drift of the machine between rounds cancels in each ratio).
// Errors: lengths differ, fewer than 2 rounds, or a base sample <= 0.
func PairedEstimate(xs, base []float64) (Estimate, error) {
	if len(xs) != len(base) {
		return Estimate{}, fmt.Errorf("paired estimate: %d samples against %d", len(xs), len(base))
	}
	if len(xs) < 2 {
		return Estimate{}, fmt.Errorf("paired estimate: %d rounds, want at least 2", len(xs))
	}
	rs := make([]float64, len(xs))
	for i := range xs {
		if !(base[i] > 0) {
			return Estimate{}, fmt.Errorf("paired estimate: base sample %d is %v", i, base[i])
		}
		rs[i] = xs[i] / base[i]
	}
	rng := rand.New(rand.NewPCG(BootstrapSeed, uint64(len(rs))))
	meds := make([]float64, BootstrapResamples)
	re := make([]float64, len(rs))
	for b := range meds {
		for i := range re {
			re[i] = rs[rng.IntN(len(rs))]
		}
		meds[b] = Median(re)
	}
	return Estimate{Ratio: Median(rs), Lo: Percentile(meds, 2.5), Hi: Percentile(meds, 97.5), N: len(rs), Paired: true}, nil
}

// UnpairedEstimate estimates median(xs)/median(base) for samples that did
// not run in the same rounds; the bootstrap resamples each side on its own.
// Errors: fewer than 2 samples on a side, or a base median <= 0.
func UnpairedEstimate(xs, base []float64) (Estimate, error) {
	if len(xs) < 2 || len(base) < 2 {
		return Estimate{}, fmt.Errorf("unpaired estimate: %d and %d samples, want at least 2 each", len(xs), len(base))
	}
	if !(Median(base) > 0) {
		return Estimate{}, fmt.Errorf("unpaired estimate: base median is %v", Median(base))
	}
	rng := rand.New(rand.NewPCG(BootstrapSeed, uint64(len(xs))<<32|uint64(len(base))))
	est := make([]float64, BootstrapResamples)
	rx := make([]float64, len(xs))
	rb := make([]float64, len(base))
	for b := range est {
		for i := range rx {
			rx[i] = xs[rng.IntN(len(xs))]
		}
		for i := range rb {
			rb[i] = base[rng.IntN(len(base))]
		}
		est[b] = Median(rx) / Median(rb)
	}
	return Estimate{Ratio: Median(xs) / Median(base), Lo: Percentile(est, 2.5), Hi: Percentile(est, 97.5), N: min(len(xs), len(base))}, nil
}

// Verdicts of a goal "ratio <= limit".
const (
	VerdictMet          = "met"
	VerdictNotMet       = "not-met"
	VerdictInconclusive = "inconclusive"
)

// MinVerdictRounds: with fewer rounds a percentile bootstrap of a median
// is too coarse (its interval is little more than the range of a handful
// of samples), so VerdictOf says inconclusive whatever the interval.
const MinVerdictRounds = 5

// VerdictOf judges e against the goal ratio <= limit: met only when the
// whole 95% interval is at or below the limit (Hi <= limit), not met when
// the whole interval is above it (Lo > limit), inconclusive otherwise (the
// run cannot tell; more rounds or a quieter machine can) and whenever
// e.N < MinVerdictRounds.
func VerdictOf(e Estimate, limit float64) string {
	switch {
	case e.N < MinVerdictRounds:
		return VerdictInconclusive
	case e.Hi <= limit:
		return VerdictMet
	case e.Lo > limit:
		return VerdictNotMet
	}
	return VerdictInconclusive
}
