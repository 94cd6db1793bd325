package rundata

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
}

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
		return
	case s.Flags&FlagPointerJump != 0 && m.events < maxCapMarks:
		m.jumps = append(m.jumps, capMark{m.kept, s.Index})
		m.events++
	}
	m.kept++
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
