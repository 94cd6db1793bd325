package ktrace

import (
	"sync"

	"latencytest/rundata"
)

// maxPerPhase bounds the spikes explained per phase: a phase that is late
// on every period says so with the first thousands, and the trace's cost
// and spikes.json stay bounded.
const maxPerPhase = 2000

// A Recorder explains the spikes among a run's samples in the background:
// Offer never blocks the path the samples take to disk.
type Recorder struct {
	s     *Session
	above int64
	// onSpike, if set, is called (from the recorder's goroutine) with each
	// spike explained, e.g. to name an xrun's main culprit on the terminal.
	onSpike func(rundata.Spike)

	in   chan item
	done chan struct{}

	mu        sync.Mutex
	spikes    []rundata.Spike // since the last Cut
	perPhase  map[int]int
	dropped   int64
	droppedIn map[int]bool // the phases with spikes dropped
	lostCut   int64        // the session's lost events at the last Cut
	pending   sync.WaitGroup
}

type item struct {
	phase int
	audio Thread
	s     rundata.Sample
}

// NewRecorder explains, with s, every sample later than above (ns) or with
// an xrun.
func NewRecorder(s *Session, above int64, onSpike func(rundata.Spike)) *Recorder {
	r := &Recorder{s: s, above: above, onSpike: onSpike, in: make(chan item, 1024),
		done: make(chan struct{}), perPhase: map[int]int{}, droppedIn: map[int]bool{}}
	go r.run()
	return r
}

// Offer hands over a phase's sample of the audio thread audio; it is
// explained if it is a spike.
func (r *Recorder) Offer(phase int, audio Thread, smp *rundata.Sample) {
	if smp.Latency() <= r.above && smp.Xrun == 0 {
		return
	}
	r.mu.Lock()
	over := r.perPhase[phase] >= maxPerPhase
	if !over {
		r.perPhase[phase]++
	}
	r.mu.Unlock()
	if over {
		r.drop(phase)
		return
	}
	r.pending.Add(1)
	select {
	case r.in <- item{phase, audio, *smp}:
	default:
		r.pending.Done()
		r.drop(phase)
	}
}

func (r *Recorder) drop(phase int) {
	r.mu.Lock()
	r.dropped++
	r.droppedIn[phase] = true
	r.mu.Unlock()
}

// Dropped says whether some of phase's spikes were left unexplained
// since the last Cut (the per-phase limit, or the queue full).
func (r *Recorder) Dropped(phase int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.droppedIn[phase]
}

func (r *Recorder) run() {
	defer close(r.done)
	for it := range r.in {
		// An xrun can come after an on-time wakeup, from what held the
		// thread during its period's work (RT throttling stops it there
		// too): its window runs until the work was done.
		end := it.s.Woke
		if it.s.Xrun != 0 {
			end += max(it.s.DSP, 0)
		}
		// From the period's end on the card's clock: a late interrupt
		// is part of the spike, and its cause in the window.
		due := it.s.Boundary()
		sp := r.s.Explain(it.audio, due, end)
		sp.LatencyNS = it.s.Latency()
		sp.Phase, sp.Period, sp.DueNS, sp.XrunNS = it.phase, it.s.Index, due, it.s.Xrun
		r.mu.Lock()
		r.spikes = append(r.spikes, sp)
		r.mu.Unlock()
		if r.onSpike != nil {
			r.onSpike(sp)
		}
		r.pending.Done()
	}
}

// Flush waits until every spike offered so far is explained, and returns
// all spikes of the run so far (since the last Cut).
func (r *Recorder) Flush() []rundata.Spike {
	r.pending.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rundata.Spike(nil), r.spikes...)
}

// Cut ends a part of a run that is recorded apart (a rotation of
// latencytest monitor, which traces on): it waits until every spike
// offered so far is explained, says what was recorded since the last Cut,
// and starts afresh: Flush returns the spikes offered after it, and each
// phase may have maxPerPhase again. Memory stays flat however long the
// run.
func (r *Recorder) Cut() rundata.Trace {
	r.pending.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.info()
	if err := r.s.Err(); err != nil {
		t.Note = err.Error()
	}
	r.spikes, r.perPhase, r.dropped, r.lostCut = nil, map[int]int{}, 0, r.lostCut+t.Lost
	r.droppedIn = map[int]bool{}
	return t
}

// info is what was recorded since the last Cut.
func (r *Recorder) info() rundata.Trace {
	t := rundata.Trace{Enabled: true, AboveNS: r.above, Lost: r.s.Lost() - r.lostCut, Dropped: r.dropped}
	t.Osnoise, t.OsnoiseNote = r.s.Osnoise()
	return t
}

// Close explains what is left, stops the trace and says what was recorded
// (since the last Cut).
func (r *Recorder) Close() rundata.Trace {
	r.pending.Wait()
	close(r.in)
	<-r.done
	t := r.info()
	if err := r.s.Stop(); err != nil {
		t.Note = err.Error()
	} else if err := r.s.Err(); err != nil {
		t.Note = err.Error()
	}
	return t
}
