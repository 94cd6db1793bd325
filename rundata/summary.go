package rundata

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// WriteSummary writes a run's closing block, the answer first: whether
// the sound broke (xruns per phase), the buffer verdict, the worst wakeup
// and what held the CPU then (from spikes, with --trace), then a line per
// phase in cyclictest's style with what qualifies its figures. acts is
// each phase's last latency, µs (cyclictest's Act), by index in
// r.Phases; a phase missing from it reads 0.
func WriteSummary(w io.Writer, r *Run, acts map[int]float64, spikes []Spike) {
	fmt.Fprintf(w, "sound: %s\n", soundText(r))
	if h := heardText(r); h != "" {
		fmt.Fprintf(w, "heard: %s\n", h)
	}
	if v := VerdictText(r); v != "" {
		fmt.Fprintf(w, "verdict: %s\n", v)
	}
	if c := CPUsText(r); c != "" {
		fmt.Fprintf(w, "cpus: %s\n", c)
	}
	if t := worstText(r, spikes); t != "" {
		fmt.Fprintf(w, "worst wakeup: %s\n", t)
	}
	if t := workLateText(r); t != "" {
		fmt.Fprintf(w, "why it broke: %s\n", t)
	}
	for i, ph := range r.Phases {
		writeTLine(w, r, i, ph, acts[i])
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the results hold what was measured until then")
	}
}

// soundText says in which phases the sound broke: "broke under hackbench
// (3 xruns, 12.3 ms in all); none under idle, proc", or "no xrun in any
// phase".
func soundText(r *Run) string {
	var broke, held []string
	for _, ph := range r.Phases {
		switch {
		case ph.Skipped != "":
		case ph.Xruns > 0:
			broke = append(broke, fmt.Sprintf("%s (%d xruns, %.1f ms in all)", ph.Label(), ph.Xruns, ph.XrunMSTotal))
		default:
			held = append(held, ph.Label())
		}
	}
	sim := ""
	if r.Simulated {
		sim = " (simulated: the timer driver's virtual buffer, where a card with this buffer would have had them)"
	}
	switch {
	case len(broke) == 0 && len(held) == 0:
		return "no phase ran"
	case len(broke) == 0:
		return "no xrun in any phase" + sim
	case len(held) == 0:
		return "broke under " + strings.Join(broke, ", ") + sim
	}
	return "broke under " + strings.Join(broke, ", ") + "; no xrun under " + strings.Join(held, ", ") + sim
}

// heardText says what a loopback run heard (Phase.Sound): "the sound
// broke 3 times (hackbench 3, idle none, 1 of them with no xrun or pointer
// jump; in the trace: lt-culprit (SCHED_FIFO 90) 2, no spike at that time
// 1); round trip 21.3 ms in idle, 21.3 ms in hackbench"; "" without
// --loopback. A break nothing else reported is the one to know of; with
// --trace, what held the CPU when each was heard (Glitch.Cause).
func heardText(r *Run) string {
	var total, alone int
	var breaks, trips []string
	for _, ph := range r.Phases {
		switch snd := ph.Sound; {
		case snd == nil:
			continue
		case !snd.Judged:
			breaks = append(breaks, ph.Label()+" not judged: "+snd.Note)
		case len(snd.Glitches) == 0:
			breaks = append(breaks, ph.Label()+" none")
		default:
			breaks = append(breaks, fmt.Sprintf("%s %d", ph.Label(), len(snd.Glitches)))
		}
		total += len(ph.Sound.Glitches)
		alone += ph.Sound.GlitchesAlone
		trips = append(trips, tripText(ph.Sound)+ph.Label())
	}
	if len(breaks) == 0 {
		return ""
	}
	times := "times"
	if total == 1 {
		times = "time"
	}
	unseen := ""
	if alone > 0 {
		unseen = fmt.Sprintf(", %d of them with no xrun or pointer jump", alone)
	}
	if c := glitchCausesText(r); c != "" {
		unseen += "; in the trace: " + c
	}
	return fmt.Sprintf("the sound broke %d %s (%s%s); round trip %s", total, times, strings.Join(breaks, ", "), unseen, strings.Join(trips, ", "))
}

// tripText is a loopback phase's round trip in the closing block, up to
// the phase's name: the median over the phase with its range where it
// moved (a round trip that grew under load), followed across restarts,
// or, in a run.json of old, the median before the sound first broke.
func tripText(s *Sound) string {
	switch f := s.RoundTripFollowed; {
	case f != nil && f.Min != f.Max:
		return fmt.Sprintf("%.1f ms (%.1f to %.1f) in ", f.Median, f.Min, f.Max)
	case f != nil:
		return fmt.Sprintf("%.1f ms in ", f.Median)
	case s.CardDelay != nil:
		return fmt.Sprintf("%.1f ms in ", s.RoundTripMS)
	}
	return "not read in "
}

// worstText names the latest wakeup of the run, its phase and, where the
// tracer recorded that period, what held the CPU most.
func worstText(r *Run, spikes []Spike) string {
	worst := -1
	for i, ph := range r.Phases {
		if ph.Skipped == "" && ph.Periods > 0 && (worst < 0 || ph.Latency.Max > r.Phases[worst].Latency.Max) {
			worst = i
		}
	}
	if worst < 0 {
		return ""
	}
	t := fmt.Sprintf("%d µs late, in %s", int64(math.Floor(r.Phases[worst].Latency.Max)), r.Phases[worst].Label()) // as the T: line
	var sp *Spike
	for i := range spikes {
		if spikes[i].Phase == worst && (sp == nil || spikes[i].LatencyNS > sp.LatencyNS) {
			sp = &spikes[i]
		}
	}
	switch {
	case sp != nil && len(sp.Causes) > 0:
		c := sp.Causes[0]
		t += fmt.Sprintf("; its CPU was held most by %s, %.2f ms of its %.2f ms (spikes.json)", c, float64(c.NS)/1e6, float64(sp.WindowNS())/1e6)
	case r.Trace == nil || !r.Trace.Enabled:
		t += " (run --trace says what held the CPU)"
	}
	return t
}

// workLateText says which xruns the worst wakeup does not explain: those
// of periods whose thread woke within the period and whose DSP work then
// ran past the buffer's deadline (Phase.XrunsWorkLate). "the thread woke
// in time; its work was preempted: 14 periods in idle (its DSP work,
// nominal 1067 µs, took up to 4.1 ms); each woke …"; "" when there are
// none.
func workLateText(r *Run) string {
	var parts []string
	for _, ph := range r.Phases {
		if ph.Skipped != "" || ph.XrunsWorkLate == 0 {
			continue
		}
		var why []string
		if ph.XrunsWorkLate < ph.Xruns {
			why = append(why, fmt.Sprintf("of its %d xruns", ph.Xruns))
		}
		if l := ph.CPULoop; l.NominalUS > 0 && l.MaxUS > 0 {
			why = append(why, fmt.Sprintf("its DSP work, nominal %.0f µs, took up to %.1f ms", l.NominalUS, l.MaxUS/1000))
		}
		part := fmt.Sprintf("%d periods in %s", ph.XrunsWorkLate, ph.Label())
		if len(why) > 0 {
			part += " (" + strings.Join(why, "; ") + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "the thread woke in time; its work was preempted: " + strings.Join(parts, ", ") + "; each woke within its period and wrote past the buffer's deadline"
}

// writeTLine writes phase i's line in cyclictest's style, with
// percentiles and xruns added, and the lines that qualify its figures;
// under run --cpus, one line per CPU follows it, as cyclictest --smp
// prints one per thread.
func writeTLine(w io.Writer, r *Run, i int, ph Phase, act float64) {
	if ph.Skipped != "" {
		fmt.Fprintf(w, "T: %-10s skipped: %s\n", ph.Name, ph.Skipped)
		return
	}
	name := ph.Name
	if ph.Repeat > 0 {
		name = fmt.Sprintf("%s#%d", ph.Name, ph.Repeat)
	}
	if len(ph.CPUs) > 0 {
		name += " all"
		act = 0 // the latest of the CPUs' last wakeups: the same from run.json wherever it is printed
		for _, c := range ph.CPUs {
			act = max(act, c.ActUS)
		}
	}
	fmt.Fprintf(w, "T: %-10s %s\n", name, tFigures(ph, r.RT.Obtained.Priority, r.PeriodUS, act))
	writeNotes(w, r, ph, ph.Name)
	for _, c := range ph.CPUs {
		fmt.Fprintf(w, "T:%2d (%7d) %s\n", c.CPU, c.TID, tFigures(c.Phase, c.RT.Obtained.Priority, r.PeriodUS, c.ActUS))
		writeNotes(w, r, c.Phase, fmt.Sprintf("%s CPU %d", ph.Name, c.CPU))
	}
}

// tFigures is a T: line after its thread's name: cyclictest's P: I: C:
// Min: Act: Avg: Max:, with percentiles and xruns added.
func tFigures(ph Phase, prio int, periodUS, act float64) string {
	l := ph.Latency
	// A percentile beyond the histogram's range is only a lower bound.
	pct := func(v float64) string {
		if l.Beyond(v) {
			return fmt.Sprintf(">=%d", int64(v))
		}
		return fmt.Sprint(int64(math.Floor(v)))
	}
	return fmt.Sprintf("P:%d I:%d C:%8d Min:%7d Act:%5d Avg:%5d Max:%8d p99: %s p99.9: %s xruns: %d",
		prio, int64(periodUS), ph.Periods,
		int64(math.Floor(l.Min)), int64(math.Floor(act)), int64(math.Floor(l.Avg)), int64(math.Floor(l.Max)), pct(l.P99), pct(l.P999), ph.Xruns)
}

// writeNotes writes the lines that qualify a T: line's figures, each
// under the name given.
func writeNotes(w io.Writer, r *Run, ph Phase, name string) {
	note := func(format string, a ...any) {
		fmt.Fprintf(w, "   %-10s "+format+"\n", append([]any{name}, a...)...)
	}
	if ph.CaughtUp > 0 {
		note("%d caught up (periods already due when the one before woke, each written late; cyclictest skips such deadlines: its C: and percentiles would not have them)", ph.CaughtUp)
	}
	if ph.Lost > 0 {
		note("%d lost (periods measured but not handed over: in no figure above, and one may have been the late one)", ph.Lost)
	}
	if ph.PointerJumps > 0 {
		note("pointer jumps: %d (the hardware pointer lost whole buffers against the card's clock without an xrun from the kernel; not xruns)", ph.PointerJumps)
	}
	if off, ok := ph.ClockOff(r.Rate); ok {
		note("card clock: %.1f Hz on the system clock, %+.1f %% against the nominal %d Hz (its periods last %.2f times the nominal; the card's clock, not the kernel)", ph.ClockHz, 100*off, r.Rate, 1/(1+off))
	}
	if b := ph.Break; b != nil {
		note("broke: period %d woke %d µs late, above --break-above %d µs; the run stopped there (as cyclictest -b)", b.Period, b.LatencyNS/1000, r.BreakAboveNS/1000)
	}
	if ratio, off := ph.CPULoop.Miscalibrated(); off {
		note("cpu load: the DSP loop ran %.0f µs at its shortest against the %.0f µs asked (×%.2f): calibrated as the run began at another CPU speed (an emulator, a busy host, frequency scaling), the load was not the one asked", ph.CPULoop.MinUS, ph.CPULoop.NominalUS, ratio)
	}
	if ph.Server != nil {
		note("server: %s", ph.Server)
	}
	if ph.RTThrottled > 0 {
		note("RT throttled: %d spikes, %.1f ms (the real-time budget, sched_rt_runtime_us, ran out and the kernel stopped the audio thread: not the kernel's latency; see latencytest check)", ph.RTThrottled, float64(ph.RTThrottledNS)/1e6)
	}
}
