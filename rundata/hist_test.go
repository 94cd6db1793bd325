package rundata

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// nearestRank is the textbook percentile: the smallest value with at least
// p of the data at or below it.
func nearestRank(sorted []int64, p float64) int64 {
	r := int(math.Ceil(p * float64(len(sorted))))
	return sorted[max(r, 1)-1]
}

// The histogram's percentile is the textbook one truncated to its 1 µs bin
// and never below the minimum.
func TestPercentilesMatchSortedReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 1000, 100003} {
		h := NewHistogram(DefaultHistUS)
		vals := make([]int64, n)
		for i := range vals {
			// log-normal-ish: mostly tens of µs, a tail into ms, some
			// values below the grid
			v := int64(math.Exp(rng.NormFloat64()*1.2+9.5)) + rng.Int64N(1000) - 3000
			vals[i] = v
			h.Add(v)
		}
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		for _, p := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			want := max(float64(vals[0])/1000, float64(floorDiv(nearestRank(vals, p), 1000)))
			if got := h.Percentile(p); got != want {
				t.Errorf("n=%d p=%g: got %g µs, want %g µs", n, p, got, want)
			}
		}
		st := h.Stats()
		if st.Min != float64(vals[0])/1000 || st.Max != float64(vals[n-1])/1000 {
			t.Errorf("n=%d: min/max %g/%g, want %g/%g", n, st.Min, st.Max, float64(vals[0])/1000, float64(vals[n-1])/1000)
		}
		var sum float64
		for _, v := range vals {
			sum += float64(v)
		}
		if math.Abs(st.Avg-sum/float64(n)/1000) > 1e-6 {
			t.Errorf("n=%d: avg %g, want %g", n, st.Avg, sum/float64(n)/1000)
		}
	}
}

// A phase of identical wakeups reads that value at every percentile, not
// its bin's lower edge.
func TestPercentileNeverBelowMin(t *testing.T) {
	h := NewHistogram(DefaultHistUS)
	for range 1000 {
		h.Add(40_900)
	}
	st := h.Stats()
	for name, v := range map[string]float64{"min": st.Min, "p50": st.P50, "p99": st.P99, "p9999": st.P9999, "max": st.Max} {
		if v != 40.9 {
			t.Errorf("%s = %g, want 40.9", name, v)
		}
	}
}

// Lateness before the reference is kept, binned below 0 and counted in
// every statistic.
func TestNegativeValuesKept(t *testing.T) {
	h := NewHistogram(DefaultHistUS)
	for _, v := range []int64{-2_500, -500, 300, 1_500} {
		h.Add(v)
	}
	if h.MinNS != -2_500 || h.Bin(-3) != 1 || h.Bin(-1) != 1 || h.Bin(0) != 1 || h.Bin(1) != 1 || h.CountIn(-100, 100) != 4 {
		t.Fatalf("min %d bins −3..1: %d %d %d %d %d", h.MinNS, h.Bin(-3), h.Bin(-2), h.Bin(-1), h.Bin(0), h.Bin(1))
	}
	// ranks: 1 → −2.5 (bin −3, clamped to the min), 2 → bin −1, 3 → bin 0,
	// 4 → bin 1
	for p, want := range map[float64]float64{0.25: -2.5, 0.5: -1, 0.75: 0, 1: 1} {
		if got := h.Percentile(p); got != want {
			t.Errorf("p%g = %g, want %g", 100*p, got, want)
		}
	}
	if st := h.Stats(); st.Avg != -0.3 || st.Min != -2.5 || st.Max != 1.5 {
		t.Errorf("stats %+v", st)
	}
}

// Values beyond the range are counted, and a percentile landing among
// them reads the range's edge ("at least"), not the maximum.
func TestOverflowReadsTheRange(t *testing.T) {
	h := NewHistogram(100) // −100 to 100 µs
	for range 97 {
		h.Add(5_000)
	}
	h.Add(-250_000)
	h.Add(250_000)
	h.Add(1_234_567)
	if h.Count != 100 || h.Overflow != 2 || h.Underflow != 1 {
		t.Fatalf("count %d overflow %d underflow %d, want 100, 2 and 1", h.Count, h.Overflow, h.Underflow)
	}
	for p, want := range map[float64]float64{0.01: -250, 0.98: 5, 0.99: 100, 1: 100} {
		if got := h.Percentile(p); got != want {
			t.Errorf("p%g = %g, want %g", 100*p, got, want)
		}
	}
	st := h.Stats()
	if !st.Beyond(st.P99) || st.Beyond(st.P50) || st.RangeUS != 100 || st.Max != 1234.567 {
		t.Errorf("stats %+v: p99 must read beyond the range, p50 not", st)
	}
	// A phase entirely beyond the range reads its minimum: still a lower bound.
	all := NewHistogram(100)
	all.Add(300_000)
	all.Add(400_000)
	if got := all.Percentile(0.5); got != 300 {
		t.Errorf("all overflowed: p50 = %g, want the min 300", got)
	}
}

// "Within 100 µs" is ≤, counted in ns: 100.000 µs is within, 100.001 not,
// and early wakeups are within.
func TestWithinIsAtMost(t *testing.T) {
	h := NewHistogram(DefaultHistUS)
	for _, v := range []int64{-7_000, 99_999, 100_000, 100_001, 1_000_000, 1_000_001, 200_000_000} {
		h.Add(v)
	}
	var ph Phase
	FillPhase(&ph, h)
	if h.AtMost100US != 3 || h.AtMost1MS != 5 {
		t.Errorf("at most 100 µs %d, 1 ms %d; want 3 and 5", h.AtMost100US, h.AtMost1MS)
	}
	if ph.WithinUS100 != 100*3.0/7 || ph.WithinMS1 != 100*5.0/7 || ph.Overflow != 1 {
		t.Errorf("phase %+v", ph)
	}
}

func TestMerge(t *testing.T) {
	a, b := NewHistogram(10), NewHistogram(10)
	a.Add(1500)
	b.Add(3500)
	b.Add(-2500)
	b.Add(50_000)
	a.Merge(b)
	if a.Count != 4 || a.Bin(1) != 1 || a.Bin(3) != 1 || a.Bin(-3) != 1 || a.Overflow != 1 || a.MinNS != -2500 || a.MaxNS != 50_000 || a.AtMost100US != 4 {
		t.Fatalf("merged %+v", a)
	}
}

// The bins are allocated with what is added, not with the range: values
// far apart cost a page each.
func TestBinsFollowContent(t *testing.T) {
	h := NewHistogram(DefaultHistUS)
	h.Add(30_000)
	h.Add(-99_999_000)
	h.Add(99_999_000)
	pages := 0
	for _, pg := range h.pages {
		if pg != nil {
			pages++
		}
	}
	if pages != 3 {
		t.Fatalf("%d pages for three values far apart, want 3", pages)
	}
	if lo, hi, ok := h.Span(); !ok || lo != -99_999 || hi != 99_999 {
		t.Errorf("span %d..%d", lo, hi)
	}
}
