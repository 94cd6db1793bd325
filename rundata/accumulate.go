package rundata

import "math"

// Accumulator turns a phase's samples into its run.json figures one at a
// time, so that memory stays flat however long the phase. It owns every
// rule of that accounting — xruns, pointer jumps, the lateness against the
// fitted grid, the headroom, the CPU loop's ±100 µs window, the buffer
// verdicts — for the run as it measures and for a reader rebuilding the
// figures of a killed run from its samples file, so that the two cannot
// disagree. What a samples file does not hold stays as run.json has it on
// recovery: the split of the latency at the pointer update (the file keeps
// each period's Boundary, not the update's own instant).
type Accumulator struct {
	// Hist is the latency histogram of the periods added so far.
	Hist *Histogram
	// Sides holds the duplex sides' and the poll wait's distributions.
	Sides *SideStats

	update    *Histogram // the period's end to its pointer update (Sample.UpdateSplit)
	wake      *Histogram // the pointer update to the wakeup
	link      linkAcc    // the period's end on the card's link clock before its Boundary (Sample.LinkBefore)
	late      LateMeter
	periodNS  int64
	bufFrames int64 // frames in the whole buffer
	rate      int64
	nominal   int64 // nominal CPU loop, ns (0: unknown)
	card      int64 // frames the card holds beyond the buffer (CardAhead)

	periods  int64
	xruns    int
	xrunNS   int64
	workLate int   // xruns whose wakeup was in time (Sample.WorkLate)
	jumps    int   // pointer jumps (FlagPointerJump)
	headroom int64 // least frames queued at a wakeup without an xrun; -1 before one
	dspMax   int64
	dspMin   int64 // shortest CPU loop; -1 before one
	dspNear  int64 // CPU loops within 100 µs of the nominal
	firstDue int64
	lastDue  int64
	lastLat  int64

	frames   int64 // per period
	clock    clockSpan
	lastWoke int64
	caughtUp int64 // periods due before the one before them woke
}

// clockSpan finds the longest stretch of periods without an xrun or a
// pointer jump, over which the card's clock is measured against the
// system's: periods counted by their index (lost samples still count),
// from the first period's due instant to the last's.
type clockSpan struct {
	on              bool
	fromIdx, fromNS int64
	bestN, bestNS   int64
}

func (c *clockSpan) add(s *Sample) {
	if s.Xrun > 0 || s.Flags&FlagPointerJump != 0 {
		c.on = false
		return
	}
	if !c.on {
		c.on, c.fromIdx, c.fromNS = true, s.Index, s.Boundary()
		return
	}
	if ns := s.Boundary() - c.fromNS; ns > c.bestNS {
		c.bestN, c.bestNS = s.Index-c.fromIdx, ns
	}
}

// minClockNS is the least stretch the clock is measured over: at 1 s a
// wakeup's 100 µs of jitter is 100 ppm, below a crystal's error.
const minClockNS = 1e9

// hz is the card's frame rate on the system clock, 0 without a stretch
// long enough.
func (c *clockSpan) hz(frames int64) float64 {
	if c.bestNS < minClockNS {
		return 0
	}
	return float64(c.bestN*frames) * 1e9 / float64(c.bestNS)
}

// NewAccumulator starts the accounting of a stream of the shape h
// describes (its rate, period and buffer sizes; FirstDue is not used);
// nominalDSP is the phase's nominal CPU loop in ns (0 when unknown).
func NewAccumulator(h SampleHeader, nominalDSP int64) *Accumulator {
	return &Accumulator{
		Hist:      NewHistogram(DefaultHistUS),
		Sides:     newSideStats(),
		update:    NewHistogram(DefaultHistUS),
		wake:      NewHistogram(DefaultHistUS),
		periodNS:  periodOf(h),
		bufFrames: int64(h.Frames) * int64(h.Periods),
		rate:      int64(h.Rate),
		frames:    int64(h.Frames),
		nominal:   nominalDSP,
		headroom:  -1,
		dspMin:    -1,
	}
}

// Add counts one period.
func (a *Accumulator) Add(s *Sample) {
	lat := s.Latency()
	a.Hist.Add(lat)
	a.Sides.Add(s)
	a.late.Add(s)
	if u, w, ok := s.UpdateSplit(); ok {
		a.update.Add(u)
		a.wake.Add(w)
	}
	if l, ok := s.LinkBefore(); ok {
		a.link.add(l)
	}
	due := s.Boundary()
	if a.periods == 0 {
		a.firstDue = due
	}
	if a.periods > 0 && due < a.lastWoke {
		a.caughtUp++
	}
	a.lastDue, a.lastLat, a.lastWoke = due, lat, s.Woke
	a.periods++
	a.clock.add(s)
	if s.Xrun > 0 {
		a.xruns++
		a.xrunNS += s.Xrun
		if a.frames > 0 && s.WorkLate(a.periodNS, int(a.bufFrames/a.frames)) {
			a.workLate++
		}
	} else if q := a.bufFrames - int64(s.Avail); a.headroom < 0 || q < a.headroom {
		a.headroom = max(q, 0)
	}
	if s.Flags&FlagPointerJump != 0 {
		a.jumps++
	}
	if a.nominal > 0 {
		a.dspMax = max(a.dspMax, s.DSP)
		if a.dspMin < 0 || s.DSP < a.dspMin {
			a.dspMin = s.DSP
		}
		if d := s.DSP - a.nominal; d <= 100_000 && d >= -100_000 {
			a.dspNear++
		}
	}
}

// Fill writes the figures of the periods added into p. A start p already
// has (the stream's opening) is kept; without one the first period's due
// instant is the start. The periods lost (Phase.Lost) are the caller's to
// set, before Fill for the verdict to heed them (Phase.Settled): the run
// has them from the engine, a reader from the samples file.
func (a *Accumulator) Fill(p *Phase) {
	p.Periods = a.periods
	FillPhase(p, a.Hist)
	if a.update.Count > 0 {
		u, w := a.update.Stats(), a.wake.Stats()
		p.UpdateDelay, p.AfterUpdate = &u, &w
	}
	p.OnCardClock = int64(a.update.Count)
	if l := a.link.stats(); l != nil {
		p.LinkBeforeDue = l
	}
	a.Sides.Fill(p)
	p.Xruns = a.xruns
	p.XrunMSTotal = float64(a.xrunNS) / 1e6
	p.XrunsWorkLate = a.workLate
	p.PointerJumps = a.jumps
	p.CaughtUp = a.caughtUp
	p.ClockHz = math.Round(a.clock.hz(a.frames)*10) / 10
	if a.periodNS > 0 {
		// The card's delay counts where nothing says it did not stand in
		// for the buffer: an xrun at this size drops it from the rule.
		var card int64
		if a.xruns == 0 && a.rate > 0 {
			card = a.card * 1e9 / a.rate
		}
		p.Safe, p.SafeAtDefaultLoad = a.late.Verdicts(a.periodNS, card, DefaultCPULoad)
		if a.frames > 0 {
			p.Safe = p.Settled(p.Safe, int(a.bufFrames/a.frames), a.periodNS)
		}
	}
	p.CPULoop = CPULoop{NominalUS: float64(a.nominal) / 1000}
	if a.periods == 0 {
		return
	}
	if p.StartMonoNS == 0 {
		p.StartMonoNS = a.firstDue
	}
	p.EndMonoNS = a.lastDue
	if a.headroom >= 0 && a.rate > 0 {
		p.HeadroomMinUS = float64(a.headroom) * 1e6 / float64(a.rate)
	}
	if a.nominal > 0 {
		p.CPULoop.MaxUS = float64(a.dspMax) / 1000
		p.CPULoop.MinUS = float64(max(a.dspMin, 0)) / 1000
		p.CPULoop.Within100USPct = 100 * float64(a.dspNear) / float64(a.periods)
	}
}

// CardDelay gives the verdicts the frames the card holds beyond the
// buffer (CardAhead: the delay its driver reported at the phase's end),
// before Fill; none until it is given.
func (a *Accumulator) CardDelay(frames int64) { a.card = frames }

// Periods is the number of periods added.
func (a *Accumulator) Periods() int64 { return a.periods }

// Xruns is the number of xruns among them.
func (a *Accumulator) Xruns() int { return a.xruns }

// Span is the due instants of the first and the last period added (0, 0
// before the first).
func (a *Accumulator) Span() (first, last int64) { return a.firstDue, a.lastDue }

// LastLatency is the last period's wakeup latency, ns: cyclictest's Act.
func (a *Accumulator) LastLatency() int64 { return a.lastLat }

// NominalDSP is the phase's nominal CPU loop, ns, as the samples file
// does not hold it: from run.json's figure in µs.
func NominalDSP(p *Phase) int64 { return int64(math.Round(p.CPULoop.NominalUS * 1000)) }

// periodOf is a samples file's period, ns (0 when its header has no rate).
func periodOf(h SampleHeader) int64 {
	if h.Rate == 0 {
		return 0
	}
	return int64(h.Frames) * 1e9 / int64(h.Rate)
}

// clockTolerance is how far a card's clock may be off its nominal rate
// and still be a crystal's error (±0.5 %; a few hundred ppm is usual).
const clockTolerance = 0.005

// ClockOff is how far the card's measured clock is from the nominal rate,
// as a fraction (-0.87: 87 % slow), and whether that is beyond a
// crystal's error: then the card's periods are not the nominal ones, and
// its time is not the system's. 0, false when the clock was not measured.
func (p *Phase) ClockOff(rate int) (float64, bool) {
	if p.ClockHz == 0 || rate <= 0 {
		return 0, false
	}
	off := p.ClockHz/float64(rate) - 1
	return off, math.Abs(off) > clockTolerance
}
