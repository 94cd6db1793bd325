package rundata

import (
	"math"
)

// DefaultHistUS is the histogram range used by runs: 1 µs bins up to
// 100 ms. Audio periods of interest are 0.7–100 ms; anything later is an
// overflow, still counted and still reflected in Max.
const DefaultHistUS = 100000

// Histogram accumulates latencies (or any non-negative durations) in 1 µs
// bins. Min, max and sum are kept exactly; values beyond the last bin are
// counted in Overflow, never dropped, and percentiles that land there report
// the exact maximum.
type Histogram struct {
	Bins     []uint64 // Bins[i] counts values in [i µs, i+1 µs)
	Overflow uint64
	Count    uint64
	SumNS    float64
	MinNS    int64
	MaxNS    int64
}

// NewHistogram returns a histogram of n one-microsecond bins.
func NewHistogram(n int) *Histogram {
	return &Histogram{Bins: make([]uint64, n), MinNS: math.MaxInt64}
}

// Add records one value in nanoseconds. Negative values count as 0: a
// wakeup cannot precede its cause, and clocks read on different CPUs may
// disagree by a few ns.
func (h *Histogram) Add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.Count++
	h.SumNS += float64(ns)
	if ns < h.MinNS {
		h.MinNS = ns
	}
	if ns > h.MaxNS {
		h.MaxNS = ns
	}
	b := ns / 1000
	if b >= int64(len(h.Bins)) {
		h.Overflow++
		return
	}
	h.Bins[b]++
}

// Merge adds o's counts to h. Both must have the same number of bins.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count == 0 {
		return
	}
	for i, c := range o.Bins {
		h.Bins[i] += c
	}
	h.Overflow += o.Overflow
	h.Count += o.Count
	h.SumNS += o.SumNS
	h.MinNS = min(h.MinNS, o.MinNS)
	h.MaxNS = max(h.MaxNS, o.MaxNS)
}

// Percentile returns the nearest-rank p-quantile (0 < p ≤ 1) in µs,
// truncated to the bin's lower edge as cyclictest's histogram does. A rank
// that falls among the overflowed values returns the exact maximum.
func (h *Histogram) Percentile(p float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p * float64(h.Count)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i, c := range h.Bins {
		cum += c
		if cum >= rank {
			return float64(i)
		}
	}
	return float64(h.MaxNS) / 1000
}

// FractionBelow returns the fraction of values strictly below limitNS,
// counted at bin resolution (limitNS is rounded down to whole µs).
func (h *Histogram) FractionBelow(limitNS int64) float64 {
	if h.Count == 0 {
		return 0
	}
	n := limitNS / 1000
	var cum uint64
	for i := int64(0); i < n && i < int64(len(h.Bins)); i++ {
		cum += h.Bins[i]
	}
	return float64(cum) / float64(h.Count)
}

// Stats summarises h as run.json's latency_us object.
func (h *Histogram) Stats() LatencyStats {
	if h.Count == 0 {
		return LatencyStats{}
	}
	return LatencyStats{
		Min:   float64(h.MinNS) / 1000,
		Avg:   h.SumNS / float64(h.Count) / 1000,
		P50:   h.Percentile(0.50),
		P90:   h.Percentile(0.90),
		P99:   h.Percentile(0.99),
		P999:  h.Percentile(0.999),
		P9999: h.Percentile(0.9999),
		Max:   float64(h.MaxNS) / 1000,
	}
}
