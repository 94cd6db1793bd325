// Package benchstat decides whether one latency tool's figures are
// another's the way a shared machine's noise allows: on two shared vCPUs
// cyclictest against itself spreads 0.2–3× in max from one 10 s round to
// the next, so one pooled ratio decides nothing. The tools alternate in
// rounds; each round gives a ratio per figure, and the median of those
// ratios, with a bootstrap 95 % interval, is set beside the same of a tool
// against itself (the A/A) in the same benchmark.
package benchstat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"latencytest/internal/decide"
)

// Round is one round's figures of one tool, µs (CPU in seconds).
type Round struct {
	Periods        int64
	P99, P999, Max float64
	CPU            float64 // CPU seconds the round took, start-up included; 0: not measured
}

// CPUPerPeriod is the round's CPU time per period, µs (NaN when either is
// not known).
func (r Round) CPUPerPeriod() float64 {
	if r.CPU <= 0 || r.Periods <= 0 {
		return math.NaN()
	}
	return r.CPU * 1e6 / float64(r.Periods)
}

// Interval is a median with its bootstrap 95 % interval over N values.
type Interval struct {
	Median, Lo, Hi float64
	N              int
}

// Overlaps says whether i and j share a value.
func (i Interval) Overlaps(j Interval) bool { return i.Lo <= j.Hi && j.Lo <= i.Hi }

func (i Interval) String() string {
	if i.N == 0 {
		return "no rounds"
	}
	return fmt.Sprintf("%.2f [%.2f, %.2f]", i.Median, i.Lo, i.Hi)
}

// Resamples is how many bootstrap resamples an interval is drawn from:
// enough that the 2.5th and 97.5th percentiles of the resampled medians
// move by less than the figures' two decimals from one seed to another.
const Resamples = 10000

// MedianInterval is the median of xs with its bootstrap 95 % percentile
// interval: xs resampled with replacement Resamples times, from seed, so
// that the same rounds always give the same interval.
func MedianInterval(xs []float64, seed uint64) Interval {
	xs = decide.Finite(xs)
	if len(xs) == 0 {
		return Interval{}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c74)) // "lt"
	meds := make([]float64, Resamples)
	re := make([]float64, len(xs))
	for k := range meds {
		for i := range re {
			re[i] = xs[rng.IntN(len(xs))]
		}
		meds[k] = Median(re)
	}
	slices.Sort(meds)
	return Interval{Median: Median(xs), Lo: quantile(meds, 0.025), Hi: quantile(meds, 0.975), N: len(xs)}
}

// Median is the median of xs' finite values (NaN for none: a round with
// no figure); xs is not changed. It is decide's, compare's.
func Median(xs []float64) float64 { return decide.Median(xs) }

// quantile is the q-quantile of sorted s, interpolated between ranks.
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// Paired is one tool over another, round by round.
type Paired struct {
	Rounds              int
	P99, P999, Max, CPU Interval // of the per-round ratios A/B
}

// Pair pairs a's rounds with b's (the i-th of each ran one after the
// other) and takes each figure's per-round ratio. A round whose B figure
// is 0 gives no ratio: a ratio to nothing measures nothing.
func Pair(a, b []Round, seed uint64) (Paired, error) {
	if len(a) != len(b) {
		return Paired{}, fmt.Errorf("%d rounds against %d: rounds pair one to one", len(a), len(b))
	}
	ratios := func(f func(Round) float64) []float64 {
		var rs []float64
		for i := range a {
			if y := f(b[i]); y > 0 {
				rs = append(rs, f(a[i])/y)
			}
		}
		return rs
	}
	return Paired{
		Rounds: len(a),
		P99:    MedianInterval(ratios(func(r Round) float64 { return r.P99 }), seed),
		P999:   MedianInterval(ratios(func(r Round) float64 { return r.P999 }), seed+1),
		Max:    MedianInterval(ratios(func(r Round) float64 { return r.Max }), seed+2),
		CPU:    MedianInterval(ratios(Round.CPUPerPeriod), seed+3),
	}, nil
}

// Goals are what a tool that does not disturb what it measures must meet
// against the reference (issue 28): the per-round ratio of p99 and of
// p99.9 at most P99 and P999, judged on its interval as compare judges
// (decide.Against: met when the whole interval is within the goal, not
// met when the whole is beyond it, not decided otherwise, with how
// many rounds would likely decide), the max's interval overlapping the A/A's
// (the max of one round is one wakeup: only the noise can judge it), and
// CPU per period at most CPU times the reference's.
type Goals struct {
	P99, P999, CPU float64
}

// DefaultGoals are issue 28's.
var DefaultGoals = Goals{P99: 1.05, P999: 1.10, CPU: 1.0}

// Verdict is a paired comparison judged against goals and the A/A.
type Verdict struct {
	Paired
	AA    *Paired // the reference against itself; nil: not measured
	Goals Goals
	// CPUHow says what the CPU seconds counted: "" is a whole run's,
	// start-up counted.
	CPUHow string
}

// Lines says the verdict, a line per figure, each "met" or "not met" with
// what decided it, the A/A's interval beside it.
func (v Verdict) Lines() []string {
	var aa99, aa999, aaMax *Interval
	if v.AA != nil {
		aa99, aa999, aaMax = &v.AA.P99, &v.AA.P999, &v.AA.Max
	}
	l := []string{
		atMost("p99", v.P99, v.Goals.P99, aa99),
		atMost("p99.9", v.P999, v.Goals.P999, aa999),
		overlapping("max", v.Max, aaMax),
	}
	if v.CPU.N > 0 {
		how := v.CPUHow
		if how == "" {
			how = "start-up counted"
		}
		l = append(l, atMost("CPU per period ("+how+")", v.CPU, v.Goals.CPU, nil))
	}
	return l
}

// atMost judges a ratio against its goal by its interval, not by its
// median alone: a median within the goal whose interval reaches far
// beyond it is the rounds' noise, not a goal met.
func atMost(name string, i Interval, goal float64, aa *Interval) string {
	word := "not decided"
	if i.N > 0 {
		switch decide.Against(i.Lo, i.Hi, goal) {
		case decide.Below:
			word = "met"
		case decide.Above:
			word = "not met"
		default:
			word = notDecided(i, goal)
		}
	}
	s := fmt.Sprintf("%s %s (goal: ≤ %.2f: %s)", name, i, goal, word)
	if aa != nil {
		s += fmt.Sprintf("; A/A %s", aa)
	}
	return s
}

// notDecided says that an interval holding its goal decides nothing at
// this host's noise after its rounds, and how many would likely decide:
// an honest result to record, not a goal to chase with more hours.
func notDecided(i Interval, goal float64) string {
	s := fmt.Sprintf("not decided at this host's noise after %d rounds", i.N)
	switch n := decide.RoundsFor(i.Median, i.Lo, i.Hi, i.N, goal); {
	case n >= decide.MaxRunsNeeded:
		s += fmt.Sprintf("; more than %d would be needed", decide.MaxRunsNeeded)
	case n > 0:
		s += fmt.Sprintf("; ~%d would likely decide", n)
	}
	return s
}

// overlapping judges a ratio's interval by the A/A's.
func overlapping(name string, i Interval, aa *Interval) string {
	switch {
	case aa == nil:
		return fmt.Sprintf("%s %s (no A/A to judge it by)", name, i)
	case i.N == 0 || aa.N == 0:
		return fmt.Sprintf("%s %s; A/A %s: not decided", name, i, aa)
	}
	return fmt.Sprintf("%s %s; A/A %s (goal: the intervals overlap: %s)", name, i, aa, met(i.Overlaps(*aa)))
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
