package ktrace

import (
	"strconv"
	"strings"
)

// Kinds of Event.
const (
	evSwitch      = iota + 1 // sched_switch: Prev* ran until now, then PID
	evWakeup                 // sched_wakeup(_new): PID became runnable
	evIRQEntry               // irq_handler_entry: IRQ Name
	evIRQExit                //
	evSoftEntry              // softirq_entry: Name is the vector's action
	evSoftExit               //
	evVectorEntry            // irq_vectors *_entry: Name is the vector ("local_timer")
	evVectorExit             //
	evNoise                  // osnoise:*_noise: the kernel's own measure of one interference (Noise)
	evMigrate                // sched_migrate_task: PID moved from OrigCPU's run queue to TargetCPU's
)

// Kinds of noise (the osnoise tracer's events), innermost last: a context
// of a later kind interrupts one of an earlier kind, never the reverse.
const (
	noiseThread  = iota + 1 // thread_noise: a thread ran (Name, PID)
	noiseSoftIRQ            // softirq_noise: a softirq ran (Name, IRQ the vector)
	noiseIRQ                // irq_noise: a hard IRQ handler or an x86 vector (Name, IRQ)
	noiseNMI                // nmi_noise
)

// Event is one trace record that bears on a CPU's time.
type Event struct {
	TS   int64 // CLOCK_MONOTONIC ns (trace_clock mono)
	CPU  int
	Kind int

	// sched_switch: the next task; sched_wakeup: the woken one.
	PID  int
	Comm string
	Prio int // the kernel's priority: 0-99 real-time (99 − rt_priority), 100-139 SCHED_OTHER, -1 deadline

	// sched_switch: the task that stops, and whether it stays runnable
	// (prev_state R: preempted, not gone to sleep).
	PrevPID      int
	PrevComm     string
	PrevPrio     int
	PrevRunnable bool

	TargetCPU int // sched_wakeup, sched_migrate_task: the CPU whose run queue the task joins
	OrigCPU   int // sched_migrate_task: the CPU it leaves

	IRQ  int    // irq_handler_*: the line; softirq_*: the vector
	Name string // the IRQ handler, softirq action or vector name

	// evNoise: NoiseKind, and from the event's own fields the start (the
	// kernel's trace_clock_local, not the instance's clock: see
	// clockMap) and the duration net of what interrupted it. The event
	// is written as the interference ends: TS is its end.
	NoiseKind  int
	NoiseStart int64
	NoiseNS    int64

	// Current is the task that was running on the CPU when the record was
	// written (its common_pid; 0 the idle task), when CurrentKnown. It
	// shows a sched_switch the kernel did not record (missed.go).
	Current      int
	CurrentKnown bool
}

// parseLine parses one line of a tracefs trace (or trace_pipe) in the
// default text format:
//
//	<comm>-<pid> [cpu] flags secs.usecs: event: fields
//
// ok is false for lines of other events, comments and lost-event notes.
// Task names may hold spaces and dashes, so fields are found by their
// names rather than by position.
func parseLine(line string) (ev Event, ok bool) {
	lb := strings.Index(line, "] ")
	if lb < 0 {
		return ev, false
	}
	open := strings.LastIndexByte(line[:lb], '[')
	if open < 0 {
		return ev, false
	}
	cpu, err := strconv.Atoi(line[open+1 : lb])
	if err != nil {
		return ev, false
	}
	rest := line[lb+2:]
	colon := strings.Index(rest, ": ")
	if colon < 0 {
		return ev, false
	}
	head := strings.Fields(rest[:colon])
	if len(head) == 0 {
		return ev, false
	}
	ts, ok := parseTS(head[len(head)-1])
	if !ok {
		return ev, false
	}
	rest = rest[colon+2:]
	name, body, ok := strings.Cut(rest, ": ")
	if !ok {
		return ev, false
	}
	ev.TS, ev.CPU = ts, cpu
	task := strings.TrimSpace(line[:open])
	if i := strings.LastIndexByte(task, '('); i > 0 && strings.HasSuffix(task, ")") {
		task = strings.TrimSpace(task[:i]) // record-tgid's "(  123)"
	}
	if dash := strings.LastIndexByte(task, '-'); dash >= 0 {
		if pid, err := strconv.Atoi(task[dash+1:]); err == nil {
			ev.Current, ev.CurrentKnown = pid, true
		}
	}
	switch name {
	case "sched_switch":
		return parseSwitch(ev, body)
	case "sched_wakeup", "sched_wakeup_new":
		ev.Kind = evWakeup
		ev.Comm = field(body, "comm=", " pid=")
		ev.PID, ok = intField(body, " pid=")
		ev.Prio, _ = intField(body, " prio=")
		ev.TargetCPU, _ = intField(body, " target_cpu=")
		return ev, ok && ev.Comm != ""
	case "sched_migrate_task":
		ev.Kind = evMigrate
		ev.Comm = field(body, "comm=", " pid=")
		ev.PID, ok = intField(body, " pid=")
		ev.Prio, _ = intField(body, " prio=")
		ev.OrigCPU, _ = intField(body, " orig_cpu=")
		ev.TargetCPU, _ = intField(body, " dest_cpu=")
		return ev, ok && ev.Comm != ""
	case "irq_handler_entry":
		ev.Kind = evIRQEntry
		ev.IRQ, ok = intField(body, "irq=")
		ev.Name = strings.TrimSpace(field(body, " name=", ""))
		return ev, ok
	case "irq_handler_exit":
		ev.Kind = evIRQExit
		ev.IRQ, ok = intField(body, "irq=")
		return ev, ok
	case "softirq_entry", "softirq_exit":
		ev.Kind = evSoftEntry
		if name == "softirq_exit" {
			ev.Kind = evSoftExit
		}
		ev.IRQ, ok = intField(body, "vec=")
		ev.Name = field(body, "[action=", "]")
		return ev, ok
	}
	if kind, ok := noiseKinds[name]; ok {
		return parseNoise(ev, kind, body)
	}
	if v, found := strings.CutSuffix(name, "_entry"); found && strings.HasPrefix(body, "vector=") {
		ev.Kind, ev.Name = evVectorEntry, v
		return ev, true
	}
	if v, found := strings.CutSuffix(name, "_exit"); found && strings.HasPrefix(body, "vector=") {
		ev.Kind, ev.Name = evVectorExit, v
		return ev, true
	}
	return ev, false
}

var noiseKinds = map[string]int{"thread_noise": noiseThread, "softirq_noise": noiseSoftIRQ, "irq_noise": noiseIRQ, "nmi_noise": noiseNMI}

// parseNoise reads an osnoise event's body:
//
//	irq_noise: local_timer:236 start 7.096353308 duration 70101 ns
//	softirq_noise:    TIMER:1 start ... duration ... ns
//	thread_noise: swapper/0:0 start ... duration ... ns
//	nmi_noise: start ... duration ... ns
//
// The name may hold colons and spaces (a thread's comm): the number is
// after the last colon before " start ".
func parseNoise(ev Event, kind int, body string) (Event, bool) {
	who, times, ok := strings.Cut(body, "start ")
	if !ok {
		return ev, false
	}
	start, dur, ok := strings.Cut(times, " duration ")
	if !ok {
		return ev, false
	}
	var err error
	ev.Kind, ev.NoiseKind = evNoise, kind
	if ev.NoiseStart, ok = parseTS(start); !ok {
		return ev, false
	}
	if ev.NoiseNS, err = strconv.ParseInt(strings.TrimSuffix(dur, " ns"), 10, 64); err != nil || ev.NoiseNS < 0 {
		return ev, false
	}
	if kind == noiseNMI {
		return ev, true
	}
	who = strings.TrimSpace(who)
	i := strings.LastIndexByte(who, ':')
	if i < 0 {
		return ev, false
	}
	n, err := strconv.Atoi(who[i+1:])
	if err != nil {
		return ev, false
	}
	name := strings.TrimSpace(who[:i])
	if kind == noiseThread {
		ev.PID, ev.Comm = n, name
	} else {
		ev.IRQ, ev.Name = n, name
	}
	return ev, name != ""
}

func parseSwitch(ev Event, body string) (Event, bool) {
	prev, next, ok := strings.Cut(body, " ==> ")
	if !ok {
		return ev, false
	}
	ev.Kind = evSwitch
	ev.PrevComm = field(prev, "prev_comm=", " prev_pid=")
	ev.PrevPID, ok = intField(prev, " prev_pid=")
	ev.PrevPrio, _ = intField(prev, " prev_prio=")
	if _, state, ok := strings.Cut(prev, " prev_state="); ok {
		ev.PrevRunnable = strings.HasPrefix(state, "R")
	}
	ev.Comm = field(next, "next_comm=", " next_pid=")
	var ok2 bool
	ev.PID, ok2 = intField(next, " next_pid=")
	ev.Prio, _ = intField(next, " next_prio=")
	return ev, ok && ok2
}

// parseTS reads "secs.usecs" as ns.
func parseTS(s string) (int64, bool) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) == 0 || len(frac) > 9 {
		return 0, false
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return 0, false
	}
	for i := len(frac); i < 9; i++ {
		b *= 10
	}
	return a*1e9 + b, true
}

// field returns what stands between key and end (to the end of s when
// end is "" or not found).
func field(s, key, end string) string {
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	if end != "" {
		if j := strings.Index(s, end); j >= 0 {
			return s[:j]
		}
	}
	return s
}

// intField reads the integer after key.
func intField(s, key string) (int, bool) {
	v := field(s, key, " ")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}
