package runner

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"latencytest/internal/atomicfile"
	"latencytest/internal/child"
	"latencytest/ktrace"
	"latencytest/rundata"
	"latencytest/stress"
)

// spikeTrace explains a run's spikes with the kernel's tracer (run
// --trace): it records in the background while the phases run and writes
// spikes.json as each phase ends. Without tracefs, or without the right to
// use it, the run goes on and run.json says why.
type spikeTrace struct {
	rec   *ktrace.Recorder
	sess  *ktrace.Session
	guard *child.Process // puts the tracer back if this process dies first
	info  rundata.Trace
	audio []ktrace.Thread // the current phase's audio thread (run --cpus: one per CPU, in its order)
	index int             // and its index in run.json
	// heard are the loopback phases' sounds of the results directory, by
	// index in run.json: their glitches lined up again with every
	// spikes.json written, so that each spike heard stays marked.
	heard map[int]*rundata.Sound
	// streamCPU is, under run --cpus, the CPU of the thread that moves
	// the sound (the first listed), else rundata.AnyCPU.
	streamCPU int
}

// startTrace starts the tracer for a run (o: the audio thread's CPUs, and
// whether the machine is virtual); each spike explained goes to spike (if
// not nil), and xrun prints, for each xrun explained, its main culprit.
func startTrace(above int64, o ktrace.Options, spike, xrun func(rundata.Spike)) *spikeTrace {
	t := &spikeTrace{info: rundata.Trace{AboveNS: above}, streamCPU: rundata.AnyCPU}
	s, err := ktrace.Start(o)
	if err != nil {
		t.info.Note = err.Error()
		return t
	}
	t.info.Enabled = true
	t.sess = s
	t.rec = ktrace.NewRecorder(s, above, func(sp rundata.Spike) {
		if spike != nil {
			spike(sp)
		}
		if sp.XrunNS > 0 && xrun != nil {
			xrun(sp)
		}
	})
	return t
}

// phase names the phase that starts (its index in run.json) and its
// audio threads (by id, or for a callback driver by name; under run --cpus
// one per CPU, a sample's Loop its index), whose process is the engine:
// its other threads (Go's sysmon, the drainer) are named as the engine's
// when they hold the CPU; load is the phase's stressor.
func (t *spikeTrace) phase(i int, audio []ktrace.Thread, load string) {
	t.index, t.audio = i, audio
	if t.sess != nil {
		if len(audio) > 0 && audio[0].TID != 0 {
			t.sess.OwnGroupOf(audio[0].TID, "latencytest engine")
		}
		t.sess.Load(load, stress.Comm(load))
		t.wakeups(audio...)
	}
}

// wakeups records only the wakeups of the audio threads, or with none
// (before an engine starts, its threads not known yet) every wakeup. A
// filter the kernel refuses costs only the events it would have saved,
// never a cause: its error is not kept.
func (t *spikeTrace) wakeups(audio ...ktrace.Thread) {
	if t.sess != nil {
		_ = t.sess.Audio(audio...)
	}
}

// offer hands over a sample of the current phase, to be explained on the
// thread that took it.
func (t *spikeTrace) offer(s *rundata.Sample) {
	if t.rec == nil || int(s.Loop) >= len(t.audio) || t.audio[s.Loop] == (ktrace.Thread{}) {
		return
	}
	t.rec.Offer(t.index, t.audio[s.Loop], s)
}

// write writes every spike explained so far into the results directory's
// spikes.json, counts the RT throttling found in ph's, and lines the
// glitches its loopback heard up with the spikes (rundata.LineUpTrace).
func (t *spikeTrace) write(out *results, ph *rundata.Phase) error {
	if ph.Sound != nil {
		if t.heard == nil {
			t.heard = map[int]*rundata.Sound{}
		}
		t.heard[t.index] = ph.Sound
	}
	if t.rec == nil {
		rundata.LineUpTrace(ph.Sound, nil, rundata.SpikesOf{Phase: t.index, CPU: rundata.AnyCPU})
		return nil
	}
	ss := t.rec.Flush()
	ph.RTThrottled, ph.RTThrottledNS = rundata.Throttled(ss, t.index)
	for i, snd := range t.heard {
		rundata.LineUpTrace(snd, ss, rundata.SpikesOf{Phase: i, CPU: t.streamCPU, Traced: true, Dropped: t.rec.Dropped(i)})
	}
	b, err := rundata.MarshalSpikes(ss)
	if err != nil {
		return err
	}
	return atomicfile.WriteIn(out.root, rundata.SpikesFile, b)
}

// cut ends a results directory of a rotating run: the spikes written
// into it are forgotten, the next directory starts with none and a fresh
// per-phase limit, and what is returned is what the trace recorded for
// the directory ended.
func (t *spikeTrace) cut() *rundata.Trace {
	t.heard = nil
	if t.rec == nil {
		info := t.info
		return &info
	}
	info := t.rec.Cut()
	return &info
}

// stop ends the trace, leaving the tracer as it was found, and says what
// was recorded. It may be called more than once.
func (t *spikeTrace) stop() *rundata.Trace {
	if t.rec != nil {
		t.info = t.rec.Close()
		t.rec = nil
	}
	if t.guard != nil {
		t.guard.Stop(2 * time.Second) // the tracer is as found: nothing left for it
		t.guard = nil
	}
	return &t.info
}

// startGuard starts the process that leaves the tracer as the run found it if
// the run dies before it can (SIGKILL, a crash: none of the run's own
// clean-up runs). At this process's death (PR_SET_PDEATHSIG) it puts back
// what the run held of the tracer's shared settings, from their record
// (internal/held), and removes the instance (ktrace.Restore). Like the
// budget's guard it is not in Config.Children, which a second Ctrl-C kills
// at once. Without it a killed run's instance and record are left to the
// next run that traces, or to latencytest check --restore.
func (t *spikeTrace) startGuard(ctx context.Context, exe string) error {
	if t.sess == nil || exe == "" {
		return nil
	}
	p, _, err := child.Start(ctx, child.Spec{
		Name: "tracer guard", Exe: exe, Args: []string{TraceGuardCommand, strconv.Itoa(os.Getpid())},
		Pdeathsig: syscall.SIGTERM, StartLimit: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	t.guard = p
	return nil
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
	if sp.EventsLost {
		parts = append(parts, "trace events lost in the window: incomplete")
	}
	return strings.Join(parts, ", ")
}

// startTrace starts the run's tracer on the audio threads' CPUs (run
// --cpus: the CPUs measured); it names an xrun's main culprits on the
// terminal, after the xrun's own line.
func (s *session) startTrace(ctx context.Context) *spikeTrace {
	cpus := s.cfg.RT.Affinity
	if len(s.cfg.CPUs) > 0 {
		cpus = s.cfg.CPUs
	}
	o := ktrace.Options{CPUs: cpus, Debug: s.cfg.TraceDebug, Virtual: s.run.System.Context.Virtual != ""}
	t := startTrace(s.cfg.TraceAbove, o, s.cfg.OnSpike, func(sp rundata.Spike) {
		name := ""
		if sp.Phase < len(s.names) {
			name = s.names[sp.Phase]
		}
		if len(s.cfg.CPUs) > 0 {
			name = fmt.Sprintf("%s CPU %d", name, sp.CPU) // as the CPU's own xrun lines
		}
		late := fmt.Sprintf("%.2f ms late", float64(sp.LatencyNS)/1e6)
		if w := sp.WindowNS(); w > sp.LatencyNS+sp.LatencyNS/2+1e6 {
			late = fmt.Sprintf("woke %.2f ms late, its work done %.2f ms after due", float64(sp.LatencyNS)/1e6, float64(w)/1e6)
		}
		s.pr.linef("[%s] xrun at period %d, %s: %s", name, sp.Period, late, mainCulprits(sp))
	})
	if len(s.cfg.CPUs) > 0 {
		t.streamCPU = s.cfg.CPUs[0] // the card's thread: the others are timers
	}
	if err := t.startGuard(ctx, s.cfg.Exe); err != nil {
		s.pr.linef("trace: no guard: %v; if this run is killed, its trace instance is left to the next run that traces", err)
	}
	switch {
	case !t.info.Enabled:
		s.pr.linef("trace: causes not recorded: %s", t.info.Note)
	case len(cpus) == 0 && runtime.NumCPU() > 1:
		// Measured: docs/notes/benchmarks.md, "The goals of issue 14".
		s.pr.linef("trace: recording every CPU's task switches; with --affinity only the audio thread's CPU is recorded, which costs it less (docs/spikes.md)")
	}
	return t
}
