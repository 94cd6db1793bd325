package rundata

import (
	"fmt"
	"strings"
)

// GlitchTrace is what the kernel's tracer had at a glitch heard through
// the loopback (Glitch.Trace): the spike window it fell in (SpikePeriod,
// the spike's period in the phase) and that window's culprit (Spike.Culprit),
// or, with neither, why: None.
type GlitchTrace struct {
	SpikePeriod *int64 `json:"spike_period,omitempty"`
	Culprit     *Cause `json:"culprit,omitempty"`
	None        string `json:"none,omitempty"`
}

// Why a glitch has no culprit (GlitchTrace.None).
const (
	// The tracer was not recording (it could not start), or the
	// glitch's instant is not known (CaptureMap.At): nothing to line it
	// up with.
	GlitchNoTrace = "no trace window"
	// The tracer recorded, and no spike's window was at the glitch: the
	// audio thread was on time then (within run --trace-above).
	GlitchNoSpike = "no spike at that time"
	// No spike's window was at the glitch, but the tracer left some of
	// the phase's spikes unexplained (its per-phase limit, or its queue
	// full): one may have been.
	GlitchSpikesDropped = "no spike recorded at that time (the trace dropped some of the phase's spikes)"
)

// SpikeHeard marks a spike whose window a glitch heard in the loopback's
// capture fell in (Spike.Heard): the window's culprit (Spike.Culprit), the
// one heard, and the glitches' places in the capture (Glitch.AtMS).
type SpikeHeard struct {
	Culprit      Cause     `json:"culprit"`
	GlitchesAtMS []float64 `json:"glitches_at_ms"`
}

// Culprit is what took most of the spike's window: its largest cause, or
// its unexplained time (Kind "", "unexplained") where that is larger or
// there is no cause.
func (s Spike) Culprit() Cause {
	top := Cause{Name: "unexplained", NS: s.UnexplainedNS}
	for _, c := range s.Causes {
		if c.NS > top.NS {
			top = c
		}
	}
	return top
}

// heardSlackNS is how far from a window a glitch's instant may lie and
// still be that window's: the sine places a break to within a millisecond
// (seamToleranceMS).
const heardSlackNS = int64(seamToleranceMS * 1e6)

// SpikesOf says which spikes a phase's glitches are lined up with
// (LineUpTrace), and what the tracer did in the phase.
type SpikesOf struct {
	Phase int // the phase's index in run.json, the spikes' Phase
	// CPU is, under run --cpus, the CPU of the thread that moves the
	// sound (the first listed): the others are timers, which break no
	// sound, and their spikes are left out. AnyCPU otherwise.
	CPU int
	// Traced: the tracer recorded during the phase. Dropped: it left
	// some of the phase's spikes unexplained (ktrace.Recorder.Dropped).
	Traced, Dropped bool
}

// AnyCPU is SpikesOf.CPU where one thread moves the sound, wherever it ran.
const AnyCPU = -1

// LineUpTrace lines the glitches of a phase (snd, already lined up with
// the samples by CaptureMap.LineUp) up with the trace's spikes ss (of
// every phase, as spikes.json holds them): each glitch's Trace, and each
// spike a glitch fell in its Heard. It is the one line-up run.json,
// spikes.json, the report and the terminal read; run again over the same
// spikes it gives the same.
//
// A glitch at an xrun's seam (GlitchXrun) is that xrun's spike's, by its
// period: every xrun is a spike. Any other falls in the window, [due_ns,
// due_ns + the window), that comes within a millisecond of the span its
// sound can have broken in: from its capture instant (AtNS) less the card
// delay (the longest read, card_delay_frames: a break of the playback is
// captured that much after it was played) to its capture instant. Of two
// such windows the one nearest the capture instant is taken, the earlier
// on a tie. A glitch without a window gets no culprit: the time is not
// shared out, so none is guessed.
func LineUpTrace(snd *Sound, ss []Spike, of SpikesOf) {
	if snd == nil {
		return
	}
	mine := func(sp Spike) bool { return sp.Phase == of.Phase && (of.CPU == AnyCPU || sp.CPU == of.CPU) }
	for i := range ss {
		if mine(ss[i]) {
			ss[i].Heard = nil
		}
	}
	var delayNS int64
	if snd.CardDelay != nil && snd.Rate > 0 {
		delayNS = int64(max(snd.CardDelay.Max, 0)) * 1e9 / int64(snd.Rate)
	}
	for gi := range snd.Glitches {
		g := &snd.Glitches[gi]
		g.Trace = &GlitchTrace{}
		if !of.Traced {
			g.Trace.None = GlitchNoTrace
			continue
		}
		k := -1
		switch {
		case g.With == GlitchXrun:
			for i, sp := range ss {
				if mine(sp) && sp.Period == g.Period {
					k = i
					break
				}
			}
		case g.AtNS == 0:
			g.Trace.None = GlitchNoTrace
			continue
		default:
			k = nearestWindow(ss, mine, g.AtNS-delayNS-heardSlackNS, g.AtNS+heardSlackNS, g.AtNS)
		}
		if k < 0 {
			g.Trace.None = GlitchNoSpike
			if of.Dropped {
				g.Trace.None = GlitchSpikesDropped
			}
			continue
		}
		sp := &ss[k]
		c, p := sp.Culprit(), sp.Period
		g.Trace.SpikePeriod, g.Trace.Culprit = &p, &c
		if sp.Heard == nil {
			sp.Heard = &SpikeHeard{Culprit: c}
		}
		sp.Heard.GlitchesAtMS = append(sp.Heard.GlitchesAtMS, g.AtMS)
	}
}

// nearestWindow is the index in ss of the spike of mine whose window
// meets [from, to] nearest at, the earlier on a tie; -1 for none.
func nearestWindow(ss []Spike, mine func(Spike) bool, from, to, at int64) int {
	best, bestD := -1, int64(0)
	for i, sp := range ss {
		start, end := sp.DueNS, sp.DueNS+sp.WindowNS()
		if !mine(sp) || end < from || start > to {
			continue
		}
		var d int64
		switch {
		case at < start:
			d = start - at
		case at > end:
			d = at - end
		}
		if best < 0 || d < bestD || d == bestD && sp.DueNS < ss[best].DueNS {
			best, bestD = i, d
		}
	}
	return best
}

// Cause is what the trace had at the glitch, in a few words: the culprit
// of the spike window it fell in ("lt-culprit (SCHED_FIFO 90)"), or why
// there is none ("no spike at that time"); "" without --trace.
func (g Glitch) Cause() string {
	switch t := g.Trace; {
	case t == nil:
		return ""
	case t.Culprit != nil:
		return t.Culprit.String()
	case t.None != "":
		return t.None
	}
	return GlitchNoTrace
}

// CauseText is Cause with the spike's period, for a list of the
// glitches: "lt-culprit (SCHED_FIFO 90) in the spike of period 812".
func (g Glitch) CauseText() string {
	if t := g.Trace; t != nil && t.Culprit != nil && t.SpikePeriod != nil {
		return fmt.Sprintf("%s in the spike of period %d", g.Cause(), *t.SpikePeriod)
	}
	return g.Cause()
}

// glitchCausesText counts the run's glitches heard by what the trace had
// at them (Glitch.Cause), for the closing block's heard line: "lt-culprit
// (SCHED_FIFO 90) 2, no spike at that time 1"; "" where none was traced.
func glitchCausesText(r *Run) string {
	var order []string
	n := map[string]int{}
	for _, ph := range r.Phases {
		if ph.Sound == nil {
			continue
		}
		for _, g := range ph.Sound.Glitches {
			what := g.Cause()
			if what == "" {
				continue
			}
			if n[what] == 0 {
				order = append(order, what)
			}
			n[what]++
		}
	}
	parts := make([]string, len(order))
	for i, w := range order {
		parts[i] = fmt.Sprintf("%s %d", w, n[w])
	}
	return strings.Join(parts, ", ")
}
