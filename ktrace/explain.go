package ktrace

import (
	"fmt"
	"sort"

	"latencytest/rundata"
)

// Thread names the audio thread in the trace: by thread id when known,
// else by its command name.
type Thread struct {
	TID  int
	Comm string
}

func (t Thread) is(pid int, comm string) bool {
	if t.TID != 0 {
		return pid == t.TID
	}
	return comm == t.Comm
}

// task is a thread as sched_switch shows it.
type task struct {
	pid  int
	comm string
	prio int
}

// frame is an interrupt context on a CPU: a hard IRQ, a vector or a softirq.
type frame struct{ kind, name string }

// cpuState is what a CPU was doing: the task it ran and the interrupt
// contexts nested on top of it.
type cpuState struct {
	cur   task
	known bool  // a sched_switch has been seen
	since int64 // when cur was switched in
	stack []frame
}

// apply moves the state past ev.
func (st *cpuState) apply(ev *Event) {
	switch ev.Kind {
	case evSwitch:
		st.cur, st.known, st.since = task{ev.PID, ev.Comm, ev.Prio}, true, ev.TS
		st.stack = st.stack[:0] // a switch happens outside interrupt context
	case evIRQEntry:
		st.stack = append(st.stack, frame{rundata.CauseIRQ, fmt.Sprintf("IRQ %d %s", ev.IRQ, ev.Name)})
	case evVectorEntry:
		st.stack = append(st.stack, frame{rundata.CauseIRQ, "vector " + ev.Name})
	case evSoftEntry:
		st.stack = append(st.stack, frame{rundata.CauseSoftIRQ, ev.Name})
	case evIRQExit, evVectorExit, evSoftExit:
		if n := len(st.stack); n > 0 {
			st.stack = st.stack[:n-1]
		}
	}
}

func (st *cpuState) clone() cpuState {
	c := *st
	c.stack = append([]frame(nil), st.stack...)
	return c
}

// resolver names what the trace alone cannot say about a thread, from
// what /proc said while the thread was there to be asked.
type resolver interface {
	// policy is a real-time thread's policy (SCHED_FIFO or SCHED_RR), or "".
	policy(pid int) string
	// owner names the part of latencytest a thread belongs to (its
	// parent, the engine), or "" for any other thread: they all share
	// one command name.
	owner(pid int) string
}

// policyName tells a scheduling class from the kernel's priority as
// sched_switch shows it; names may name FIFO or RR from /proc.
func policyName(pid, prio int, names resolver) string {
	switch {
	case prio < 0:
		return "SCHED_DEADLINE"
	case prio < 100:
		if names != nil {
			if p := names.policy(pid); p != "" {
				return fmt.Sprintf("%s %d", p, 99-prio)
			}
		}
		return fmt.Sprintf("RT %d", 99-prio)
	}
	return "SCHED_OTHER"
}

// threadName is t's command name, or the part of latencytest it is.
func (at *attribution) threadName(t task) string {
	if at.names != nil {
		if o := at.names.owner(t.pid); o != "" {
			return o
		}
	}
	return t.comm
}

// attribution accumulates a window's time by cause.
type attribution struct {
	from, to int64
	audio    Thread
	names    resolver
	causes   map[rundata.Cause]int64 // key without NS
	order    []rundata.Cause
	strip    []rundata.Slice
	unknown  int64
	// [waitFrom, waitTo): the real-time audio thread was runnable on
	// this CPU (woken, not yet run); empty when not known.
	waitFrom, waitTo int64
	// idleThrottled: the CPU idled through the whole wait, long enough
	// that only RT throttling explains it (idleThroughWait).
	idleThrottled bool
}

// charge gives [a, b), clipped to the window, to what st was doing.
func (at *attribution) charge(st *cpuState, a, b int64) {
	a, b = max(a, at.from), min(b, at.to)
	if b <= a {
		return
	}
	for _, cut := range [2]int64{at.waitFrom, at.waitTo} {
		if a < cut && cut < b {
			at.charge(st, a, cut)
			at.charge(st, cut, b)
			return
		}
	}
	var c rundata.Cause
	switch {
	case len(st.stack) > 0:
		f := st.stack[len(st.stack)-1]
		c = rundata.Cause{Kind: f.kind, Name: f.name}
	case !st.known:
		at.unknown += b - a
		at.slice("", "unexplained", a, b)
		return
	case at.throttled(st, a, b):
		c = rundata.Cause{Kind: rundata.CauseThrottled, Name: "RT throttling"}
	case st.cur.pid == 0:
		c = rundata.Cause{Kind: rundata.CauseIdle, Name: "idle"}
	case at.audio.is(st.cur.pid, st.cur.comm):
		c = rundata.Cause{Kind: rundata.CauseAudio, Name: st.cur.comm, PID: st.cur.pid}
	default:
		c = rundata.Cause{Kind: rundata.CauseThread, Name: at.threadName(st.cur), PID: st.cur.pid, Policy: policyName(st.cur.pid, st.cur.prio, at.names)}
		if at.waitFrom <= a && b <= at.waitTo && st.cur.prio >= 100 {
			c.Kind = rundata.CauseHeld
		}
	}
	if _, ok := at.causes[c]; !ok {
		at.order = append(at.order, c)
	}
	at.causes[c] += b - a
	at.slice(c.Kind, c.Name, a, b)
}

// throttled reports whether [a, b) lies where the real-time audio thread
// waited on the CPU and st's task is one the scheduler switched to during
// that wait although it is not real-time (or is idle): it picks such a
// task over a runnable real-time one only while real-time threads are
// throttled. A task already running when the audio thread woke is not
// (it may be held in kernel code instead: CauseHeld).
func (at *attribution) throttled(st *cpuState, a, b int64) bool {
	if at.waitFrom > a || b > at.waitTo || !st.known || at.audio.is(st.cur.pid, st.cur.comm) {
		return false
	}
	if st.cur.pid == 0 && at.idleThrottled {
		return true
	}
	return st.since >= at.waitFrom && (st.cur.pid == 0 || st.cur.prio >= 100)
}

// throttleIdle is how long an idle CPU must leave the woken real-time
// audio thread waiting before idleThroughWait calls it throttling: leaving
// idle takes microseconds on bare metal and under a millisecond on an
// emulated CPU, while throttling lasts the rest of an rt period (up to
// sched_rt_period_us − sched_rt_runtime_us, 50 ms by default).
const throttleIdle = 10e6

// idleThroughWait reports whether the CPU was idle from the audio thread's
// wakeup on it until at least throttleIdle later: the scheduler picked
// idle over the runnable real-time thread, which it does only while
// real-time threads are throttled. (No sched_switch marks it: idle was
// running already, and schedule() keeps it.) A hypervisor that stops the
// virtual CPU for as long would look the same; budget is false when the
// kernel has no real-time budget, and then it is never throttling.
func idleThroughWait(base cpuState, evs []Event, wait [2]int64, budget bool) bool {
	if !budget || wait[1]-wait[0] < throttleIdle {
		return false
	}
	st := base.clone()
	for i := range evs {
		if evs[i].TS > wait[0] {
			if evs[i].Kind == evSwitch {
				return st.known && st.cur.pid == 0 && evs[i].TS-wait[0] >= throttleIdle
			}
			continue
		}
		st.apply(&evs[i])
	}
	return false
}

func (at *attribution) slice(kind, name string, a, b int64) {
	if n := len(at.strip); n > 0 {
		l := &at.strip[n-1]
		if l.Kind == kind && l.Name == name && l.StartNS+l.NS == a-at.from {
			l.NS += b - a
			return
		}
	}
	at.strip = append(at.strip, rundata.Slice{Kind: kind, Name: name, StartNS: a - at.from, NS: b - a})
}

// explainCPU shares out [from, to) on one CPU: base is the CPU's state
// before evs (sorted by time), which run past to. The real-time audio
// thread was runnable on the CPU during wait (empty: not known).
func explainCPU(base cpuState, evs []Event, from, to int64, wait [2]int64, budget bool, audio Thread, names resolver) (causes []rundata.Cause, unexplained int64, strip []rundata.Slice) {
	at := &attribution{from: from, to: to, audio: audio, names: names, causes: map[rundata.Cause]int64{}, waitFrom: wait[0], waitTo: wait[1],
		idleThrottled: idleThroughWait(base, evs, wait, budget)}
	st := base.clone()
	out := switchedOut(evs, to)
	if t, ok := out[-1]; ok && st.known && st.cur.pid == t.pid {
		st.cur = t
	}
	last := int64(-1 << 62)
	for i := range evs {
		ev := &evs[i]
		if ev.TS >= to {
			break
		}
		at.charge(&st, last, ev.TS)
		st.apply(ev)
		if t, ok := out[i]; ok && ev.Kind == evSwitch {
			st.cur = t
		}
		last = ev.TS
	}
	at.charge(&st, last, to)
	for _, c := range at.order {
		c.NS = at.causes[c]
		causes = append(causes, c)
	}
	sort.SliceStable(causes, func(i, j int) bool { return causes[i].NS > causes[j].NS })
	return causes, at.unknown, at.strip
}

// switchedOut gives each run of a task that ends by to the task as it was
// switched out (sched_switch's prev_comm and prev_prio), keyed by the
// index of the event that switched it in (-1: the run under way before
// evs). A task may rename itself, exec or change its priority while it
// runs: its switch-in names what it was, its switch-out what it had
// become, and the latter is what held the CPU (the osnoise tracer, too,
// names a thread's noise by its name at the end).
func switchedOut(evs []Event, to int64) map[int]task {
	out := map[int]task{}
	in := -1
	for i := range evs {
		ev := &evs[i]
		if ev.Kind != evSwitch {
			continue
		}
		if ev.TS >= to {
			break
		}
		if in >= 0 && evs[in].PID == ev.PrevPID || in < 0 {
			out[in] = task{ev.PrevPID, ev.PrevComm, ev.PrevPrio}
		}
		in = i
	}
	return out
}

// explain finds the CPU the audio thread ran on at woke (its last
// switch-in before then), and shares out [due, woke) on that CPU. The
// thread's wakeup (the last sched_wakeup in the window) splits the window
// into the wakeup itself and the wait to run.
func explain(cpus map[int]*cpuLog, audio Thread, due, woke int64, budget bool, names resolver) rundata.Spike {
	sp := rundata.Spike{LatencyNS: woke - due, CPU: -1, WakeupNS: -1, RunDelayNS: -1}
	runTS, wakeTS := int64(-1), int64(-1)
	runPrio := -1
	var wake *Event
	for cpu, l := range cpus {
		for i := len(l.evs) - 1; i >= 0; i-- {
			ev := &l.evs[i]
			if ev.TS > woke {
				continue
			}
			if ev.Kind == evSwitch && audio.is(ev.PID, ev.Comm) {
				if ev.TS > runTS {
					runTS, sp.CPU, runPrio = ev.TS, cpu, ev.Prio
				}
				break
			}
		}
		for i := len(l.evs) - 1; i >= 0 && l.evs[i].TS >= due; i-- {
			ev := &l.evs[i]
			if ev.Kind == evWakeup && ev.TS <= woke && audio.is(ev.PID, ev.Comm) {
				if ev.TS > wakeTS {
					wakeTS, wake = ev.TS, ev
				}
				break
			}
		}
	}
	if sp.CPU < 0 {
		sp.UnexplainedNS = sp.LatencyNS
		return sp
	}
	if wakeTS >= 0 {
		sp.WakeupNS = wakeTS - due
		if runTS >= wakeTS {
			sp.RunDelayNS = runTS - wakeTS
		}
	}
	// While a real-time audio thread waits on its CPU (woken, or preempted
	// and still runnable), an ordinary thread runs there only in kernel
	// code it cannot be preempted in, or while real-time threads are
	// throttled.
	wait := [2]int64{1, 0}
	if wake != nil && wake.TargetCPU == sp.CPU && wake.Prio >= 0 && wake.Prio < 100 && runTS >= wakeTS {
		wait = [2]int64{wakeTS, runTS}
	}
	l := cpus[sp.CPU]
	if p := preemptedAt(l, audio, runTS); p > wait[0] && runPrio >= 0 && runPrio < 100 {
		wait = [2]int64{p, runTS}
	}
	sp.Causes, sp.UnexplainedNS, sp.Strip = explainCPU(l.base, l.evs, due, woke, wait, budget, audio, names)
	return sp
}

// preemptedAt is when the audio thread last left the CPU before run while
// still runnable (preempted, or stopped by RT throttling), or -1 when it
// last left by going to sleep or the log does not say.
func preemptedAt(l *cpuLog, audio Thread, run int64) int64 {
	for i := len(l.evs) - 1; i >= 0; i-- {
		ev := &l.evs[i]
		if ev.TS >= run || ev.Kind != evSwitch || !audio.is(ev.PrevPID, ev.PrevComm) {
			continue
		}
		if ev.PrevRunnable {
			return ev.TS
		}
		return -1
	}
	return -1
}
