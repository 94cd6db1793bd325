package runner

import (
	"fmt"
	"strings"

	"latencytest/ktrace"
	"latencytest/rundata"
)

// spikeTrace explains a run's spikes with the kernel's tracer (run
// --trace): it records in the background while the phases run and writes
// spikes.json as each phase ends. Without tracefs, or without the right to
// use it, the run goes on and run.json says why.
type spikeTrace struct {
	rec   *ktrace.Recorder
	info  rundata.Trace
	audio ktrace.Thread // the current phase's audio thread
}

// startTrace starts the tracer for a run whose audio thread may use cpus;
// xrun prints, for each xrun explained, its main culprit.
func startTrace(above int64, cpus []int, xrun func(rundata.Spike)) *spikeTrace {
	t := &spikeTrace{info: rundata.Trace{AboveNS: above}}
	s, err := ktrace.Start(ktrace.Options{CPUs: cpus})
	if err != nil {
		t.info.Note = err.Error()
		return t
	}
	t.info.Enabled = true
	t.rec = ktrace.NewRecorder(s, above, func(sp rundata.Spike) {
		if sp.XrunNS > 0 && xrun != nil {
			xrun(sp)
		}
	})
	return t
}

// phase names the audio thread of the phase that starts.
func (t *spikeTrace) phase(tid int) { t.audio = ktrace.Thread{TID: tid} }

// offer hands over a sample of phase i.
func (t *spikeTrace) offer(i int, s *rundata.Sample) {
	if t.rec != nil && t.audio.TID != 0 {
		t.rec.Offer(i, t.audio, s)
	}
}

// write writes every spike explained so far to dir/spikes.json.
func (t *spikeTrace) write(dir string) error {
	if t.rec == nil {
		return nil
	}
	return rundata.WriteSpikes(dir, t.rec.Flush())
}

// stop ends the trace, leaving the tracer as it was found.
func (t *spikeTrace) stop() *rundata.Trace {
	if t.rec != nil {
		t.info = t.rec.Close()
	}
	return &t.info
}

// mainCulprits says in a few words what held the CPU longest during a spike.
func mainCulprits(sp rundata.Spike) string {
	var parts []string
	for _, c := range sp.Causes[:min(3, len(sp.Causes))] {
		parts = append(parts, fmt.Sprintf("%s %.2f ms", c, float64(c.NS)/1e6))
	}
	if sp.UnexplainedNS > 0 {
		parts = append(parts, fmt.Sprintf("unexplained %.2f ms", float64(sp.UnexplainedNS)/1e6))
	}
	if len(parts) == 0 {
		return "no trace of the audio thread"
	}
	return strings.Join(parts, ", ")
}
