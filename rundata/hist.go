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
// The bins live in pages of pageBins, allocated when a value first falls
// in them: a histogram costs memory in proportion to the spread of what
// was added (a phase of 20–200 µs wakeups: one page), not to its range,
// so a file of a few values cannot make a reader allocate megabytes.
type Histogram struct {
	RangeUS   int
	Overflow  uint64 // values ≥ RangeUS µs
	Underflow uint64 // values < −RangeUS µs
	Count     uint64
	SumNS     float64
	MinNS     int64
	MaxNS     int64
	// AtMost100US and AtMost1MS count values ≤ 100 µs and ≤ 1 ms (negative
	// ones included), exactly.
	AtMost100US uint64
	AtMost1MS   uint64

	pages []*[pageBins]uint64 // page k holds the bins from k·pageBins − RangeUS
}

// pageBins is the number of 1 µs bins allocated at once (8 KB).
const pageBins = 1024

// NewHistogram returns a histogram of 1 µs bins over [−rangeUS, rangeUS).
func NewHistogram(rangeUS int) *Histogram {
	return &Histogram{RangeUS: rangeUS, MinNS: math.MaxInt64, MaxNS: math.MinInt64,
		pages: make([]*[pageBins]uint64, (2*rangeUS+pageBins-1)/pageBins)}
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
	default:
		i := us + r
		pg := h.pages[i/pageBins]
		if pg == nil {
			pg = new([pageBins]uint64)
			h.pages[i/pageBins] = pg
		}
		pg[i%pageBins] += n
	}
}

// Bin returns the count of the bin of lower edge us µs; 0 outside the
// range.
func (h *Histogram) Bin(us int64) uint64 {
	r := int64(h.RangeUS)
	if us < -r || us >= r {
		return 0
	}
	i := us + r
	if pg := h.pages[i/pageBins]; pg != nil {
		return pg[i%pageBins]
	}
	return 0
}

// Each calls f for every non-empty bin in ascending order.
func (h *Histogram) Each(f func(us int64, n uint64)) {
	for k, pg := range h.pages {
		if pg == nil {
			continue
		}
		for j, n := range pg {
			if n != 0 {
				f(int64(k*pageBins+j)-int64(h.RangeUS), n)
			}
		}
	}
}

// Span returns the lowest and highest non-empty bins; ok is false when
// every value (if any) is beyond the range.
func (h *Histogram) Span() (lo, hi int64, ok bool) {
	h.Each(func(us int64, _ uint64) {
		if !ok {
			lo, ok = us, true
		}
		hi = us
	})
	return lo, hi, ok
}

// CountIn counts the values in the bins from lo to hi µs, both included.
func (h *Histogram) CountIn(lo, hi int64) uint64 {
	var n uint64
	h.Each(func(us int64, c uint64) {
		if us >= lo && us <= hi {
			n += c
		}
	})
	return n
}

// Pages is how many pages of bins h has allocated: its memory follows
// the values added, a page at most per distinct bin.
func (h *Histogram) Pages() int {
	n := 0
	for _, pg := range h.pages {
		if pg != nil {
			n++
		}
	}
	return n
}

// BinOf is the 1 µs bin a latency of ns falls in: ns/1000 rounded down,
// negative values included (−1 ns is in bin −1).
func BinOf(ns int64) int64 { return floorDiv(ns, 1000) }

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
	o.Each(func(us int64, n uint64) { h.AddBin(us, n) })
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
	edge, found := 0.0, false
	for k, pg := range h.pages {
		if pg == nil || found {
			continue
		}
		for j, n := range pg {
			if cum += n; n != 0 && cum >= rank {
				edge, found = float64(k*pageBins+j-h.RangeUS), true
				break
			}
		}
	}
	if found {
		return edge
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
