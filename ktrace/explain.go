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
	waits    []wait // when the real-time audio thread was runnable on the CPU
}

// wait is a stretch [from, to) in which the real-time audio thread was
// runnable on the CPU but did not run there: woken, or taken off the CPU
// still runnable (preempted, or stopped by RT throttling).
type wait struct {
	from, to int64
	// idleThrottled: the CPU idled from the wakeup on for so long that
	// only RT throttling explains it (throttleIdle).
	idleThrottled bool
}

// charge gives [a, b), clipped to the window, to what st was doing.
func (at *attribution) charge(st *cpuState, a, b int64) {
	a, b = max(a, at.from), min(b, at.to)
	if b <= a {
		return
	}
	for _, w := range at.waits {
		for _, cut := range [2]int64{w.from, w.to} {
			if a < cut && cut < b {
				at.charge(st, a, cut)
				at.charge(st, cut, b)
				return
			}
		}
	}
	w := at.waitOver(a, b)
	var c rundata.Cause
	switch {
	case len(st.stack) > 0:
		f := st.stack[len(st.stack)-1]
		c = rundata.Cause{Kind: f.kind, Name: f.name}
	case !st.known:
		at.unknown += b - a
		at.slice("", "unexplained", a, b)
		return
	case at.throttled(st, w):
		c = rundata.Cause{Kind: rundata.CauseThrottled, Name: "RT throttling"}
	case st.cur.pid == 0:
		c = rundata.Cause{Kind: rundata.CauseIdle, Name: "idle"}
	case at.audio.is(st.cur.pid, st.cur.comm):
		c = rundata.Cause{Kind: rundata.CauseAudio, Name: st.cur.comm, PID: st.cur.pid}
	default:
		c = rundata.Cause{Kind: rundata.CauseThread, Name: at.threadName(st.cur), PID: st.cur.pid, Policy: policyName(st.cur.pid, st.cur.prio, at.names)}
		if w != nil && st.cur.prio >= 100 {
			c.Kind = rundata.CauseHeld
		}
	}
	if _, ok := at.causes[c]; !ok {
		at.order = append(at.order, c)
	}
	at.causes[c] += b - a
	at.slice(c.Kind, c.Name, a, b)
}

// waitOver is the wait that holds [a, b), or nil (charge has cut the
// stretch at every wait's ends).
func (at *attribution) waitOver(a, b int64) *wait {
	for i := range at.waits {
		if w := &at.waits[i]; w.from <= a && b <= w.to {
			return w
		}
	}
	return nil
}

// throttled reports whether st's task holds the CPU during w (not nil)
// as one the scheduler switched to although it is not real-time (or is
// idle): it picks such a task over a runnable real-time one only while
// real-time threads are throttled. A task already running when the audio
// thread woke is not (it may be held in kernel code instead: CauseHeld).
func (at *attribution) throttled(st *cpuState, w *wait) bool {
	if w == nil || !st.known || at.audio.is(st.cur.pid, st.cur.comm) {
		return false
	}
	if st.cur.pid == 0 && w.idleThrottled {
		return true
	}
	return st.since >= w.from && (st.cur.pid == 0 || st.cur.prio >= 100)
}

// throttleIdle is how long an idle CPU must leave the woken real-time
// audio thread waiting before it is called throttling: leaving idle takes
// microseconds on bare metal and under a millisecond on an emulated CPU,
// while throttling lasts the rest of an rt period (up to
// sched_rt_period_us − sched_rt_runtime_us, 50 ms by default). The
// scheduler picked idle over the runnable real-time thread, which it does
// only while real-time threads are throttled. (No sched_switch marks it:
// idle was running already, and schedule() keeps it.) A hypervisor that
// stops the virtual CPU for as long would look the same; where the kernel
// has no real-time budget it is never throttling.
const throttleIdle = 10e6

// waitsOn finds every wait of the real-time audio thread on cpu, whose
// log is l, that overlaps [from, to): from its wakeup for the CPU (not while
// it runs: a timer that expires before the thread has left the CPU wakes
// it there) or from its leaving the CPU still runnable, until it was
// switched in. Throttling stops it anywhere: while it waits for its
// period, or during its work, perhaps several times in one window; the
// last wait alone (the one before the switch in that ended the window)
// missed the stop during the previous period's work that a late wakeup
// after a short sleep followed (arm64 VM, CI).
func waitsOn(l *cpuLog, cpu int, audio Thread, from, to int64, budget bool) []wait {
	var ws []wait
	st := l.base.clone()
	running := st.known && audio.is(st.cur.pid, st.cur.comm)
	open, idleWoken := -1, -1 // the wait under way; one woken on an idle CPU, until the CPU's next switch
	switched := func(ts int64) {
		if idleWoken >= 0 {
			ws[idleWoken].idleThrottled = budget && ts-ws[idleWoken].from >= throttleIdle
			idleWoken = -1
		}
	}
	for i := range l.evs {
		ev := &l.evs[i]
		if ev.TS >= to {
			if ev.Kind == evSwitch {
				switched(ev.TS)
			}
			if idleWoken < 0 {
				break
			}
			continue
		}
		switch {
		case ev.Kind == evWakeup && !running && open < 0 && ev.TargetCPU == cpu && realtime(ev.Prio) && audio.is(ev.PID, ev.Comm):
			ws = append(ws, wait{from: ev.TS, to: to})
			open = len(ws) - 1
			if st.known && st.cur.pid == 0 {
				idleWoken = open
			}
		case ev.Kind == evSwitch:
			switched(ev.TS)
			in := audio.is(ev.PID, ev.Comm)
			left := !in && (running || audio.is(ev.PrevPID, ev.PrevComm))
			if open >= 0 && (in || left) {
				// A switch in ends the wait. One out shows that the thread
				// ran: a wait under way was none (woken while it ran,
				// before the history showed it running). A wait over
				// before the window is not kept: charge cuts at every one.
				if ws[open].to = ev.TS; left || ev.TS <= from {
					ws = ws[:open]
				}
				open = -1
			}
			if left && ev.PrevRunnable && realtime(ev.PrevPrio) {
				ws = append(ws, wait{from: ev.TS, to: to})
				open = len(ws) - 1
			}
			running = in
		}
		st.apply(ev)
	}
	return ws
}

// realtime reports whether a kernel priority, as sched_switch and
// sched_wakeup show it, is a real-time one (SCHED_FIFO or SCHED_RR).
func realtime(prio int) bool { return prio >= 0 && prio < 100 }

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
// thread was runnable on the CPU during waits.
func explainCPU(base cpuState, evs []Event, from, to int64, waits []wait, audio Thread, names resolver) (causes []rundata.Cause, unexplained int64, strip []rundata.Slice) {
	at := &attribution{from: from, to: to, audio: audio, names: names, causes: map[rundata.Cause]int64{}, waits: waits}
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

// lastRun is when the audio thread was last switched in on l's CPU before
// woke; ok is false when it was not. A thread that has held the CPU since
// before the history kept (a real-time thread that runs behind, its every
// sleep to a deadline already past, never leaves it) was switched in when
// the base says.
func lastRun(l *cpuLog, audio Thread, woke int64) (ts int64, ok bool) {
	for i := len(l.evs) - 1; i >= 0; i-- {
		ev := &l.evs[i]
		if ev.TS <= woke && ev.Kind == evSwitch && audio.is(ev.PID, ev.Comm) {
			return ev.TS, true
		}
	}
	return l.base.since, l.base.known && audio.is(l.base.cur.pid, l.base.cur.comm)
}

// explain finds the CPU the audio thread ran on at woke (its last
// switch-in before then), and shares out [due, woke) on that CPU. The
// thread's wakeup (the last sched_wakeup in the window) splits the window
// into the wakeup itself and the wait to run.
func explain(cpus map[int]*cpuLog, audio Thread, due, woke int64, budget bool, names resolver) rundata.Spike {
	sp := rundata.Spike{LatencyNS: woke - due, CPU: -1, WakeupNS: -1, RunDelayNS: -1}
	runTS, wakeTS := int64(-1), int64(-1)
	for cpu, l := range cpus {
		if ts, ok := lastRun(l, audio, woke); ok && ts > runTS {
			runTS, sp.CPU = ts, cpu
		}
		for i := len(l.evs) - 1; i >= 0 && l.evs[i].TS >= due; i-- {
			ev := &l.evs[i]
			if ev.Kind == evWakeup && ev.TS <= woke && audio.is(ev.PID, ev.Comm) {
				wakeTS = max(wakeTS, ev.TS)
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
	// While a real-time audio thread waits on its CPU, an ordinary thread
	// runs there only in kernel code it cannot be preempted in, or while
	// real-time threads are throttled.
	l := cpus[sp.CPU]
	waits := waitsOn(l, sp.CPU, audio, due, woke, budget)
	sp.Causes, sp.UnexplainedNS, sp.Strip = explainCPU(l.base, l.evs, due, woke, waits, audio, names)
	return sp
}
