package ktrace

import (
	"fmt"
	"slices"
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
	// owner names the part of latencytest thread pid, which ran as
	// comm, belongs to (its parent, the engine, the stressor), or "" for
	// any other thread: the first two share one command name.
	owner(pid int, comm string) string
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
		if o := at.names.owner(t.pid, t.comm); o != "" {
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
	// idleLong: the CPU idled from the wakeup on for throttleIdle or
	// more, which RT throttling explains where the budget was spent.
	// spent: the trace allows that the real-time budget was used up
	// (rtLimit.spent); without it nothing in the wait is throttling.
	// stopped: a long idle the budget does not explain, on a virtual
	// machine: its hypervisor did not run the CPU.
	idleLong, spent, stopped bool
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
	case !st.known || st.cur.pid == unknownPID:
		at.unknown += b - a
		at.slice("", "unexplained", a, b)
		return
	case at.throttled(st, w):
		c = rundata.Cause{Kind: rundata.CauseThrottled, Name: "RT throttling"}
	case st.cur.pid == 0 && w != nil && w.stopped:
		c = rundata.Cause{Kind: rundata.CauseStopped, Name: "the machine was stopped"}
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
	if st.cur.pid == 0 && w.idleLong && w.spent {
		return true
	}
	return w.spent && st.since >= w.from && (st.cur.pid == 0 || st.cur.prio >= 100)
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

// rtLimit is the kernel's real-time budget: real-time threads may run
// runtimeNS of every periodNS on a CPU, then they are throttled until the
// period ends. The zero value is no budget (sched_rt_runtime_us −1).
// virtual says the machine is a virtual one, whose CPUs its hypervisor
// can stop: an idle CPU that kept a runnable real-time thread waiting,
// the budget not spent, was stopped.
type rtLimit struct {
	runtimeNS, periodNS int64
	virtual             bool
}

func (b rtLimit) on() bool { return b.periodNS > 0 }

// spent says whether the trace allows that real-time threads were
// throttled on the CPU of l at t: the budget had been used up. A throttle
// active at t began within the period t is in, so real-time tasks ran at
// least runtimeNS in the period before it began, all of which lies in the
// two periods before t. Where the history does not reach that far back,
// the trace cannot tell, and it is allowed. (The trace counts the
// interrupts inside a real-time task as its time; a kernel without
// interrupt time accounting does too, one with it less: either way no more
// than the trace.)
func (b rtLimit) spent(l *cpuLog, t int64) bool {
	if !b.on() {
		return false
	}
	ns, known := rtBusy(l, t-2*b.periodNS, t)
	return !known || ns >= b.runtimeNS
}

// rtBusy is how long real-time tasks ran on the CPU of l in [from, to);
// known is false when its history does not reach back to from.
func rtBusy(l *cpuLog, from, to int64) (ns int64, known bool) {
	st := l.base.clone()
	if !st.known || st.since > from {
		return 0, false
	}
	run := func(until int64) {
		if st.cur.pid != 0 && realtime(st.cur.prio) {
			ns += max(0, min(until, to)-max(st.since, from))
		}
	}
	for i := range l.evs {
		ev := &l.evs[i]
		if ev.TS >= to {
			break
		}
		if ev.Kind == evSwitch {
			run(ev.TS)
		}
		st.apply(ev)
	}
	run(to)
	return ns, true
}

// waitsOn finds every wait of the real-time audio thread on cpu, whose
// log is l, that overlaps [from, to): from its wakeup for the CPU (not while
// it runs: a timer that expires before the thread has left the CPU wakes
// it there) or from its leaving the CPU still runnable, until it was
// switched in. Throttling stops it anywhere: while it waits for its
// period, or during its work, perhaps several times in one window; the
// last wait alone (the one before the switch in that ended the window)
// missed the stop during the previous period's work that a late wakeup
// after a short sleep followed (arm64 VM, CI).
func waitsOn(l *cpuLog, cpu int, audio Thread, from, to int64, budget rtLimit, moves []Event) []wait {
	var ws []wait
	evs := withMoves(l.evs, moves)
	st := l.base.clone()
	running := st.known && audio.is(st.cur.pid, st.cur.comm)
	open, idleWoken := -1, -1 // the wait under way; one woken on an idle CPU, until the CPU's next switch
	switched := func(ts int64) {
		if idleWoken >= 0 {
			ws[idleWoken].idleLong = ts-ws[idleWoken].from >= throttleIdle
			idleWoken = -1
		}
	}
	for i := range evs {
		ev := &evs[i]
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
		case (ev.Kind == evWakeup || ev.Kind == evMigrate) && !running && open < 0 && ev.TargetCPU == cpu && realtime(ev.Prio) && audio.is(ev.PID, ev.Comm):
			// Woken for this CPU, or moved to its run queue.
			ws = append(ws, wait{from: ev.TS, to: to})
			open = len(ws) - 1
			if st.known && st.cur.pid == 0 {
				idleWoken = open
			}
		case ev.Kind == evMigrate && open >= 0 && ev.OrigCPU == cpu && audio.is(ev.PID, ev.Comm):
			// Moved off this CPU's run queue: it waits elsewhere now.
			ws[open].to, open, idleWoken = ev.TS, -1, -1
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
func explain(cpus map[int]*cpuLog, audio Thread, due, woke int64, budget rtLimit, names resolver) rundata.Spike {
	sp := rundata.Spike{LatencyNS: woke - due, CPU: -1, WakeupNS: -1, RunDelayNS: -1}
	runTS, wakeTS := int64(-1), int64(-1)
	for cpu, l := range cpus {
		if ts, ok := lastRun(l, audio, woke); ok && ts > runTS {
			runTS, sp.CPU = ts, cpu
		}
	}
	moves := audioMoves(cpus, audio, due, woke)
	for _, m := range moves {
		if m.Kind == evWakeup {
			wakeTS = m.TS // the last, in time order
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
	var merged causeSum
	for _, sg := range onCPUs(moves, due, woke, sp.CPU) {
		l := cpus[sg.cpu]
		if l == nil {
			merged.add(nil, sg.to-sg.from, []rundata.Slice{{Kind: "", Name: "unexplained", StartNS: sg.from - due, NS: sg.to - sg.from}})
			continue
		}
		// While a real-time audio thread waits on its CPU, an ordinary
		// thread runs there only in kernel code it cannot be preempted
		// in, or while real-time threads are throttled.
		waits := waitsOn(l, sg.cpu, audio, sg.from, sg.to, budget, moves)
		for i := range waits {
			// Throttling in a wait began in the period of its end at the latest.
			w := &waits[i]
			w.spent = budget.spent(l, w.to)
			w.stopped = w.idleLong && !w.spent && budget.virtual
		}
		c, u, strip := explainCPU(l.base, l.evs, sg.from, sg.to, waits, audio, names)
		for i := range strip {
			strip[i].StartNS += sg.from - due
		}
		merged.add(c, u, strip)
		if sg.cpu != sp.CPU || len(sp.CPUs) > 0 {
			sp.CPUs = append(sp.CPUs, sg.cpu)
		}
	}
	sp.Causes, sp.UnexplainedNS, sp.Strip = merged.causes, merged.unexplained, merged.strip
	return sp
}

// audioMoves are the audio thread's wakeups and migrations in [from, to]
// from every CPU's log, in time order: a wakeup is written on the waker's
// CPU (an interrupt on another), a migration on the CPU that moved it.
func audioMoves(cpus map[int]*cpuLog, audio Thread, from, to int64) []Event {
	var moves []Event
	for _, l := range cpus {
		for i := len(l.evs) - 1; i >= 0 && l.evs[i].TS >= from; i-- {
			ev := l.evs[i]
			if (ev.Kind == evWakeup || ev.Kind == evMigrate) && ev.TS <= to && audio.is(ev.PID, ev.Comm) {
				moves = append(moves, ev)
			}
		}
	}
	sort.SliceStable(moves, func(i, j int) bool { return moves[i].TS < moves[j].TS })
	return moves
}

// withMoves is evs, a CPU's own events, with the audio thread's moves
// from other CPUs' logs put in time order among them (its own are in evs
// already).
func withMoves(evs, moves []Event) []Event {
	var foreign []Event
	for _, m := range moves {
		if len(evs) == 0 || m.CPU != evs[0].CPU {
			foreign = append(foreign, m)
		}
	}
	if len(foreign) == 0 {
		return evs
	}
	out := make([]Event, 0, len(evs)+len(foreign))
	j := 0
	for i := range evs {
		for j < len(foreign) && foreign[j].TS < evs[i].TS {
			out = append(out, foreign[j])
			j++
		}
		out = append(out, evs[i])
	}
	return append(out, foreign[j:]...)
}

// segment is a stretch of a window on one CPU.
type segment struct {
	cpu      int
	from, to int64
}

// onCPUs cuts [from, to) where the audio thread migrated: each stretch is
// charged to the CPU whose run queue it was on (before the first move,
// the one it left), the last to the CPU it ran on, run.
func onCPUs(moves []Event, from, to int64, run int) []segment {
	var sgs []segment
	for _, m := range moves {
		if m.Kind != evMigrate || m.TS <= from || m.TS >= to || m.OrigCPU == m.TargetCPU {
			continue
		}
		sgs = append(sgs, segment{m.OrigCPU, from, m.TS})
		from = m.TS
	}
	return append(sgs, segment{run, from, to})
}

// causeSum adds up the accounts of a window's stretches.
type causeSum struct {
	causes      []rundata.Cause
	unexplained int64
	strip       []rundata.Slice
}

func (c *causeSum) add(causes []rundata.Cause, unexplained int64, strip []rundata.Slice) {
	for _, x := range causes {
		k := slices.IndexFunc(c.causes, func(y rundata.Cause) bool {
			return y.Kind == x.Kind && y.Name == x.Name && y.PID == x.PID && y.Policy == x.Policy
		})
		if k < 0 {
			c.causes = append(c.causes, x)
		} else {
			c.causes[k].NS += x.NS
		}
	}
	sort.SliceStable(c.causes, func(i, j int) bool { return c.causes[i].NS > c.causes[j].NS })
	c.unexplained += unexplained
	c.strip = append(c.strip, strip...)
}
