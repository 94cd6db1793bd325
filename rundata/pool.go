package rundata

import (
	"math"
	"time"
)

// Pool fills p's figures from its parts', the phases of one load measured
// apart: the CPUs of a phase of run --cpus (FromCPUs) or the repetitions
// of run --repeat (the report's run-to-run tables, compare). One rule for
// both, so that a pooled figure never drops what a part had:
//
//   - all is the histogram of every part's periods together and gives the
//     distribution (Latency, the percentages, Overflow, Underflow); nil
//     when a part has none, and the distribution is the caller's then.
//   - the counts are summed: periods, xruns and their time, pointer jumps,
//     periods caught up, periods lost (a part that handed over none may
//     still have lost some), RT throttling.
//   - the verdict, the headroom and the CPU loop's extremes are the worst
//     part's: each is an extreme over periods, so the worst part's is the
//     extreme over all. A part that measured periods without a verdict
//     leaves the pool without one, since its latest write is unknown.
//   - what keeps a phase from holding (Incomplete, CutShort) is any
//     part's, added to p's own.
//   - the span, on both clocks, is the earliest start and the latest end
//     of p's own and the parts' (zero: not known).
//   - the card's clock is the mean of the parts that measured one,
//     weighted by their periods: each measured the same card.
//
// It leaves the rest to the caller: the other distributions (UpdateDelay,
// the sides', PollWait), which need the samples; what the machine was
// doing (LoadAvg, StealPct), one reading per phase; and what was read
// once, at an end (Break, CardReported, Sound, StressorStats).
func (p *Phase) Pool(parts []*Phase, all *Histogram) {
	p.Periods, p.Xruns, p.XrunMSTotal, p.PointerJumps, p.CaughtUp, p.Lost = 0, 0, 0, 0, 0, 0
	p.XrunsWorkLate, p.OnCardClock = 0, 0
	p.RTThrottled, p.RTThrottledNS, p.Overflow, p.Underflow = 0, 0, 0, 0
	p.Safe, p.SafeAtDefaultLoad, p.HeadroomMinUS, p.ClockHz = nil, nil, 0, 0
	p.CPULoop = CPULoop{}
	var near, hz, hzPeriods float64 // CPU loops within 100 µs of the nominal, and clocks, weighted by periods
	headroom, verdict := false, true
	for _, c := range parts {
		p.Xruns += c.Xruns
		p.XrunMSTotal += c.XrunMSTotal
		p.XrunsWorkLate += c.XrunsWorkLate
		p.PointerJumps += c.PointerJumps
		p.OnCardClock += c.OnCardClock
		p.CaughtUp += c.CaughtUp
		p.Lost += c.Lost
		p.RTThrottled += c.RTThrottled
		p.RTThrottledNS += c.RTThrottledNS
		p.Overflow += c.Overflow
		p.Underflow += c.Underflow
		p.Incomplete = p.Incomplete || c.Incomplete
		p.CutShort = p.CutShort || c.CutShort
		p.widen(c)
		if c.Periods == 0 {
			continue
		}
		if p.Periods == 0 {
			p.CPULoop = c.CPULoop
		} else {
			p.CPULoop.MinUS, p.CPULoop.MaxUS = min(p.CPULoop.MinUS, c.CPULoop.MinUS), max(p.CPULoop.MaxUS, c.CPULoop.MaxUS)
		}
		p.Periods += c.Periods
		near += c.CPULoop.Within100USPct * float64(c.Periods)
		verdict = verdict && c.Safe != nil
		p.Safe, p.SafeAtDefaultLoad = worseSafe(p.Safe, c.Safe), worseSafe(p.SafeAtDefaultLoad, c.SafeAtDefaultLoad)
		if c.Periods > int64(c.Xruns) && (!headroom || c.HeadroomMinUS < p.HeadroomMinUS) {
			p.HeadroomMinUS, headroom = c.HeadroomMinUS, true
		}
		if c.ClockHz != 0 {
			hz, hzPeriods = hz+c.ClockHz*float64(c.Periods), hzPeriods+float64(c.Periods)
		}
	}
	if !verdict {
		p.Safe, p.SafeAtDefaultLoad = nil, nil
	}
	if p.Periods > 0 {
		p.CPULoop.Within100USPct = near / float64(p.Periods)
	}
	if hzPeriods > 0 {
		p.ClockHz = math.Round(hz/hzPeriods*10) / 10 // as Accumulator.Fill rounds it
	}
	if all != nil {
		FillPhase(p, all)
	}
}

// widen stretches p's span, on both clocks, over c's.
func (p *Phase) widen(c *Phase) {
	if c.StartMonoNS != 0 && (p.StartMonoNS == 0 || c.StartMonoNS < p.StartMonoNS) {
		p.StartMonoNS = c.StartMonoNS
	}
	p.EndMonoNS = max(p.EndMonoNS, c.EndMonoNS)
	p.StartWall = earlier(p.StartWall, c.StartWall)
	if c.EndWall.After(p.EndWall) {
		p.EndWall = c.EndWall
	}
}

// earlier is the earlier of two instants, a zero one not known.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// FromCPUs fills the figures of a phase of run --cpus from its CPUs'
// (Pool), all being the histogram of every CPU's periods together. The
// run and a reader recovering a killed run's figures both fill them so.
// The card's clock is the card's thread's alone (the first CPU's, when a
// card's stream runs there beside timer threads): a timer thread's
// virtual card is no clock to average it with.
func (p *Phase) FromCPUs(all *Histogram) {
	parts := make([]*Phase, len(p.CPUs))
	for i := range p.CPUs {
		parts[i] = &p.CPUs[i].Phase
	}
	p.Pool(parts, all)
	p.ClockHz = 0
	if len(p.CPUs) > 0 {
		p.ClockHz = p.CPUs[0].ClockHz
	}
}

// worseSafe is the verdict of the later write of the two: the larger
// buffer, and at the same buffer the smaller margin; nil counts as none.
func worseSafe(a, b *Safe) *Safe {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case b.Periods > a.Periods || (b.Periods == a.Periods && b.MarginNS < a.MarginNS):
		return b
	}
	return a
}
