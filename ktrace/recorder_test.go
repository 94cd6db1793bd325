package ktrace

import (
	"testing"

	"latencytest/rundata"
)

// replay is a Session over recorded events, without tracefs.
func replay(cpus map[int]*cpuLog, latest int64) *Session {
	s := &Session{cpus: cpus, latest: latest, names: newProcNames(), fd: -1, stop: make(chan struct{}), done: make(chan struct{})}
	close(s.done)
	return s
}

func TestRecorder(t *testing.T) {
	evs := []Event{sw(0, 0, "hog", 7, 120), sw(5000*us, 0, "lt-audio", 42, 19), sw(5100*us, 0, "hog", 7, 120)}
	s := replay(map[int]*cpuLog{0: {evs: evs}}, 10e9)
	var seen []rundata.Spike
	r := NewRecorder(s, 500*us, func(sp rundata.Spike) { seen = append(seen, sp) })
	a := Thread{TID: 42}
	r.Offer(0, a, &rundata.Sample{Index: 1, Due: 4800 * us, Woke: 5010 * us})            // 210 µs: not a spike
	r.Offer(1, a, &rundata.Sample{Index: 2, Due: 4000 * us, Woke: 5010 * us})            // 1.01 ms
	r.Offer(1, a, &rundata.Sample{Index: 3, Due: 4900 * us, Woke: 5010 * us, Xrun: 3e6}) // an xrun, however late
	ss := r.Flush()
	if len(ss) != 2 || ss[0].Phase != 1 || ss[0].Period != 2 || ss[0].Causes[0].Name != "hog" || ss[0].Causes[0].NS != 1000*us ||
		ss[1].Period != 3 || ss[1].XrunNS != 3e6 || len(seen) != 2 {
		t.Fatalf("spikes %+v (seen %d)", ss, len(seen))
	}
	// Past the per-phase limit, spikes are counted, not explained, and
	// the phase says some were dropped (a glitch heard then may have had
	// a spike: rundata.GlitchSpikesDropped).
	if r.Dropped(1) || r.Dropped(2) {
		t.Error("spikes dropped before any was")
	}
	for i := range maxPerPhase + 5 {
		r.Offer(2, a, &rundata.Sample{Index: int64(i), Due: 4000 * us, Woke: 5010 * us})
	}
	if !r.Dropped(2) || r.Dropped(1) {
		t.Errorf("dropped in phase 1 %v, phase 2 %v; want phase 2's", r.Dropped(1), r.Dropped(2))
	}
	tr := r.Close()
	n := 0
	for _, sp := range r.Flush() {
		if sp.Phase == 2 {
			n++
		}
	}
	if n+int(tr.Dropped) != maxPerPhase+5 || n > maxPerPhase || !tr.Enabled || tr.AboveNS != 500*us {
		t.Errorf("phase 2: %d explained, trace %+v", n, tr)
	}
}
