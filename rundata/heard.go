package rundata

import (
	"cmp"
	"math"
	"slices"
)

// CaptureMap lines a loopback phase's capture up with its samples. The
// capture keeps one period for every period without an xrun and none for
// a period with one (the stream restarted instead), so the restart
// splices the capture where the last period before the xrun ended: the
// seam an xrun leaves, heard as a glitch when the sine breaks there. Add
// every sample of the phase in order; it keeps only the xruns and pointer
// jumps, so a long phase costs no more than its breaks.
type CaptureMap struct {
	kept   int64     // capture periods so far
	xruns  []capMark // the xrun periods, each at the seam it left
	jumps  []capMark // the pointer-jump periods, at the capture period they kept
	events int       // bound on the marks kept
	// anchors are kept periods' ends on CLOCK_MONOTONIC (capAnchor):
	// every anchorEvery-th, and the last before and the first after each
	// seam, so that no two anchors side by side straddle one; last is
	// the latest kept period, the anchor after the last one kept.
	anchors []capAnchor
	last    capAnchor
	anchor  bool // the next kept period is the first after a seam
}

// capAnchor is kept period kept, whose last frame was captured at ns
// (CLOCK_MONOTONIC; 0 where its sample had no instant).
type capAnchor struct {
	kept, ns int64
}

// anchorEvery is how many kept periods lie between two anchors: a few a
// second at the shortest periods, and the card's clock is linear between
// them to far better than the sine places a glitch (a millisecond).
const anchorEvery = 64

// capMark is a period of the phase (its sample's Index) at kept, the
// capture periods before it.
type capMark struct {
	kept, period int64
}

// maxCapMarks bounds the xruns and jumps a CaptureMap keeps: a phase
// that broke more often than this is beyond lining up glitch by glitch.
const maxCapMarks = 100_000

// Add takes the phase's next sample.
func (m *CaptureMap) Add(s *Sample) {
	switch {
	case s.Xrun != 0:
		if m.events < maxCapMarks {
			m.xruns = append(m.xruns, capMark{m.kept, s.Index})
			m.events++
		}
		if m.kept > 0 && !m.anchor {
			m.addAnchor(m.last) // the last before the seam
		}
		m.anchor = true
		return
	case s.Flags&FlagPointerJump != 0 && m.events < maxCapMarks:
		m.jumps = append(m.jumps, capMark{m.kept, s.Index})
		m.events++
	}
	// The capture side's own instant in a duplex stream (the loopback's):
	// when the period's last frame was captured.
	ns := s.CaptureDue
	if ns == 0 {
		ns = s.Boundary()
	}
	m.last = capAnchor{m.kept, ns}
	if m.kept%anchorEvery == 0 || m.anchor {
		m.addAnchor(m.last)
		m.anchor = false
	}
	m.kept++
}

func (m *CaptureMap) addAnchor(a capAnchor) {
	if n := len(m.anchors); n < maxCapMarks && (n == 0 || m.anchors[n-1].kept < a.kept) {
		m.anchors = append(m.anchors, a)
	}
}

// At is the instant, on CLOCK_MONOTONIC, at which the capture's frame
// number frame (of periods of periodFrames frames at rate) was captured;
// 0 when the samples do not say.
//
// CLOCK_MONOTONIC because it is the clock of the spike windows the
// glitches are lined up with: the samples' instants, which the kernel's
// tracer's events share (trace_clock mono) and a spike's due_ns is. The
// capture's own frame count is the card's clock, which drifts against it
// and restarts at every xrun, so it is put on CLOCK_MONOTONIC through the
// periods: a kept period's last frame was captured at its sample's
// CaptureDue (the capture side's pointer update; Boundary where the
// stream is not duplex), linear between two anchors with no seam between,
// and a frame inside its period that many frames at the nominal rate
// before the period's end.
func (m *CaptureMap) At(frame int64, periodFrames, rate int) int64 {
	if periodFrames <= 0 || rate <= 0 || frame < 0 {
		return 0
	}
	k := frame / int64(periodFrames)
	end, ok := m.periodEnd(k)
	if !ok {
		return 0
	}
	left := int64(periodFrames) - frame%int64(periodFrames)
	return end - left*1e9/int64(rate)
}

// periodEnd is when kept period k's last frame was captured, from the
// anchors about it.
func (m *CaptureMap) periodEnd(k int64) (int64, bool) {
	as := m.anchors
	if n := len(as); n == 0 || as[n-1].kept < m.last.kept {
		as = append(as[:n:n], m.last)
	}
	i, _ := slices.BinarySearchFunc(as, k, func(a capAnchor, k int64) int { return cmp.Compare(a.kept, k) })
	switch {
	case i < len(as) && as[i].kept == k:
		return as[i].ns, as[i].ns != 0
	case i == 0 || i == len(as):
		return 0, false
	}
	a, b := as[i-1], as[i]
	if a.ns == 0 || b.ns == 0 {
		return 0, false
	}
	for _, x := range m.xruns {
		if x.kept > a.kept && x.kept <= b.kept {
			return 0, false // across a seam (beyond maxCapMarks anchors)
		}
	}
	return a.ns + (b.ns-a.ns)*(k-a.kept)/(b.kept-a.kept), true
}

// Kept is how many capture periods the samples added so far kept: the
// capture up to Kept periods is lined up (a capture read as it arrives is
// analysed no further).
func (m *CaptureMap) Kept() int64 { return m.kept }

// What a glitch came with (Glitch.With).
const (
	GlitchXrun        = "xrun"         // at the seam an xrun left
	GlitchPointerJump = "pointer jump" // in a period whose pointer lost buffers
	GlitchAlone       = ""             // neither: the break no counter saw
)

// seamToleranceMS is how far from an xrun's seam a glitch is still that
// xrun's: the sine's analysis places a break to within a millisecond
// (audio/sound).
const seamToleranceMS = 1.0

// LineUp fills in snd, whose glitches were found in the capture of
// periodFrames-frame periods at rate, what each glitch came with and the
// phase's period it fell in, and counts the xruns heard and not heard.
// A glitch with no xrun and no pointer jump is the worst case a driver can
// have: the sound broke and nothing said so.
func (m *CaptureMap) LineUp(snd *Sound, periodFrames, rate int) {
	if snd == nil || periodFrames <= 0 || rate <= 0 {
		return
	}
	periodMS := float64(periodFrames) * 1e3 / float64(rate)
	heard := make([]bool, len(m.xruns))
	snd.GlitchesAlone = 0
	for i := range snd.Glitches {
		g := &snd.Glitches[i]
		g.With = GlitchAlone
		g.AtNS = m.At(int64(math.Round(g.AtMS*float64(rate)/1e3)), periodFrames, rate)
		// Xruns in periods one after another kept no capture between
		// them: they left one seam, and the glitch there is each of theirs.
		for k, x := range m.xruns {
			if d := g.AtMS - float64(x.kept)*periodMS; d >= -seamToleranceMS && d <= seamToleranceMS {
				if g.With != GlitchXrun {
					g.With, g.Period = GlitchXrun, x.period
				}
				heard[k] = true
			}
		}
		if g.With == GlitchXrun {
			continue
		}
		kept := int64(g.AtMS / periodMS)
		g.Period = m.Period(kept)
		for _, j := range m.jumps {
			if j.kept == kept {
				g.With = GlitchPointerJump
			}
		}
		if g.With == GlitchAlone {
			snd.GlitchesAlone++
		}
	}
	snd.XrunsHeard, snd.XrunsNotHeard = 0, 0
	for k, h := range heard {
		switch {
		case m.xruns[k].kept == 0:
			// Before the first period kept: the capture begins after
			// it, so it left no seam to hear or to miss.
		case h:
			snd.XrunsHeard++
		default:
			snd.XrunsNotHeard++
		}
	}
}

// A Seam is where restarts spliced the capture: after Kept capture
// periods, Xruns restarts (xruns in periods one after another leave one
// seam). Each restart put its own offset between what the capture kept
// and what the loop played (docs/method.md, "The sound").
type Seam struct {
	Kept  int64
	Xruns int
}

// Seams are the capture's seams in order, the one before its first
// period (an xrun as the stream started) included.
func (m *CaptureMap) Seams() []Seam {
	var out []Seam
	for _, x := range m.xruns {
		if n := len(out); n > 0 && out[n-1].Kept == x.kept {
			out[n-1].Xruns++
			continue
		}
		out = append(out, Seam{Kept: x.kept, Xruns: 1})
	}
	return out
}

// Period is the phase's period whose capture is kept period number kept:
// kept plus the xrun periods before it, which kept none.
func (m *CaptureMap) Period(kept int64) int64 {
	n := int64(0)
	for _, x := range m.xruns {
		if x.kept > kept {
			break
		}
		n++
	}
	return kept + n
}
