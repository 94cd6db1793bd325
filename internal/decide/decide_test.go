package decide

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The critical ranks are the Mann–Whitney tables' (two-sided 5 %): U ≤ 23
// rejects for 10 against 10, U ≤ 0 for 4 against 4, and nothing for 3
// against 3.
func TestCriticalRank(t *testing.T) {
	for _, c := range []struct{ m, n, k int }{{10, 10, 24}, {4, 4, 1}, {3, 3, 0}, {5, 13, 13}, {1, 20, 0}, {20, 20, 128}} {
		if got := criticalRank(c.m, c.n, 0.025); got != c.k {
			t.Errorf("criticalRank(%d, %d) = %d, want %d", c.m, c.n, got, c.k)
		}
	}
	// Large counts: the exact distribution against the normal
	// approximation (no continuity correction: within a rank or two), and
	// the approximation used beyond exactUpTo against the exact one.
	if a, e := criticalRank(101, 100, 0.025), float64(101*100)/2-1.959964*math.Sqrt(float64(101*100*202)/12); math.Abs(float64(a)-e) > 1 {
		t.Errorf("criticalRank(101, 100) = %d, normal %.1f", a, e)
	}
	if a, e := criticalRank(101, 100, 0.025), exactCriticalRank(101, 100, 0.025); a < e-1 || a > e+1 {
		t.Errorf("criticalRank(101, 100) approximated %d, exact %d", a, e)
	}
	m, n := 60, 60
	mu, sd := float64(m*n)/2, math.Sqrt(float64(m*n*(m+n+1))/12)
	want := mu - 1.959964*sd
	if got := float64(criticalRank(m, n, 0.025)); math.Abs(got-want) > 2 {
		t.Errorf("criticalRank(60, 60) = %v, normal approximation %.1f", got, want)
	}
}

func TestCompareWords(t *testing.T) {
	a := []float64{10, 11, 12, 13, 14, 15, 16}
	scaled := func(f float64) []float64 {
		out := make([]float64, len(a))
		for i, x := range a {
			out[i] = x * f
		}
		return out
	}
	for _, c := range []struct {
		b    []float64
		want Word
	}{
		{scaled(2), Worse},
		{scaled(0.5), Better},
		{scaled(1.01), CannotTell}, // the runs spread ±20 %: X = 10 % cannot be told apart
		{[]float64{10}, CannotTell},
	} {
		if d := Compare(a, c.b, 0, 10); d.Word != c.want {
			t.Errorf("B %v against A %v: %s, want %s", c.b, a, d, c.want)
		}
	}
	tight := []float64{100, 100.5, 101, 99.5, 100.2, 99.8, 100.1}
	if d := Compare(tight, tight, 0, 10); d.Word != Same || d.Ratio != 1 {
		t.Errorf("tight runs against themselves: %s, want no difference 1×", d)
	}
	if d := Compare([]float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0}, 0.1, 10); d.Word != Same {
		t.Errorf("no xruns against none: %s, want no difference", d)
	}
	if d := Compare([]float64{20}, []float64{40}, 0, 10); d.Word != CannotTell || d.Why != OneRunEach || d.RunsNeeded != SuggestedRuns || d.Ratio != 2 {
		t.Errorf("one run each: %+v", d)
	}
	if d := Compare(a, scaled(1.01), 0, 10); d.RunsNeeded <= len(a) {
		t.Errorf("cannot tell with %d runs, yet %d would: %s", len(a), d.RunsNeeded, d)
	}
}

// The same bound decides compare --fail-if-worse: above by more than PCT,
// not above, or cannot tell.
func TestExceeds(t *testing.T) {
	d := Decision{Ratio: 1.3, Lo: 1.2, Hi: 1.4}
	for pct, want := range map[float64]Side{10: Above, 50: Below, 25: Straddles} {
		if got := d.Exceeds(pct); got != want {
			t.Errorf("[1.2, 1.4] exceeds %g %%: %v, want %v", pct, got, want)
		}
	}
	if (Decision{Ratio: 3, Lo: math.NaN(), Hi: math.NaN()}).Exceeds(10) != Straddles {
		t.Error("no interval decided --fail-if-worse")
	}
}

// simRun is one simulated run's figures: a machine state shared by every
// period of the run (a log-normal factor, sd 0.2 in logarithms, as the
// run-to-run spread of p99.9 on a quiet machine), periods whose latency is
// 20 µs plus a Pareto tail (α = 3, 1 period in 10 in the tail), and one
// rare stall per run from a Pareto of α = 1.2: the heavy-tailed maximum.
// scale multiplies the tail, so B with scale 1.5 has 1.5 × A's p99.9.
type simRun struct{ p999, max float64 }

// simTail is how many of a run's 10000 periods are in the tail: its
// p99.9 is the 10th latest of them.
const simTail = 1000

func simulate(rng *rand.Rand, scale float64, top []float64) simRun {
	machine := math.Exp(0.2 * rng.NormFloat64())
	clear(top) // the 10 latest, in ascending order
	for range simTail {
		v := 20 + scale*machine*10*math.Pow(1-rng.Float64(), -1/3.0)
		if v <= top[0] {
			continue
		}
		i := 1
		for i < len(top) && top[i] < v {
			top[i-1] = top[i]
			i++
		}
		top[i-1] = v
	}
	stall := scale * 100 * math.Pow(1-rng.Float64(), -1/1.2)
	return simRun{p999: top[0], max: max(top[len(top)-1], stall)}
}

func simRuns(rng *rand.Rand, n int, scale float64, buf []float64) (p999, maxima []float64) {
	for range n {
		r := simulate(rng, scale, buf)
		p999, maxima = append(p999, r.p999), append(maxima, r.max)
	}
	return p999, maxima
}

// Known truth: identical sources are called worse in at most 5 % of
// comparisons, on p99.9 and on the heavy-tailed maxima alike, and B with
// 1.5 × A's p99.9 is found worse with 10 runs each in at least 80 %.
func TestKnownTruth(t *testing.T) {
	const seeds, runs = 200, 10
	rng := rand.New(rand.NewPCG(44, 1))
	buf := make([]float64, 10)
	var falseP999, falseMax, found, foundMax int
	for range seeds {
		ap, am := simRuns(rng, runs, 1, buf)
		bp, bm := simRuns(rng, runs, 1, buf)
		if Compare(ap, bp, 0, 10).Word == Worse {
			falseP999++
		}
		if Compare(am, bm, 0, 10).Word == Worse {
			falseMax++
		}
		wp, wm := simRuns(rng, runs, 1.5, buf)
		if Compare(ap, wp, 0, 10).Word == Worse {
			found++
		}
		if Compare(am, wm, 0, 10).Word == Worse {
			foundMax++
		}
	}
	t.Logf("%d comparisons of %d runs each: identical called worse %d (p99.9), %d (max); 1.5× found %d (p99.9), %d (max, heavy-tailed)",
		seeds, runs, falseP999, falseMax, found, foundMax)
	if falseP999 > seeds*5/100 || falseMax > seeds*5/100 {
		t.Errorf("identical sources called worse: %d and %d of %d", falseP999, falseMax, seeds)
	}
	if found < seeds*80/100 {
		t.Errorf("1.5× p99.9 found worse in %d of %d", found, seeds)
	}
}

// One run each never decides, whatever the figures.
func TestKnownTruthOneRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 2))
	buf := make([]float64, 10)
	for range 20 {
		a, b := simulate(rng, 1, buf), simulate(rng, 3, buf)
		if d := Compare([]float64{a.p999}, []float64{b.p999}, 0, 10); d.Word != CannotTell {
			t.Fatalf("one run each decided: %s", d)
		}
	}
}
