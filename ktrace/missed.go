package ktrace

import (
	"slices"
	"sort"
)

// A sched_switch the kernel did not record. On some kernels a task's
// switches out are missing from the trace: on this project's build hosts
// (Linux 6.18 in a Firecracker VM) every switch out of one thread of the
// VM's init, in the kernel's own text as in trace_pipe_raw, so the trace
// had it hold the CPU until the next switch recorded, whose prev is
// another task, and a spike's culprit was charged to it. Every record
// carries the task running when it was written (common_pid): the last
// record written under the task switched in and the first under another
// bound the switch that was not recorded. The stretch between them is
// unexplained (who ran there the trace cannot say), the other task's from
// its first record on.

// unknownPID is the task of a stretch no record names: the switch out of
// the task before it was not recorded.
const unknownPID = -1

// occupant follows which task a CPU's records were written under since
// its last sched_switch.
type occupant struct {
	known   bool
	cur     task  // the last switch's next task
	curSeen int64 // its last record (or its switch in)
	other   int   // another task seen running since, or unknownPID
	seen    int64 // that task's first record
}

// see notes the task a record other than a switch was written under. The
// osnoise tracer's records are not evidence: its sched_switch hook writes
// the thread that stops after the switch's own record. A record under the
// task switched in after another task's is none either: the switch out
// must be recorded, or nothing is put back.
func (o *occupant) see(ev *Event) {
	if !o.known || !ev.CurrentKnown || ev.Kind == evNoise {
		return
	}
	switch ev.Current {
	case o.cur.pid:
		o.curSeen, o.other = ev.TS, unknownPID
	case o.other:
	default:
		o.other, o.seen = ev.Current, ev.TS
	}
}

// switched takes a recorded switch, sw, and returns the switches before it
// that the kernel did not record: none, or one from the task switched in
// last to unknownPID after its last record, and, when sw's prev was seen
// running, one to it at its first record.
func (o *occupant) switched(sw *Event) []Event {
	var missed []Event
	if o.known && sw.PrevPID != o.cur.pid {
		missed = append(missed, Event{TS: o.curSeen, CPU: sw.CPU, Kind: evSwitch, PID: unknownPID, Prio: 120,
			PrevPID: o.cur.pid, PrevComm: o.cur.comm, PrevPrio: o.cur.prio})
		if o.other == sw.PrevPID {
			missed = append(missed, Event{TS: o.seen, CPU: sw.CPU, Kind: evSwitch, PID: sw.PrevPID, Comm: sw.PrevComm, Prio: sw.PrevPrio,
				PrevPID: unknownPID, PrevPrio: 120})
		}
	}
	*o = occupant{known: true, cur: task{sw.PID, sw.Comm, sw.Prio}, curSeen: sw.TS, other: unknownPID}
	return missed
}

// insert puts a switch that was not recorded into the log in time order:
// after the records at its instant (the last one written under the task
// it ends), or, switching in a task, before them (its first record).
func (l *cpuLog) insert(ev Event) {
	i := sort.Search(len(l.evs), func(i int) bool {
		if ev.PID == unknownPID {
			return l.evs[i].TS > ev.TS
		}
		return l.evs[i].TS >= ev.TS
	})
	l.evs = slices.Insert(l.evs, i, ev)
}
