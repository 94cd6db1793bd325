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

func TestPercentilesMatchSortedReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 1000, 100003} {
		h := NewHistogram(DefaultHistUS)
		vals := make([]int64, n)
		for i := range vals {
			// log-normal-ish: mostly tens of µs, a tail into ms
			v := int64(math.Exp(rng.NormFloat64()*1.2+9.5)) + rng.Int64N(1000)
			vals[i] = v
			h.Add(v)
		}
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		for _, p := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			want := float64(nearestRank(vals, p) / 1000)
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

// Values beyond the last bin are counted, and a percentile landing among
// them reports the exact maximum instead of the edge of the range.
func TestOverflowIsCountedNotDropped(t *testing.T) {
	h := NewHistogram(100) // 0–100 µs
	for range 98 {
		h.Add(5_000)
	}
	h.Add(250_000)
	h.Add(1_234_567)
	if h.Count != 100 || h.Overflow != 2 {
		t.Fatalf("count %d overflow %d, want 100 and 2", h.Count, h.Overflow)
	}
	if got := h.Percentile(0.98); got != 5 {
		t.Errorf("p98 = %g, want 5", got)
	}
	if got := h.Percentile(0.99); got != 1234.567 {
		t.Errorf("p99 = %g, want the exact max 1234.567", got)
	}
	if got := h.FractionBelow(100_000); got != 0.98 {
		t.Errorf("FractionBelow(100 µs) = %g, want 0.98", got)
	}
}

func TestMerge(t *testing.T) {
	a, b := NewHistogram(10), NewHistogram(10)
	a.Add(1500)
	b.Add(3500)
	b.Add(50_000)
	a.Merge(b)
	if a.Count != 3 || a.Bins[1] != 1 || a.Bins[3] != 1 || a.Overflow != 1 || a.MinNS != 1500 || a.MaxNS != 50_000 {
		t.Fatalf("merged %+v", a)
	}
}
