// Package decide says whether one source's figure differs from another's
// by more than the spread of their runs allows, and in which direction.
//
// A run's tail figures (p99.9, the max) move from one run to the next on
// the same kernel by far more than their periods' count suggests: the
// periods of one run share its machine state and are not independent, so
// the unit of evidence is the run. Per-run maxima are heavy-tailed (one
// run in ten may be three times its neighbours), so the method is
// rank-based: the Hodges–Lehmann estimate of the ratio B/A (the median of
// every pairwise ratio b/a) with the interval that the Mann–Whitney test
// inverts. The interval is exact for any distribution of the runs where B
// is A scaled, needs no resampling (no seed, the same runs always give the
// same answer), and an outlying run counts as one rank, not as its size.
package decide

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Confidence is the two-sided coverage of every interval.
const Confidence = 0.95

// SuggestedRuns is how many runs each source should have when it has too
// few for any interval: the fewest equal counts (4 each) that give a 95 %
// interval at all, and one more so that it can be narrower than the runs'
// range.
const SuggestedRuns = 5

// MaxRunsNeeded caps the estimate of runs that would tell: beyond it the
// difference is too small for repeated runs to find.
const MaxRunsNeeded = 1000

// Word is a decision in one word (or a few).
type Word string

// The four answers. Same is "no difference larger than X %": the whole
// interval within 1 ± X %.
const (
	Worse      Word = "worse"
	Better     Word = "better"
	Same       Word = "no difference"
	CannotTell Word = "cannot tell"
)

// Side is where an interval lies against a bound.
type Side int

// An interval is wholly Below a bound (its top at or under it), wholly
// Above it, or Straddles it.
const (
	Straddles Side = iota
	Below
	Above
)

// Against says where [lo, hi] lies against bound: the one test every
// decision here and every goal judged on an interval uses (compare's
// words, --fail-if-worse, benchstat's goals), so that none decides on a
// point figure alone.
func Against(lo, hi, bound float64) Side {
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi):
		return Straddles
	case hi <= bound:
		return Below
	case lo > bound:
		return Above
	}
	return Straddles
}

// Decision is B against A on one figure.
type Decision struct {
	// Ratio is B over A (the Hodges–Lehmann estimate), Lo and Hi its
	// 95 % interval; NaN where there is none (too few runs).
	Ratio, Lo, Hi float64
	RunsA, RunsB  int
	Word          Word
	// WithinPct is X of "no difference larger than X %".
	WithinPct float64
	// RunsNeeded is, when Word is CannotTell, about how many runs each
	// source would need for the interval to decide, at most 1000 (more:
	// the difference is too small for runs to find).
	RunsNeeded int
	// Why says why the runs cannot tell, when it is not their spread.
	Why string
}

// HasInterval says whether the runs gave an interval at all.
func (d Decision) HasInterval() bool { return !math.IsNaN(d.Lo) && !math.IsNaN(d.Hi) }

// Exceeds judges d against "B is more than pct % above A" (compare
// --fail-if-worse): Above is decided worse by more than pct, Below
// decided not, Straddles the spread cannot tell.
func (d Decision) Exceeds(pct float64) Side {
	if !d.HasInterval() {
		return Straddles
	}
	return Against(d.Lo, d.Hi, 1+pct/100)
}

// String is the decision as a table shows it: "worse: 1.52× [1.31, 1.80]",
// "cannot tell: 1.03× [0.71, 1.40]; ~24 runs each would likely tell".
func (d Decision) String() string {
	s := d.Label()
	if r := d.Interval(); r != "" {
		s += ": " + r
	}
	if n := d.Note(); n != "" {
		s += "; " + n
	}
	return s
}

// Label is the word as said: "no difference > 10 %" for Same.
func (d Decision) Label() string {
	if d.Word == Same {
		return fmt.Sprintf("no difference > %g %%", d.WithinPct)
	}
	return string(d.Word)
}

// Note says, when the runs cannot tell, why where it is not their spread
// and how many runs would likely tell; "" otherwise.
func (d Decision) Note() string {
	if d.Word != CannotTell {
		return ""
	}
	var parts []string
	if d.Why != "" {
		parts = append(parts, d.Why)
	}
	switch {
	case d.Why == OneRunEach:
	case d.RunsNeeded >= MaxRunsNeeded:
		parts = append(parts, fmt.Sprintf("more than %d runs each would be needed", MaxRunsNeeded))
	case d.RunsNeeded > 0:
		parts = append(parts, fmt.Sprintf("~%d runs each would likely tell", d.RunsNeeded))
	}
	return strings.Join(parts, ", ")
}

// Interval is the ratio and its interval, "1.52× [1.31, 1.80]" ("" for
// no ratio, the ratio alone for no interval).
func (d Decision) Interval() string {
	s := ""
	if !math.IsNaN(d.Ratio) {
		s = fmt.Sprintf("%.2f×", d.Ratio)
	}
	if d.HasInterval() {
		s += fmt.Sprintf(" [%.2f, %.2f]", d.Lo, d.Hi)
	}
	return strings.TrimSpace(s)
}

// OneRunEach is what a decision says when neither source has more than
// one run: one run's figure against another's says nothing of the
// run-to-run spread.
const OneRunEach = "one run each cannot tell a difference from the run-to-run spread: give run --repeat 5"

// Compare decides B against A from their runs' figures (one per run),
// withinPct being X of "no difference larger than X %". unit is added to
// every figure before the ratio is taken, so that a figure that can be 0
// (xruns) still has one: 0 against 0 is a ratio of 1, 3 against 0 one of
// (3+unit)/unit; 0 for latencies, whose figures are positive. Figures
// that are NaN are left out (a run without that figure).
func Compare(a, b []float64, unit, withinPct float64) Decision {
	a, b = Finite(a), Finite(b)
	d := Decision{Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), RunsA: len(a), RunsB: len(b),
		Word: CannotTell, WithinPct: withinPct}
	if len(a) == 0 || len(b) == 0 {
		d.Why = "a source has no such figure"
		return d
	}
	la, lb := logs(a, unit), logs(b, unit)
	if la == nil || lb == nil {
		d.Why = "a figure is not above 0, so no ratio"
		return d
	}
	diffs := pairwise(la, lb)
	d.Ratio = math.Exp(sortedMedian(diffs))
	if len(a) == 1 && len(b) == 1 {
		d.Why, d.RunsNeeded = OneRunEach, SuggestedRuns
		return d
	}
	k := criticalRank(len(a), len(b), (1-Confidence)/2)
	if k == 0 {
		d.Why = fmt.Sprintf("%d runs against %d give no 95 %% interval", len(a), len(b))
		d.RunsNeeded = max(SuggestedRuns, runsNeeded(d.Ratio, math.Exp(diffs[0]), math.Exp(diffs[len(diffs)-1]), len(a), len(b), withinPct))
		return d
	}
	d.Lo, d.Hi = math.Exp(diffs[k-1]), math.Exp(diffs[len(diffs)-k])
	d.Word = word(d.Lo, d.Hi, withinPct)
	if d.Word == CannotTell {
		d.RunsNeeded = runsNeeded(d.Ratio, d.Lo, d.Hi, len(a), len(b), withinPct)
	}
	return d
}

// word is the decision an interval of B/A makes: worse or better when it
// leaves 1 on one side, no difference when it fits in 1 ± X %, cannot
// tell when it holds 1 and reaches beyond X.
func word(lo, hi, withinPct float64) Word {
	switch {
	case Against(lo, hi, 1) == Above:
		return Worse
	case hi < 1:
		return Better
	case Against(lo, hi, 1+withinPct/100) == Below && lo >= 1-withinPct/100:
		return Same
	}
	return CannotTell
}

// runsNeeded estimates how many runs each source would need for an
// interval like [lo, hi] around ratio to decide its word: narrower than
// the ratio's distance from 1 (worse, better), or than its distance from
// the edge of 1 ± X % (no difference), whichever is larger.
func runsNeeded(ratio, lo, hi float64, na, nb int, withinPct float64) int {
	c := math.Abs(math.Log(ratio))
	return runsToNarrow(lo, hi, na, nb, max(c, math.Log(1+withinPct/100)-c))
}

// RunsFor estimates how many runs each source would need for an interval
// like d's to lie wholly on one side of bound (compare --fail-if-worse's
// 1 + PCT %); d.RunsNeeded where d has no interval.
func (d Decision) RunsFor(bound float64) int {
	if !d.HasInterval() {
		return d.RunsNeeded
	}
	return runsToNarrow(d.Lo, d.Hi, d.RunsA, d.RunsB, math.Abs(math.Log(d.Ratio)-math.Log(bound)))
}

// RoundsFor is RunsFor for a ratio taken round by round (the benchmark's:
// each round pairs one run of each tool): how many rounds would likely put
// an interval like [lo, hi] about ratio, from n rounds, wholly on one side
// of bound.
func RoundsFor(ratio, lo, hi float64, n int, bound float64) int {
	return runsToNarrow(lo, hi, n, n, math.Abs(math.Log(ratio)-math.Log(bound)))
}

// runsToNarrow is how many runs each source would need for the half-width
// of [lo, hi] (in logarithms) to shrink below t: it shrinks as the square
// root of the runs, and both sources are taken to get the same number,
// the harmonic mean of today's counts giving today's width; at most
// MaxRunsNeeded, and always more than either has; 0 when the runs showed
// no spread at all (then the fewest runs that give an interval are the
// answer: SuggestedRuns).
func runsToNarrow(lo, hi float64, na, nb int, t float64) int {
	h := (math.Log(hi) - math.Log(lo)) / 2
	switch {
	case h == 0:
		return 0
	case h < 0 || t <= 0 || math.IsNaN(h) || math.IsNaN(t):
		return MaxRunsNeeded
	}
	hm := 2 / (1/float64(na) + 1/float64(nb))
	n := math.Ceil(hm * (h / t) * (h / t))
	if n >= MaxRunsNeeded {
		return MaxRunsNeeded
	}
	return max(int(n), max(na, nb)+1)
}

// Finite is xs without NaNs and infinities (a run or a round without the
// figure), in a new slice.
func Finite(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// logs is log(x+unit) of each x, nil when one is not above 0.
func logs(xs []float64, unit float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if x+unit <= 0 {
			return nil
		}
		out[i] = math.Log(x + unit)
	}
	return out
}

// pairwise is every difference b−a, sorted.
func pairwise(a, b []float64) []float64 {
	out := make([]float64, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, y-x)
		}
	}
	slices.Sort(out)
	return out
}

// Median is the median of xs' finite values (the mean of the two middle
// ones for an even count), NaN for none; xs is not changed.
func Median(xs []float64) float64 {
	s := Finite(xs)
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	return sortedMedian(s)
}

func sortedMedian(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// exactUpTo bounds the product of the runs' counts for which U's null
// distribution is computed exactly (100 runs against 100 at most, a few
// million steps); beyond it the normal approximation is within a rank.
const exactUpTo = 10000

// criticalRank is the largest k with P(U ≤ k−1) ≤ alpha under the null
// distribution of the Mann–Whitney U of m against n: the k-th smallest and
// k-th largest pairwise differences bound the (1 − 2·alpha) interval of
// the shift. 0 when even U = 0 is likelier than alpha (too few runs).
func criticalRank(m, n int, alpha float64) int {
	if m*n > exactUpTo {
		mu, sd := float64(m*n)/2, math.Sqrt(float64(m*n*(m+n+1))/12)
		z := -math.Sqrt2 * math.Erfinv(2*alpha-1)
		return max(0, int(math.Floor(mu-z*sd+0.5)))
	}
	return exactCriticalRank(m, n, alpha)
}

// exactCriticalRank is criticalRank from U's exact null distribution.
func exactCriticalRank(m, n int, alpha float64) int {
	cum := 0.0
	for k, p := range uDistribution(m, n) {
		cum += p
		if cum > alpha {
			return k
		}
	}
	return 0
}

// uDistribution is the probability of each value of U for m against n
// runs under the null, from the generating function of U, the Gaussian
// binomial coefficient [m+n choose m]_q, built as the product over
// i = 1..m of (1 − q^(n+i)) / (1 − q^i).
func uDistribution(m, n int) []float64 {
	if m > n {
		m, n = n, m
	}
	size := m*n + 1
	c := make([]float64, size)
	c[0] = 1
	for i := 1; i <= m; i++ {
		// multiply by (1 − q^(n+i)), highest degree first
		for j := size - 1; j >= n+i; j-- {
			c[j] -= c[j-n-i]
		}
		// divide by (1 − q^i): a running sum with stride i
		for j := i; j < size; j++ {
			c[j] += c[j-i]
		}
	}
	total := 0.0
	for _, v := range c {
		total += v
	}
	for j := range c {
		c[j] /= total
	}
	return c
}
