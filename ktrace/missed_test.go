package ktrace

import (
	"reflect"
	"testing"

	"latencytest/rundata"
)

// The trace of a real spike on this project's build hosts (Linux 6.18 in
// a Firecracker VM), whose kernel records no switch out of one thread of
// the VM's init (tokio-rt-worker): a real-time culprit preempts it after a
// reschedule IPI and keeps the woken audio thread waiting 4.9 ms. Without
// the records' own task (common_pid) the window was charged to the
// thread, "held", and the culprit was not among the causes. The stretch
// between the last record under the thread and the first under the
// culprit is the only one the trace cannot tell.
func TestMissedSwitchFoundFromRecords(t *testing.T) {
	const lines = ` rcu_preempt-15 [000] d..2. 1.000000: sched_switch: prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=I ==> next_comm=tokio-rt-worker next_pid=77 next_prio=110
 tokio-rt-worker-77 [000] d.h1. 1.000140: reschedule_entry: vector=253
 tokio-rt-worker-77 [000] d.h1. 1.000141: reschedule_exit: vector=253
 lt-culprit-300 [000] d.h1. 1.000320: local_timer_entry: vector=236
 lt-culprit-300 [000] d.h2. 1.000324: sched_wakeup: comm=latencytest pid=42 prio=19 target_cpu=000
 lt-culprit-300 [000] d.h1. 1.000331: local_timer_exit: vector=236
 lt-culprit-300 [000] d..2. 1.005186: sched_switch: prev_comm=lt-culprit prev_pid=300 prev_prio=9 prev_state=S ==> next_comm=latencytest next_pid=42 next_prio=19
`
	s := &Session{cpus: map[int]*cpuLog{}, names: newProcNames(), keepNS: 10e9}
	s.add([]byte(lines))
	sp := explain(s.cpus, Thread{TID: 42}, 1_000_100*us, 1_005_190*us, defaultBudget, nil)
	want := []rundata.Cause{
		{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 300, Policy: "RT 90", NS: 4855 * us},
		{Kind: rundata.CauseThread, Name: "tokio-rt-worker", PID: 77, Policy: "SCHED_OTHER", NS: 40 * us},
		{Kind: rundata.CauseIRQ, Name: "vector local_timer", NS: 11 * us},
		{Kind: rundata.CauseAudio, Name: "latencytest", PID: 42, NS: 4 * us},
		{Kind: rundata.CauseIRQ, Name: "vector reschedule", NS: 1 * us},
	}
	if !reflect.DeepEqual(sp.Causes, want) || sp.UnexplainedNS != 179*us {
		t.Errorf("causes %+v, unexplained %d ns\nwant %+v, unexplained 179 µs", sp.Causes, sp.UnexplainedNS, want)
	}
	// A switch recorded whose prev is the task switched in last: nothing
	// was missed, nothing is added.
	s = &Session{cpus: map[int]*cpuLog{}, names: newProcNames(), keepNS: 10e9}
	s.add([]byte(` rcu_preempt-15 [000] d..2. 1.000000: sched_switch: prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=I ==> next_comm=tokio-rt-worker next_pid=77 next_prio=110
 tokio-rt-worker-77 [000] d.h1. 1.000140: reschedule_entry: vector=253
 tokio-rt-worker-77 [000] d..2. 1.000200: sched_switch: prev_comm=tokio-rt-worker prev_pid=77 prev_prio=110 prev_state=S ==> next_comm=latencytest next_pid=42 next_prio=19
`))
	if n := len(s.cpus[0].evs); n != 3 {
		t.Errorf("%d events kept of 3 with no switch missed: %+v", n, s.cpus[0].evs)
	}
	// The osnoise tracer's record of the thread that stopped comes after
	// the switch, under it: not a task running.
	s = &Session{cpus: map[int]*cpuLog{}, names: newProcNames(), keepNS: 10e9}
	s.add([]byte(` rcu_preempt-15 [000] d..2. 1.000000: sched_switch: prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=I ==> next_comm=hog next_pid=7 next_prio=120
 rcu_preempt-15 [000] d...3.. 1.000004: thread_noise: rcu_preempt:15 start 0.999000000 duration 1000000 ns
 hog-7 [000] d..2. 1.000200: sched_switch: prev_comm=hog prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=latencytest next_pid=42 next_prio=19
`))
	if n := len(s.cpus[0].evs); n != 3 {
		t.Errorf("%d events kept of 3 with osnoise's record after a switch: %+v", n, s.cpus[0].evs)
	}
}
