package rundata

// Recovery rebuilds a phase's run.json figures from its samples file, for
// a phase whose run was killed before it wrote them (Phase.Incomplete).
// What the samples file does not hold stays as run.json has it: the
// lateness against the fitted grid (the file keeps no grid instant) and
// the stressor's figures.
type Recovery struct {
	// Hist is the latency histogram of the periods added so far.
	Hist *Histogram
	// Sides holds the duplex sides' and the poll wait's distributions.
	Sides     *SideStats
	periods   int64
	xruns     int
	xrunNS    int64
	firstDue  int64
	lastDue   int64
	dspMax    int64
	dspNear   int64 // DSP loops within 100 µs of the nominal
	nominal   int64 // nominal DSP loop, ns (0: unknown)
	headroom  int64 // least frames queued at a wakeup without an xrun; -1 before one
	late      LateMeter
	periodNS  int64
	bufFrames int64
	rate      int64
}

// NewRecovery starts a recovery for a samples file with header h;
// nominalDSP is the phase's nominal CPU loop in ns (0 when unknown).
func NewRecovery(h SampleHeader, nominalDSP int64) *Recovery {
	return &Recovery{
		Hist:      NewHistogram(DefaultHistUS),
		Sides:     NewSideStats(),
		nominal:   nominalDSP,
		headroom:  -1,
		bufFrames: int64(h.Frames) * int64(h.Periods),
		rate:      int64(h.Rate),
		periodNS:  periodOf(h),
	}
}

// Add counts one period read from the samples file.
func (r *Recovery) Add(s *Sample) {
	r.Hist.Add(s.Latency())
	r.Sides.Add(s)
	if r.periods == 0 {
		r.firstDue = s.Due
	}
	r.lastDue = s.Due
	r.periods++
	r.late.Add(s)
	if s.Xrun > 0 {
		r.xruns++
		r.xrunNS += s.Xrun
	} else if q := r.bufFrames - int64(s.Avail); r.headroom < 0 || q < r.headroom {
		r.headroom = max(q, 0)
	}
	if r.nominal > 0 {
		r.dspMax = max(r.dspMax, s.DSP)
		if d := s.DSP - r.nominal; d <= 100_000 && d >= -100_000 {
			r.dspNear++
		}
	}
}

// Fill writes the recovered figures into p; lost is the count of lost
// periods the samples file recorded (SampleReader.Lost).
func (r *Recovery) Fill(p *Phase, lost int64) {
	p.Periods = r.periods
	FillPhase(p, r.Hist)
	r.Sides.Fill(p)
	p.Xruns = r.xruns
	if r.periodNS > 0 {
		p.Safe, p.SafeAtDefaultLoad = r.late.Verdicts(r.periodNS, DefaultCPULoad)
	}
	p.XrunMSTotal = float64(r.xrunNS) / 1e6
	p.Lost = lost
	if r.periods == 0 {
		return
	}
	if p.StartMonoNS == 0 {
		p.StartMonoNS = r.firstDue
	}
	p.EndMonoNS = r.lastDue
	if r.headroom >= 0 && r.rate > 0 {
		p.HeadroomMinUS = float64(r.headroom) * 1e6 / float64(r.rate)
	}
	if r.nominal > 0 {
		p.CPULoop.MaxUS = float64(r.dspMax) / 1000
		p.CPULoop.Within100USPct = 100 * float64(r.dspNear) / float64(r.periods)
	}
}

// periodOf is a samples file's period, ns (0 when its header has no rate).
func periodOf(h SampleHeader) int64 {
	if h.Rate == 0 {
		return 0
	}
	return int64(h.Frames) * 1e9 / int64(h.Rate)
}
