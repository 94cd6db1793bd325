package rundata

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultCPULoad is latencytest's default simulated DSP load, percent of a
// period: the load the second verdict answers for.
const DefaultCPULoad = 80

// MaxSafePeriods is the largest buffer the verdict considers, in periods;
// a phase that needs more is reported as needing more than it.
const MaxSafePeriods = 64

// Safe is the buffer verdict of a phase: the smallest number of periods
// at its period size that would have had no xrun, and the margin left.
type Safe struct {
	// Periods is the smallest buffer, in periods, in which every period
	// of the phase would have been written before the card needed it;
	// MaxSafePeriods+1 when even MaxSafePeriods would not do.
	Periods int `json:"periods"`
	// MarginNS is how long before running dry that buffer was at its
	// tightest moment.
	MarginNS int64 `json:"margin_ns"`
	// CardDelayNS is the card's own delay the rule counted: what its
	// driver reports queued beyond the buffer (CardAhead), which still
	// plays once the buffer's last frame has left it; 0 when none was.
	CardDelayNS int64 `json:"card_delay_ns,omitempty"`
	// HeldAsRun says that Periods is the buffer the phase ran with, in
	// which it had no xrun though the rule asks for more (Phase.Settled):
	// the card held more than it reports, and MarginNS, then negative,
	// is how far past the rule's end of that buffer the latest write came.
	HeldAsRun bool `json:"held_as_run,omitempty"`
}

// Verdict is the buffer that holds a phase whose latest write came late
// ns after its period was due (the wakeup latency plus the DSP work), on
// a card that holds cardNS of sound beyond the buffer (CardAhead; 0 for
// none). The period due at d keeps the card busy until d + (n−1) periods
// + cardNS, the rule of the timer driver's virtual buffer (docs/method.md)
// with the card's own delay added, so n periods hold a write late by at
// most (n−1) periods + cardNS; a buffer has at least two.
func Verdict(late, periodNS, cardNS int64) Safe {
	n := int64(2)
	if need := late - cardNS; need > periodNS {
		n = 1 + (need+periodNS-1)/periodNS
	}
	if n > MaxSafePeriods {
		return Safe{Periods: MaxSafePeriods + 1, CardDelayNS: cardNS}
	}
	return Safe{Periods: int(n), MarginNS: (n-1)*periodNS + cardNS - late, CardDelayNS: cardNS}
}

// CardAhead is the frames of a card's reported delay (rd, nil when none
// was read) that a late write may still use before the card runs dry: the
// playback side's, on a playback-only stream ("" is one: the default).
// snd-usb-audio moves its pointer as it queues a transfer and stops it at
// the application's, so its stream runs dry only when the transfers
// queued have played. A capture side overruns when its buffer is full,
// whatever the playback holds, so a stream with one gets none.
func CardAhead(rd *ReportedDelay, stream string) int64 {
	if rd == nil || (stream != "" && stream != "playback") || rd.PlaybackFrames <= 0 {
		return 0
	}
	return rd.PlaybackFrames
}

// Settled is s, a verdict of p's, checked against what p did in a buffer
// of periods, the run's: a phase that had no xrun in it held there,
// whatever the rule says, so s asking for more becomes that buffer,
// HeldAsRun, with the rule's margin at it (from s's own, periodNS being
// the period; 0 when s's is unknown). The absence of an xrun proves it
// only when nothing could hide one: no pointer jump (the pointer lost
// whole buffers without the kernel stopping the stream) and no period
// lost. s is returned as it is otherwise, nil for nil.
func (p *Phase) Settled(s *Safe, periods int, periodNS int64) *Safe {
	if s == nil || periods < 2 || s.Periods <= periods || p.Xruns > 0 || p.PointerJumps > 0 || p.Lost > 0 {
		return s
	}
	c := *s
	c.Periods, c.HeldAsRun, c.MarginNS = periods, true, 0
	if s.Periods <= MaxSafePeriods {
		c.MarginNS = s.MarginNS - int64(s.Periods-periods)*periodNS
	}
	return &c
}

// LateMeter follows a phase's latest write: its worst lateness with the
// DSP time measured, and with the wakeup latency alone (to which a nominal
// DSP load can be added to answer for another load).
type LateMeter struct {
	Write, Wakeup int64 // ns; the worst of each
	n             int64
}

// Add takes a period's sample.
func (m *LateMeter) Add(s *Sample) {
	l := s.Latency()
	w := l + s.DSP
	if m.n == 0 || w > m.Write {
		m.Write = w
	}
	if m.n == 0 || l > m.Wakeup {
		m.Wakeup = l
	}
	m.n++
}

// Verdicts is the buffer verdict with the DSP time measured and with a
// nominal DSP load of pct percent, on a card holding cardNS beyond the
// buffer (Verdict); nil without samples.
func (m *LateMeter) Verdicts(periodNS, cardNS int64, pct int) (measured, nominal *Safe) {
	if m.n == 0 {
		return nil, nil
	}
	a, b := Verdict(m.Write, periodNS, cardNS), Verdict(m.Wakeup+periodNS*int64(pct)/100, periodNS, cardNS)
	return &a, &b
}

// Label names the phase in tables and lines: "idle", or "idle #2" for the
// second repetition of a repeated run.
func (ph *Phase) Label() string {
	if ph.Repeat > 0 {
		return fmt.Sprintf("%s #%d", ph.Name, ph.Repeat)
	}
	return ph.Name
}

// Held reports whether the phase held in a buffer of periods (NotHeld).
func (ph *Phase) Held(periods int) bool { return ph.NotHeld(periods, 0) == "" }

// NotHeld says why the phase did not hold in a buffer of periods of
// periodUS each, "" when it held: it ran to its end, every period it
// measured reached the run (a period lost may have been the late one), its
// sound (run --loopback) never broke where nothing else said so, no
// period's lateness is unknown (a pointer jump: the pointer lost whole
// buffers, so its interrupt was a buffer or more late), it had no xrun,
// and its verdict, checked against the xruns it did not have (Settled),
// fits that buffer.
func (ph *Phase) NotHeld(periods int, periodUS float64) string {
	safe := ph.Settled(ph.Safe, periods, int64(math.Round(periodUS*1000)))
	switch {
	case ph.Skipped != "":
		return "skipped: " + ph.Skipped
	case ph.Incomplete:
		return "its end was never written (the run was killed)"
	case ph.CutShort:
		return "cut short (the run was stopped)"
	case ph.Sound != nil && ph.Sound.GlitchesAlone > 0:
		// The worst finding: the sound broke and no counter said so.
		if ph.Sound.GlitchesAlone == 1 {
			return "its sound broke once with no xrun or pointer jump (heard in the capture)"
		}
		return fmt.Sprintf("its sound broke %d times with no xrun or pointer jump (heard in the capture)", ph.Sound.GlitchesAlone)
	case safe == nil:
		return "no verdict"
	case safe.Periods > MaxSafePeriods:
		return fmt.Sprintf("needs more than × %d", MaxSafePeriods)
	case safe.Periods > periods:
		return fmt.Sprintf("needs × %d (%.1f ms)", safe.Periods, float64(safe.Periods)*periodUS/1000)
	case ph.Xruns > 0:
		return fmt.Sprintf("had %d xruns its wakeups do not explain", ph.Xruns)
	case ph.Lost > 0:
		return fmt.Sprintf("lost %d periods' samples (one of them may have been late)", ph.Lost)
	case ph.PointerJumps > 0:
		return fmt.Sprintf("had %d pointer jumps (periods whose interrupt came a buffer or more late)", ph.PointerJumps)
	}
	return ""
}

// VerdictText says which loads the run's buffer held and what kept the
// others from holding, e.g. "64 frames × 2 (2.7 ms) held under idle,
// proc; hackbench needs × 3 (4.0 ms)". A phase that held with no xrun
// though the rule asks for more (Settled) says so where it is named, and
// the card's own delay, where the rule counted it, is said last. Skipped
// phases are left out; it is "" for a run without verdicts.
func VerdictText(r *Run) string {
	var held, other []string
	past := map[string]int64{} // how far past the buffer's end by the rule a phase held with no xrun
	var cardMin, cardMax int64
	periodNS := int64(math.Round(r.PeriodUS * 1000))
	for _, ph := range r.Phases {
		if ph.Skipped != "" || (ph.Safe == nil && !ph.Incomplete) {
			continue
		}
		why := ph.NotHeld(r.Periods, r.PeriodUS)
		switch {
		case why != "":
			other = append(other, ph.Label()+" "+why) // a repetition that did not hold is named with its number
		case !slices.Contains(held, ph.Name):
			held = append(held, ph.Name)
		}
		s := ph.Settled(ph.Safe, r.Periods, periodNS)
		if s == nil {
			continue
		}
		if d := s.CardDelayNS; d > 0 {
			if cardMax == 0 || d < cardMin {
				cardMin = d
			}
			cardMax = max(cardMax, d)
		}
		if s.HeldAsRun && why == "" {
			past[ph.Name] = max(past[ph.Name], -s.MarginNS)
		}
	}
	if len(held) == 0 && len(other) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d frames × %d (%.1f ms)", r.PeriodFrames, r.Periods, float64(r.Periods)*r.PeriodUS/1000)
	for i, name := range held {
		if ns, ok := past[name]; ok {
			held[i] += fmt.Sprintf(" (with no xrun though its latest write came %.1f ms past the buffer's end by the rule: the card holds more than it reports)", float64(ns)/1e6)
		}
	}
	if len(held) > 0 {
		s += " held under " + strings.Join(held, ", ")
	} else {
		s += " held under none of the phases"
	}
	if len(other) > 0 {
		s += "; " + strings.Join(other, "; ")
	}
	switch {
	case cardMax == 0:
	case cardMin == cardMax:
		s += fmt.Sprintf("; counted with the card's own delay, %.1f ms (its driver's, queued beyond the buffer)", float64(cardMax)/1e6)
	default:
		s += fmt.Sprintf("; counted with the card's own delay, %.1f–%.1f ms (its driver's, queued beyond the buffer)", float64(cardMin)/1e6, float64(cardMax)/1e6)
	}
	if n := rtNote(r.RT); n != "" {
		s += "; " + n
	}
	return s
}

// rtNote says when the figures are not a real-time audio thread's: it
// ran without a real-time policy (asked, with --prio 0, or refused), or
// with its memory unlocked though that was asked (a page fault can then
// add milliseconds). Each is said, both when both failed.
func rtNote(rt RTSetup) string {
	var notes []string
	if n := policyNote(rt); n != "" {
		notes = append(notes, n)
	}
	if rt.Asked.Mlockall && !rt.Obtained.Mlockall {
		notes = append(notes, "its memory was not locked (mlockall refused: raise the memlock limit, latencytest check): page faults may be in the figures")
	}
	return strings.Join(notes, "; ")
}

// policyNote says that the thread ran without a real-time policy, and
// whether that was asked or refused; "" for a real-time thread, or a
// run.json from before policies were recorded.
func policyNote(rt RTSetup) string {
	asked, got := rt.Asked.Policy, rt.Obtained.Policy
	switch {
	case got == "" || realTime(got):
		return ""
	case asked == got:
		return fmt.Sprintf("not a real-time thread's figures: it ran %s, as asked (--prio 0)", got)
	case asked == "": // a run.json from before the asked policy was recorded: SCHED_FIFO was the only one
		asked = "SCHED_FIFO"
	}
	return fmt.Sprintf("not a real-time thread's figures: it ran %s, not the %s asked (run as root, or give the user rtprio: latencytest check)", got, asked)
}

// realTime reports whether policy is one of the real-time ones.
func realTime(policy string) bool { return policy == "SCHED_FIFO" || policy == "SCHED_RR" }

// CPUsText names, for a run --cpus of two CPUs or more, the best and the
// worst CPU for the audio thread, each with its why: "best for audio
// CPU 0 (needs × 2 (2.7 ms), p99.9 123 µs, max 272 µs, under idle);
// worst CPU 1 (…)". A CPU is judged by its worst phase, and CPUs are
// ranked by the buffer verdict's own measure, the buffer its latest write
// needed (Safe), then by the tail (p99.9), then by the max. "" when fewer
// than two CPUs were measured.
func CPUsText(r *Run) string {
	worst := map[int]*CPUPhase{} // each CPU's worst phase
	var order []int
	for i := range r.Phases {
		for k := range r.Phases[i].CPUs {
			c := &r.Phases[i].CPUs[k]
			if c.Periods == 0 {
				continue
			}
			if w, ok := worst[c.CPU]; !ok {
				order = append(order, c.CPU)
				worst[c.CPU] = c
			} else if worseForAudio(c, w) {
				worst[c.CPU] = c
			}
		}
	}
	if len(order) < 2 {
		return ""
	}
	best, bad := order[0], order[0]
	for _, cpu := range order[1:] {
		if worseForAudio(worst[best], worst[cpu]) {
			best = cpu
		}
		if worseForAudio(worst[cpu], worst[bad]) {
			bad = cpu
		}
	}
	if best == bad {
		return ""
	}
	s := fmt.Sprintf("best for audio CPU %d (%s); worst CPU %d (%s)", best, cpuWhy(r, worst[best]), bad, cpuWhy(r, worst[bad]))
	for _, f := range r.Checks {
		if f.Name == FindingSoundIRQCPUs && f.Status == "OK" {
			s += "; the soundcard's interrupt: " + f.Value
		}
	}
	return s
}

// worseForAudio says whether a's figures are worse for an audio thread
// than b's: a larger buffer needed, else a longer tail, else a later max.
func worseForAudio(a, b *CPUPhase) bool {
	na, nb := safePeriods(&a.Phase), safePeriods(&b.Phase)
	switch {
	case na != nb:
		return na > nb
	case a.Latency.P999 != b.Latency.P999:
		return a.Latency.P999 > b.Latency.P999
	}
	return a.Latency.Max > b.Latency.Max
}

// safePeriods is the buffer a phase's latest write needed, in periods;
// more than any when it has no verdict.
func safePeriods(p *Phase) int {
	if p.Safe == nil {
		return MaxSafePeriods + 2
	}
	return p.Safe.Periods
}

// cpuWhy is what a CPU's worst phase says of it.
func cpuWhy(r *Run, c *CPUPhase) string {
	need := "no verdict"
	if c.Safe != nil {
		need = fmt.Sprintf("needs × %d (%.1f ms)", c.Safe.Periods, float64(c.Safe.Periods)*r.PeriodUS/1000)
		if c.Safe.Periods > MaxSafePeriods {
			need = fmt.Sprintf("needs more than × %d", MaxSafePeriods)
		}
	}
	s := fmt.Sprintf("%s, p99.9 %d µs, max %d µs", need, int64(math.Floor(c.Latency.P999)), int64(math.Floor(c.Latency.Max)))
	if c.Xruns > 0 {
		s += fmt.Sprintf(", %d xruns", c.Xruns)
	}
	return s + ", under " + c.Label()
}
