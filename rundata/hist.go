package rundata

import (
	"math"
)

// DefaultHistUS is the histogram range used by runs: 1 µs bins from
// −100 ms to 100 ms. Audio periods of interest are 0.7–100 ms; anything
// later is an overflow, still counted and still reflected in Max.
const DefaultHistUS = 100000

// MaxHistUS is the largest range a histogram read from a file may claim
// (1 s of 1 µs bins, 8 MB a side): cyclictest's -h is rarely beyond 10 ms,
// and a file must not make a reader allocate what its content does not
// hold.
const MaxHistUS = 1_000_000

// The limits of the "within" shares (run.json wakeups_within_*). They are
// counted exactly, in ns, as each value is added, not read off the bins.
const (
	Within100US = 100_000   // ns
	Within1MS   = 1_000_000 // ns
)

// Histogram accumulates latencies in 1 µs bins over [−RangeUS, RangeUS).
// Negative values are kept: lateness measured against a fitted grid (or a
// clock read on another CPU) can precede its reference, and clamping it to
// 0 would hide by how much. Min, max, sum and the "within" counts are kept
// exactly; values beyond the range are counted in Overflow (≥ RangeUS) or
// Underflow (< −RangeUS), never dropped.
//
// The bins are allocated as values reach them, so a histogram costs
// memory in proportion to the spread of what was added, not to its range.
type Histogram struct {
	RangeUS   int
	Bins      []uint64 // Bins[i] counts values in [i µs, i+1 µs); len ≤ RangeUS
	Neg       []uint64 // Neg[i] counts values in [−(i+1) µs, −i µs); len ≤ RangeUS
	Overflow  uint64   // values ≥ RangeUS µs
	Underflow uint64   // values < −RangeUS µs
	Count     uint64
	SumNS     float64
	MinNS     int64
	MaxNS     int64
	// AtMost100US and AtMost1MS count values ≤ 100 µs and ≤ 1 ms (negative
	// ones included), exactly.
	AtMost100US uint64
	AtMost1MS   uint64
}

// NewHistogram returns a histogram of 1 µs bins over [−rangeUS, rangeUS).
func NewHistogram(rangeUS int) *Histogram {
	return &Histogram{RangeUS: rangeUS, MinNS: math.MaxInt64, MaxNS: math.MinInt64}
}

// grow returns s long enough to index i, doubling so that adding n values
// costs O(n) however they arrive, and never past limit.
func grow(s []uint64, i, limit int) []uint64 {
	if i < len(s) {
		return s
	}
	n := min(max(i+1, 2*len(s), 64), limit)
	out := make([]uint64, n)
	copy(out, s)
	return out
}

// Add records one value in nanoseconds.
func (h *Histogram) Add(ns int64) {
	h.Count++
	h.SumNS += float64(ns)
	h.MinNS = min(h.MinNS, ns)
	h.MaxNS = max(h.MaxNS, ns)
	if ns <= Within100US {
		h.AtMost100US++
	}
	if ns <= Within1MS {
		h.AtMost1MS++
	}
	h.AddBin(floorDiv(ns, 1000), 1)
}

// AddBin counts n values in the bin of lower edge us µs (or in the
// overflow or underflow beyond the range). It keeps no min, max, sum or
// "within" count: readers of binned files (cyclictest's) set those from
// the file.
func (h *Histogram) AddBin(us int64, n uint64) {
	r := int64(h.RangeUS)
	switch {
	case us >= r:
		h.Overflow += n
	case us < -r:
		h.Underflow += n
	case us >= 0:
		h.Bins = grow(h.Bins, int(us), h.RangeUS)
		h.Bins[us] += n
	default:
		i := int(-us - 1)
		h.Neg = grow(h.Neg, i, h.RangeUS)
		h.Neg[i] += n
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Merge adds o's counts to h. Both must have the same range.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count == 0 {
		return
	}
	for i, c := range o.Bins {
		if c != 0 {
			h.AddBin(int64(i), c)
		}
	}
	for i, c := range o.Neg {
		if c != 0 {
			h.AddBin(-int64(i)-1, c)
		}
	}
	h.Overflow += o.Overflow
	h.Underflow += o.Underflow
	h.Count += o.Count
	h.SumNS += o.SumNS
	h.AtMost100US += o.AtMost100US
	h.AtMost1MS += o.AtMost1MS
	h.MinNS = min(h.MinNS, o.MinNS)
	h.MaxNS = max(h.MaxNS, o.MaxNS)
}

// Percentile returns the nearest-rank p-quantile (0 < p ≤ 1) in µs, as
// cyclictest's histogram gives it: the lower edge of the bin holding the
// ⌈p·n⌉-th smallest value, clamped into [min, max] so that it never reads
// below a value that was measured (identical 40.9 µs wakeups read 40.9,
// not 40) nor above one. A rank among the overflowed values reads RangeUS
// (the overflow's lower edge: "≥ 100 ms"); one among the underflowed
// values reads the minimum. The result is thus always a lower bound of the
// true quantile, off by less than 1 µs inside the range.
func (h *Histogram) Percentile(p float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p * float64(h.Count)))
	rank = max(rank, 1)
	edge := h.rankEdge(rank)
	return max(float64(h.MinNS)/1000, min(edge, float64(h.MaxNS)/1000))
}

// rankEdge is the lower edge, in µs, of the bin holding the rank-th value
// (−Inf for the underflow).
func (h *Histogram) rankEdge(rank uint64) float64 {
	cum := h.Underflow
	if cum >= rank {
		return math.Inf(-1)
	}
	for i := len(h.Neg) - 1; i >= 0; i-- {
		cum += h.Neg[i]
		if cum >= rank {
			return -float64(i + 1)
		}
	}
	for i, c := range h.Bins {
		cum += c
		if cum >= rank {
			return float64(i)
		}
	}
	return float64(h.RangeUS)
}

// Stats summarises h as run.json's latency_us object.
func (h *Histogram) Stats() LatencyStats {
	if h.Count == 0 {
		return LatencyStats{RangeUS: float64(h.RangeUS)}
	}
	return LatencyStats{
		Min:     float64(h.MinNS) / 1000,
		Avg:     h.SumNS / float64(h.Count) / 1000,
		P50:     h.Percentile(0.50),
		P90:     h.Percentile(0.90),
		P99:     h.Percentile(0.99),
		P999:    h.Percentile(0.999),
		P9999:   h.Percentile(0.9999),
		Max:     float64(h.MaxNS) / 1000,
		RangeUS: float64(h.RangeUS),
	}
}

// FillPhase sets a phase's wakeup-latency figures from the histogram of its
// latencies: the one definition of them, for the run, the report (a phase
// recovered from its samples file) and cyclictest's files alike. It sets
// neither the period count nor anything the histogram does not hold.
func FillPhase(ph *Phase, h *Histogram) {
	ph.Latency = h.Stats()
	ph.Overflow = h.Overflow
	ph.Underflow = h.Underflow
	ph.WithinUS100, ph.WithinMS1 = 0, 0
	if h.Count > 0 {
		ph.WithinUS100 = 100 * float64(h.AtMost100US) / float64(h.Count)
		ph.WithinMS1 = 100 * float64(h.AtMost1MS) / float64(h.Count)
	}
}

// Beyond reports whether a percentile of s fell among the values beyond
// the histogram's range: it then means "at least v", not "v".
func (s LatencyStats) Beyond(v float64) bool {
	r := s.RangeUS
	if r == 0 {
		r = DefaultHistUS // run.json written before range_us was recorded
	}
	return v >= r
}
