package ktrace

import (
	"fmt"
	"io"
	"sort"

	"latencytest/rundata"
)

// clockMap turns the osnoise events' start times into the instance's
// clock. The kernel takes them with trace_clock_local() (sched_clock),
// whatever the instance's trace_clock, while the event itself is stamped
// with the instance's clock (mono) when it is written, as the interference
// ends. For every event, stamp − start − duration is the offset between
// the two clocks plus what the kernel did between the end and the write,
// plus, for a context that was interrupted, the interruptions (the
// duration is net of them): never less than the offset. The smallest over
// the last two seconds is the estimate (within the write's cost, 1–3 µs
// under qemu's TCG, plus the stamp's truncation to the microsecond of
// trace_pipe's text), and it follows the slow drift between sched_clock and
// CLOCK_MONOTONIC (NTP slews the latter by at most 500 ppm: 1 ms in 2 s at
// worst, a few µs in practice).
type clockMap struct {
	cur, prev   int64 // the smallest offset in this and the previous 1 s bucket
	bucket      int64 // the current bucket's start (stamp)
	have, haveP bool
}

// note takes an event's offset into account and returns the estimate.
func (c *clockMap) note(stamp, off int64) int64 {
	if !c.have || stamp-c.bucket >= 1e9 {
		c.prev, c.haveP = c.cur, c.have
		c.cur, c.bucket, c.have = off, stamp, true
	}
	c.cur = min(c.cur, off)
	if c.haveP {
		return min(c.cur, c.prev)
	}
	return c.cur
}

// x86Vectors are the system vectors that the osnoise tracer reports in
// irq_noise by the name irq_vectors gives them (osnoise_arch_register), as
// opposed to device IRQs, which carry the handler's name.
var x86Vectors = map[string]bool{
	"local_timer": true, "spurious_apic": true, "error_apic": true, "x86_platform_ipi": true,
	"irq_work": true, "reschedule": true, "call_function": true, "call_function_single": true,
	"thermal_apic": true, "threshold_apic": true, "deferred_error": true,
}

// noiseSpan is one interference the kernel measured, in the instance's
// clock: [from, to) on the wall.
type noiseSpan struct {
	from, to int64
	net      int64 // the kernel's duration, net of what interrupted it
	kind     int
	cause    rundata.Cause
}

// noiseCause names what a noise event measured the way the sched/irq
// attribution names it, so that the two can be compared cause by cause.
func noiseCause(ev *Event, audio Thread) rundata.Cause {
	switch ev.NoiseKind {
	case noiseThread:
		switch {
		case ev.PID == 0:
			return rundata.Cause{Kind: rundata.CauseIdle, Name: "idle"}
		case audio.is(ev.PID, ev.Comm):
			return rundata.Cause{Kind: rundata.CauseAudio, Name: ev.Comm, PID: ev.PID}
		}
		return rundata.Cause{Kind: rundata.CauseThread, Name: ev.Comm, PID: ev.PID}
	case noiseSoftIRQ:
		return rundata.Cause{Kind: rundata.CauseSoftIRQ, Name: ev.Name}
	case noiseIRQ:
		if x86Vectors[ev.Name] {
			return rundata.Cause{Kind: rundata.CauseIRQ, Name: "vector " + ev.Name}
		}
		return rundata.Cause{Kind: rundata.CauseIRQ, Name: fmt.Sprintf("IRQ %d %s", ev.IRQ, ev.Name)}
	}
	return rundata.Cause{Kind: rundata.CauseIRQ, Name: "NMI"}
}

// explainNoise shares out [from, to) on one CPU from the osnoise events
// alone: each instant goes to the innermost interference the kernel
// measured there (an NMI over an IRQ over a softirq over a thread, idle
// being the idle thread's noise); what none covers is unexplained. It is
// the kernel's account of the same window that explainCPU gives from the
// sched/irq events.
//
// An interference's span is the kernel's own: from its start to its start
// plus its duration and the durations of the interferences nested in it
// (the kernel took each of those out of it: cond_move_*_delta_start), not
// to the event's stamp, which comes after the end by the time the kernel
// takes to get to writing it (its sched_switch hook runs after the
// sched_switch event's, 3–7 µs later under TCG).
func explainNoise(evs []Event, from, to int64, audio Thread) (causes []rundata.Cause, unexplained int64) {
	first := noiseReach(evs, from, to)
	var spans []noiseSpan
	for i := range evs {
		ev := &evs[i]
		if ev.Kind != evNoise || ev.NoiseStart <= 0 || ev.TS <= first || ev.NoiseStart >= to {
			continue
		}
		spans = append(spans, noiseSpan{from: ev.NoiseStart, to: ev.NoiseStart + ev.NoiseNS, net: ev.NoiseNS, kind: ev.NoiseKind, cause: noiseCause(ev, audio)})
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	for i := range spans {
		s := &spans[i]
		for _, n := range spans[i+1:] {
			if n.from >= s.to {
				break
			}
			if n.kind > s.kind {
				s.to += n.net
			}
		}
	}
	cuts := []int64{from, to}
	for _, s := range spans {
		for _, t := range [2]int64{s.from, s.to} {
			if from < t && t < to {
				cuts = append(cuts, t)
			}
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	sum := map[rundata.Cause]int64{}
	var order []rundata.Cause
	for i := 0; i+1 < len(cuts); i++ {
		a, b := cuts[i], cuts[i+1]
		if b <= a {
			continue
		}
		best := -1
		for j, s := range spans {
			if s.from <= a && b <= s.to && (best < 0 || s.kind > spans[best].kind ||
				(s.kind == spans[best].kind && s.from > spans[best].from)) {
				best = j
			}
		}
		if best < 0 {
			unexplained += b - a
			continue
		}
		c := spans[best].cause
		if _, ok := sum[c]; !ok {
			order = append(order, c)
		}
		sum[c] += b - a
	}
	for _, c := range order {
		c.NS = sum[c]
		causes = append(causes, c)
	}
	sort.SliceStable(causes, func(i, j int) bool { return causes[i].NS > causes[j].NS })
	return causes, unexplained
}

// noiseReach is the earliest start of the noise events that reach into
// [from, to), or to when none does. Events end by their stamp: none
// written before the window can reach into it. But a span that reaches
// into it ends at its start plus the net durations of everything nested
// in it, some of which may have ended before the window (an interrupt
// early in a long burst): every event written since the earliest such
// start bears on the window.
func noiseReach(evs []Event, from, to int64) int64 {
	first := to
	for i := range evs {
		ev := &evs[i]
		if ev.Kind == evNoise && ev.NoiseStart > 0 && ev.TS > from && ev.NoiseStart < to {
			first = min(first, ev.NoiseStart)
		}
	}
	return first
}

// disagree tells a spike whose two accounts differ on their top cause, or
// on its time by more than 5 %.
func disagree(sp rundata.Spike) bool {
	if len(sp.Causes) == 0 || len(sp.KernelNoise) == 0 {
		return false
	}
	c, k := sp.Causes[0], sp.KernelNoise[0]
	d := max(c.NS-k.NS, k.NS-c.NS)
	return c.Kind != k.Kind || c.Name != k.Name || c.PID != k.PID || d*20 > c.NS
}

// dumpWindow writes every event that bears on [from, to): the noise
// events explainNoise reads for it, and the others from the earliest
// start among those (noiseReach) to the window's end; times in µs from
// its start.
func dumpWindow(w io.Writer, why string, l *cpuLog, from, to int64) {
	evs := l.evs
	first := min(from, noiseReach(evs, from, to))
	fmt.Fprintf(w, "ktrace: the window %d–%d (%s); its events (µs from its start):\n", from, to, why)
	fmt.Fprintf(w, "  history %d events from %d, base %+v since %d, gaps %v, losing %v\n", len(evs), firstTS(evs), l.base.cur, l.base.since, l.gaps, l.losing)
	before := -1 // the last switch before the window: who ran as it began
	for i := range evs {
		if evs[i].TS < first && evs[i].Kind == evSwitch {
			before = i
		}
	}
	for i := range evs {
		ev := &evs[i]
		at := float64(ev.TS-from) / 1e3
		switch {
		case i == before:
			fmt.Fprintf(w, "  %10.1f switch %s/%d -> %s/%d\n", at, ev.PrevComm, ev.PrevPID, ev.Comm, ev.PID)
		case ev.Kind == evNoise:
			if ev.TS > first && ev.NoiseStart < to {
				fmt.Fprintf(w, "  %10.1f noise kind %d %s/%d %s start %+.1f net %.1f\n", at, ev.NoiseKind, ev.Comm, ev.PID, ev.Name,
					float64(ev.NoiseStart-from)/1e3, float64(ev.NoiseNS)/1e3)
			}
		case ev.TS < first || ev.TS > to:
		case ev.Kind == evSwitch:
			fmt.Fprintf(w, "  %10.1f switch %s/%d -> %s/%d\n", at, ev.PrevComm, ev.PrevPID, ev.Comm, ev.PID)
		default:
			fmt.Fprintf(w, "  %10.1f kind %d irq %d %s pid %d\n", at, ev.Kind, ev.IRQ, ev.Name, ev.PID)
		}
	}
}

// firstTS is the time of the first of evs, or -1.
func firstTS(evs []Event) int64 {
	if len(evs) == 0 {
		return -1
	}
	return evs[0].TS
}
