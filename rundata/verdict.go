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
}

// Verdict is the buffer that holds a phase whose latest write came late
// ns after its period was due (the wakeup latency plus the DSP work). The
// period due at d keeps the card busy until d + (n−1) periods, the rule of
// the timer driver's virtual buffer (docs/method.md), so n periods hold a
// write late by at most (n−1) periods; a buffer has at least two.
func Verdict(late, periodNS int64) Safe {
	n := int64(2)
	if late > periodNS {
		n = 1 + (late+periodNS-1)/periodNS
	}
	if n > MaxSafePeriods {
		return Safe{Periods: MaxSafePeriods + 1}
	}
	return Safe{Periods: int(n), MarginNS: (n-1)*periodNS - late}
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
// nominal DSP load of pct percent; nil without samples.
func (m *LateMeter) Verdicts(periodNS int64, pct int) (measured, nominal *Safe) {
	if m.n == 0 {
		return nil, nil
	}
	a, b := Verdict(m.Write, periodNS), Verdict(m.Wakeup+periodNS*int64(pct)/100, periodNS)
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
// and its verdict fits that buffer.
func (ph *Phase) NotHeld(periods int, periodUS float64) string {
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
	case ph.Safe == nil:
		return "no verdict"
	case ph.Safe.Periods > MaxSafePeriods:
		return fmt.Sprintf("needs more than × %d", MaxSafePeriods)
	case ph.Safe.Periods > periods:
		return fmt.Sprintf("needs × %d (%.1f ms)", ph.Safe.Periods, float64(ph.Safe.Periods)*periodUS/1000)
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
// proc; hackbench needs × 3 (4.0 ms)". Skipped phases are left out; it is
// "" for a run without verdicts.
func VerdictText(r *Run) string {
	var held, other []string
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
	}
	if len(held) == 0 && len(other) == 0 {
		return ""
	}
	s := fmt.Sprintf("%d frames × %d (%.1f ms)", r.PeriodFrames, r.Periods, float64(r.Periods)*r.PeriodUS/1000)
	if len(held) > 0 {
		s += " held under " + strings.Join(held, ", ")
	} else {
		s += " held under none of the phases"
	}
	if len(other) > 0 {
		s += "; " + strings.Join(other, "; ")
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
