package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"latencytest/rundata"
)

// cpuStream is one CPU's measuring thread of a phase under run --cpus,
// accounted apart as a phase of one thread is: its own samples file,
// figures and xrun lines. The phase's own accumulator takes every CPU's
// periods too, for the progress display and the figures of all together.
type cpuStream struct {
	ph       *rundata.CPUPhase // its entry in the phase's CPUs
	file     *os.File          // nil with NoSamples
	acc      *accumulator
	lines    *xrunLines
	stopSync func() error
}

// cpusStarting lists, before the phase's engine starts, one entry per
// CPU of cfg.CPUs in ph and makes each its samples file (none with
// noSamples), so that run.json names them before anything is measured,
// as it names a phase's own; the phase itself then has none.
func (r *results) cpusStarting(ph *rundata.Phase, i int, cpus []int, noSamples bool) ([]*cpuStream, error) {
	ph.CPUs = make([]rundata.CPUPhase, len(cpus))
	streams := make([]*cpuStream, len(cpus))
	for k, cpu := range cpus {
		ph.CPUs[k].CPU = cpu
		streams[k] = &cpuStream{ph: &ph.CPUs[k], stopSync: func() error { return nil }}
		if noSamples {
			continue
		}
		base := fmt.Sprintf("%02d-%s-cpu%d.bin", i+1, ph.Name, cpu)
		f, err := r.createSamples(base)
		if err != nil {
			r.dropCPUs(streams)
			return nil, err
		}
		streams[k].file, ph.CPUs[k].SamplesFile = f, "samples/"+base
	}
	return streams, nil
}

// dropCPUs removes the samples files of a phase whose engine never
// opened its streams.
func (r *results) dropCPUs(streams []*cpuStream) {
	for _, c := range streams {
		if c != nil && c.file != nil {
			c.file.Close()
			r.samples.Remove(filepath.Base(c.ph.SamplesFile))
			c.file, c.ph.SamplesFile = nil, ""
		}
	}
}

// threadsOpened records in each CPU's entry what its thread obtained,
// once the engine's threads are set up, the phase beginning at start:
// before the phase's run.json of its opened stream is written, so that a
// killed run's says where each thread ran.
func (r *phaseRun) threadsOpened(threads []engineThread, start int64) error {
	if len(threads) != len(r.cpus) {
		return fmt.Errorf("engine: %d measuring threads for %d CPUs", len(threads), len(r.cpus))
	}
	p := r.ph
	for k, th := range threads {
		c := r.cpus[k].ph
		if th.CPU != c.CPU {
			return fmt.Errorf("engine: thread %d on CPU %d, asked for CPU %d", k, th.CPU, c.CPU)
		}
		c.TID, c.RT = th.TID, th.RT
		c.Name, c.Repeat, c.Stressor, c.StartWall = p.Name, p.Repeat, p.Stressor, p.StartWall
		c.StartMonoNS = start
		c.CPULoop.NominalUS = float64(th.NominalDSP) / 1000
	}
	return nil
}

// openCPUs starts accounting each CPU's periods, once the stream's shape
// is known (open), the phase beginning at start: its samples file says
// from when it counts and is kept current.
func (r *phaseRun) openCPUs(start int64) error {
	for _, c := range r.cpus {
		var w *rundata.SampleWriter
		if c.file != nil {
			w = rundata.NewSampleWriter(c.file, r.shape)
		}
		c.lines = newXrunLines(fmt.Sprintf("%s CPU %d", r.ph.Name, c.ph.CPU), r.s.pr.linef)
		c.acc = newAccumulator(w, r.shape, rundata.NominalDSP(&c.ph.Phase), c.lines.add)
		if w != nil {
			if err := w.Begin(start); err != nil {
				return fmt.Errorf("CPU %d samples file: %w", c.ph.CPU, err)
			}
			c.acc.flush()
			c.stopSync = syncSamples(c.acc, c.file)
		}
	}
	return nil
}

// cpuSample accounts a period of run --cpus to its CPU's thread.
func (r *phaseRun) cpuSample(s *rundata.Sample) {
	if int(s.Loop) < len(r.cpus) && r.cpus[s.Loop].acc != nil {
		r.cpus[s.Loop].acc.sample(s)
	}
}

// stopCPUs ends the periodic flush and sync of every CPU's samples file.
func (r *phaseRun) stopCPUs() error {
	var errs []error
	for _, c := range r.cpus {
		if c.lines != nil {
			c.lines.flush()
		}
		errs = append(errs, c.stopSync())
		c.stopSync = func() error { return nil }
	}
	return errors.Join(errs...)
}

// finishCPUs ends each CPU's samples file and fills its figures from its
// periods and what its thread said at its end (bye: nil when the engine
// was killed before it), then the phase's from theirs (Phase.FromCPUs),
// the histogram of every CPU's periods being the phase accumulator's.
func (r *phaseRun) finishCPUs(bye *engineBye, err error) error {
	for k, c := range r.cpus {
		if c.acc == nil {
			// A column still: the file's columns are the --cpus list.
			r.acc.perCPU = append(r.acc.perCPU, rundata.NewHistogram(r.acc.Hist.RangeUS))
			continue
		}
		c.ph.EndWall = r.ph.EndWall
		if bye != nil && k < len(bye.Threads) {
			tb := bye.Threads[k]
			c.ph.StartMonoNS, c.ph.Lost, c.ph.Break = tb.Start, int64(tb.Lost), tb.Broke
		}
		if ferr := r.closeCPU(c); ferr != nil && err == nil {
			err = fmt.Errorf("CPU %d samples file: %w", c.ph.CPU, ferr)
		}
		if k == 0 { // the card's stream runs on the first CPU, timer threads on the others
			c.acc.cardDelay(rundata.CardAhead(r.ph.CardReported, r.s.run.Stream))
		}
		c.acc.fill(&c.ph.Phase)
		c.ph.ActUS = float64(c.acc.LastLatency()) / 1000
		r.acc.perCPU = append(r.acc.perCPU, c.acc.Hist)
	}
	r.ph.FromCPUs(r.acc.Hist)
	return err
}

// closeCPU flushes a CPU's samples and closes its file durably.
func (r *phaseRun) closeCPU(c *cpuStream) error {
	if c.file == nil {
		return nil
	}
	c.acc.mu.Lock()
	err := c.acc.writeErr
	if err == nil {
		err = c.acc.writer.Flush()
	}
	c.acc.mu.Unlock()
	if cerr := closeSamples(c.file); err == nil {
		err = cerr
	}
	c.file = nil
	return err
}

// closeCPUFiles closes what files are still open after a phase ended
// early.
func (r *phaseRun) closeCPUFiles() {
	for _, c := range r.cpus {
		if c.file != nil {
			c.file.Close()
		}
	}
}
