package bench

import (
	"math"
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
