package benchstat

import (
	"math"
	"strings"
	"testing"
)

// rounds makes n rounds whose figures follow f(i).
func rounds(n int, f func(i int) Round) []Round {
	rs := make([]Round, n)
	for i := range rs {
		rs[i] = f(i)
	}
	return rs
}

// noisy is a deterministic spread of factors around 1: 0.5× to 2×, as
// rounds of one tool spread on a shared machine.
func noisy(i int) float64 { return math.Pow(2, math.Sin(float64(i)*2.39996)) }

// A tool that is exactly k times another in every round reads k with an
// interval of nothing but k, whatever the rounds' own spread.
func TestPairExactRatio(t *testing.T) {
	b := rounds(16, func(i int) Round {
		x := noisy(i)
		return Round{Periods: 10000, P99: 50 * x, P999: 80 * x, Max: 400 * x, CPU: 0.1 * x}
	})
	a := rounds(16, func(i int) Round {
		r := b[i]
		return Round{Periods: 10000, P99: 1.5 * r.P99, P999: 1.5 * r.P999, Max: 1.5 * r.Max, CPU: 2 * r.CPU}
	})
	p, err := Pair(a, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]Interval{"p99": p.P99, "p99.9": p.P999, "max": p.Max} {
		if math.Abs(got.Median-1.5) > 1e-12 || math.Abs(got.Lo-1.5) > 1e-12 || math.Abs(got.Hi-1.5) > 1e-12 || got.N != 16 {
			t.Errorf("%s: %+v, want 1.5 [1.5, 1.5] over 16", name, got)
		}
	}
	if math.Abs(p.CPU.Median-2) > 1e-12 {
		t.Errorf("CPU per period: %+v, want 2", p.CPU)
	}
}

// The interval holds the median, widens with the rounds' spread, narrows
// with more rounds, and does not move with the seed beyond the figures'
// two decimals.
func TestMedianInterval(t *testing.T) {
	spread := func(n int, w float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 1 + w*math.Sin(float64(i)*2.39996)
		}
		return xs
	}
	narrow, wide := MedianInterval(spread(16, 0.1), 1), MedianInterval(spread(16, 0.5), 1)
	for _, iv := range []Interval{narrow, wide} {
		if !(iv.Lo <= iv.Median && iv.Median <= iv.Hi) || iv.Lo == iv.Hi {
			t.Errorf("%+v: want Lo < Hi with the median between", iv)
		}
	}
	if wide.Hi-wide.Lo <= narrow.Hi-narrow.Lo {
		t.Errorf("spread 0.5: %v, not wider than spread 0.1's %v", wide, narrow)
	}
	if few, many := MedianInterval(spread(8, 0.5), 1), MedianInterval(spread(64, 0.5), 1); many.Hi-many.Lo >= few.Hi-few.Lo {
		t.Errorf("64 rounds: %v, not narrower than 8 rounds' %v", many, few)
	}
	base := MedianInterval(spread(16, 0.5), 1)
	for seed := uint64(2); seed < 8; seed++ {
		iv := MedianInterval(spread(16, 0.5), seed)
		if math.Abs(iv.Lo-base.Lo) > 0.01 || math.Abs(iv.Hi-base.Hi) > 0.01 {
			t.Errorf("seed %d: %v, seed 1: %v: moved by more than 0.01", seed, iv, base)
		}
	}
	if again := MedianInterval(spread(16, 0.5), 1); again != base {
		t.Errorf("seed 1 twice: %v and %v", base, again)
	}
	if iv := MedianInterval([]float64{math.NaN(), math.Inf(1)}, 1); iv.N != 0 {
		t.Errorf("no finite values: %+v", iv)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(Median([]float64{math.NaN()})) {
		t.Error("Median of no finite value is not NaN")
	}
	if got := Median([]float64{3, math.NaN(), 1}); got != 2 {
		t.Errorf("Median(3, NaN, 1) = %v, want 2: a round without the figure does not count", got)
	}
}

// Rounds pair one to one, and a round whose reference figure is 0 gives
// no ratio.
func TestPairRounds(t *testing.T) {
	if _, err := Pair(make([]Round, 3), make([]Round, 4), 1); err == nil {
		t.Error("3 rounds against 4 paired")
	}
	a := []Round{{P99: 2, P999: 2, Max: 2}, {P99: 3, P999: 3, Max: 3}}
	b := []Round{{P99: 1, P999: 1, Max: 1}, {P99: 0, P999: 1, Max: 1}}
	p, _ := Pair(a, b, 1)
	if p.P99.N != 1 || p.P99.Median != 2 || p.P999.N != 2 {
		t.Errorf("p99 %+v (want 1 ratio, 2), p99.9 %+v (want 2 ratios)", p.P99, p.P999)
	}
	if p.CPU.N != 0 {
		t.Errorf("CPU per period without CPU times: %+v", p.CPU)
	}
}

// The verdict meets a goal when the ratio's whole interval is within it,
// misses it when the whole is beyond, does not decide otherwise (saying
// how many rounds would likely decide: 16 × (h / d)², h the interval's
// half-width and d the median's distance from the goal, in logarithms:
// 16 × (0.0668 / 0.0180)² ≈ 220), and judges
// the max by the A/A's interval.
func TestVerdictLines(t *testing.T) {
	at := func(m, lo, hi float64) Interval { return Interval{Median: m, Lo: lo, Hi: hi, N: 16} }
	v := Verdict{Paired: Paired{Rounds: 16, P99: at(1.01, 0.98, 1.04), P999: at(1.12, 1.05, 1.2), CPU: at(1.3, 1.2, 1.4), Max: at(1.3, 0.9, 1.9)},
		AA: &Paired{Rounds: 16, P99: at(1, 0.97, 1.03), P999: at(1, 0.95, 1.05), Max: at(1, 0.6, 1.5)}, Goals: DefaultGoals}
	got := strings.Join(v.Lines(), "\n")
	for _, want := range []string{
		"p99 1.01 [0.98, 1.04] (goal: ≤ 1.05: met); A/A 1.00 [0.97, 1.03]",
		"p99.9 1.12 [1.05, 1.20] (goal: ≤ 1.10: not decided at this host's noise after 16 rounds; ~220 would likely decide)",
		"CPU per period (start-up counted) 1.30 [1.20, 1.40] (goal: ≤ 1.00: not met)",
		"max 1.30 [0.90, 1.90]; A/A 1.00 [0.60, 1.50] (goal: the intervals overlap: met)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	v.Max = at(2.5, 1.8, 3.1)
	if got := strings.Join(v.Lines(), "\n"); !strings.Contains(got, "overlap: not met") {
		t.Errorf("a max interval above the A/A's met its goal:\n%s", got)
	}
	v.AA = nil
	if got := strings.Join(v.Lines(), "\n"); !strings.Contains(got, "no A/A to judge it by") {
		t.Errorf("without an A/A:\n%s", got)
	}
}
