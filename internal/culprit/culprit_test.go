package culprit

import (
	"strings"
	"testing"
	"time"

	"latencytest/rundata"
)

// Run's bursts last Busy by its clock, and what it says Parse reads back.
func TestRunSaysItsBursts(t *testing.T) {
	var out strings.Builder
	c := Config{Name: "lt-culprit-t", CPU: 0, Prio: 1, Busy: 2 * time.Millisecond, Gap: time.Millisecond, Bursts: 3}
	if err := Run(c, &out); err != nil {
		t.Fatalf("%v (needs root)", err)
	}
	bs, err := Parse(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != c.Bursts {
		t.Fatalf("%d bursts said, want %d:\n%s", len(bs), c.Bursts, out.String())
	}
	for i, b := range bs {
		if b.TID <= 0 || b.Ready <= 0 || b.Ready > b.Start {
			t.Errorf("burst %d: thread id %d, ready at %d, start %d", i, b.TID, b.Ready, b.Start)
		}
		if d := b.End - b.Start; d < int64(c.Busy) || b.CPU <= 0 || b.CPU > d || b.Held() < 0 || b.Held() > d {
			t.Errorf("burst %d: %v; want at least %v, CPU and gaps within it", i, b, c.Busy)
		}
	}
}

// A gap the burst's loop saw is time the culprit did not run, in a
// window and in the judgement of a tracer's account of it.
func TestGapsAreNotTheCulprits(t *testing.T) {
	b, err := Parse("7 1000000 1000000 6000000 5000000 2000000 3000000\n")
	if err != nil || len(b) != 1 {
		t.Fatal(b, err)
	}
	if got := b[0].Ran(0, 10e6); got != 4e6 {
		t.Errorf("ran %d in the whole burst, want 4e6", got)
	}
	if got := b[0].Ran(2.5e6, 4e6); got != 1e6 {
		t.Errorf("ran %d from 2.5 to 4 ms, want 1e6", got)
	}
	c := Config{Name: "lt-culprit", Prio: 90}
	me := rundata.Cause{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 7, Policy: "SCHED_FIFO 90", NS: 4e6}
	irq := rundata.Cause{Kind: rundata.CauseIRQ, Name: "vector local_timer", NS: 1e6}
	for _, tc := range []struct {
		causes []rundata.Cause
		ok     bool
	}{
		{[]rundata.Cause{me, irq}, true},
		{[]rundata.Cause{irq, me}, false}, // it ran most of the delay
		{[]rundata.Cause{{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 7, Policy: "SCHED_FIFO 90", NS: 5e6}}, true}, // the gap was the host's
		{[]rundata.Cause{{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 7, Policy: "SCHED_FIFO 90", NS: 6.1e6}}, false},
		{[]rundata.Cause{{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 7, Policy: "SCHED_FIFO 90", NS: 3.1e6}}, false},
		{[]rundata.Cause{{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 7, Policy: "SCHED_OTHER", NS: 4e6}}, false},
		{[]rundata.Cause{irq}, false},
	} {
		if msg := b[0].Judge(c, 1e6, 6e6, tc.causes); (msg == "") != tc.ok {
			t.Errorf("%v: %q, want ok %v", tc.causes, msg, tc.ok)
		}
	}
	if _, err := Parse("7 100 100 5100 4600 7\n"); err == nil {
		t.Error("a gap with one instant: no error")
	}
}

// From the end of its sleep the culprit is runnable at its priority: time
// between then and its burst's start is its, by the tracer, too.
func TestJudgeCountsFromReady(t *testing.T) {
	c := Config{Name: "lt-culprit", Prio: 90}
	me := []rundata.Cause{{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 7, Policy: "SCHED_FIFO 90", NS: 6.4e6}}
	b := Burst{TID: 7, Ready: 0.5e6, Start: 1e6, End: 6e6}
	if msg := b.Judge(c, 0, 6e6, me); msg != "" {
		t.Errorf("woken at 0.5 ms: %s", msg)
	}
	b.Ready = b.Start
	if msg := b.Judge(c, 0, 6e6, me); msg == "" {
		t.Errorf("6.4 ms in the trace, 5 ms from ready to end: no complaint")
	}
}
