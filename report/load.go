package report

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// phaseData is one phase as the report draws it: run.json's summary plus
// what only the samples hold (the distribution and the time series).
type phaseData struct {
	rundata.Phase
	hist *rundata.Histogram // nil when there are no samples to read
	// sides holds a duplex phase's per-side distributions and the poll
	// wait's; nil when there are no samples to read.
	sides *rundata.SideStats
	env   *envelope // nil for inputs without a time series (cyclictest)
	// note says why the graphs of a phase that ran are missing.
	note string
	// refused is a samples file that is not a regular file (a FIFO, a
	// device): bad input that fails the load, where a missing or damaged
	// one is only a note.
	refused error
	// act is the phase's last latency, µs (cyclictest's Act), from its
	// samples file.
	act float64
	// noLoop marks inputs that measure no CPU loop and no xruns (cyclictest).
	noLoop bool
	// runs are the runs the phase pools, each a phase of its own: the
	// repetitions of run --repeat, the results directories given to one
	// label, the runs of a cyclictest log. nil for one run (perRun).
	// compare decides from them (internal/decide): the unit of evidence
	// is the run, since one run's periods are not independent.
	runs []*phaseData
	// cpus are, under run --cpus, each CPU's thread, loaded as a phase
	// of its own from its samples file; the phase's hist is then theirs
	// merged, and it has no env.
	cpus []*phaseData
	// heardAt are the times (s from the first period's due, as the
	// envelope's) of the periods a loopback heard the sine break in.
	heardAt []float64
}

// runData is a results directory loaded for drawing.
type runData struct {
	dir    string
	run    *rundata.Run
	phases []*phaseData
	// spikes are the late wakeups the tracer explained, by phase index;
	// spikesNote says why they could not be read.
	spikes     map[int][]rundata.Spike
	spikesNote string
}

// load reads dir/run.json and every phase's samples file, the phases in
// parallel since each is an independent pass over tens of MB, but no more
// at a time than there are CPUs. A missing or damaged samples file is not
// fatal: the phase keeps its run.json figures and says why its graphs are
// missing. A run.json that cannot be read, and a spikes or samples file
// that is not a regular file, are bad input (internal/badinput).
func load(dir string) (*runData, error) {
	r, err := rundata.ReadRun(dir)
	if err != nil {
		return nil, badinput.Errorf("%v", err)
	}
	rd := &runData{dir: dir, run: r, spikes: map[int][]rundata.Spike{}}
	if ss, err := rundata.ReadSpikes(dir); errors.Is(err, rundata.ErrNotRegular) {
		return nil, badinput.Errorf("%v", err) // a FIFO or a device: nothing a run writes
	} else if err != nil {
		rd.spikesNote = err.Error()
	} else {
		for _, s := range ss {
			rd.spikes[s.Phase] = append(rd.spikes[s.Phase], s)
		}
	}
	wg := newGroup()
	for i := range r.Phases {
		pd := &phaseData{Phase: r.Phases[i]}
		rd.phases = append(rd.phases, pd)
		switch {
		case pd.Skipped != "":
		case len(pd.CPUs) > 0:
			for k := range pd.CPUs {
				c := &phaseData{Phase: pd.CPUs[k].Phase}
				c.Name, c.Repeat = fmt.Sprintf("CPU %d", pd.CPUs[k].CPU), 0 // its name in the phase's table and figures
				pd.cpus = append(pd.cpus, c)
				c.loadSamples(dir, wg)
			}
		default:
			pd.loadSamples(dir, wg)
		}
	}
	wg.Wait()
	if err := refusedSamples(rd.phases); err != nil {
		return nil, err
	}
	for _, pd := range rd.phases {
		pd.mergeCPUs()
	}
	return rd, nil
}

// refusedSamples is the first samples file, in the phases' order, that
// is not a regular file: nothing a run writes, so the directory is not
// drawn as though the phase merely lacked its graphs (a FIFO's report
// used to exit 0 with nothing said).
func refusedSamples(phases []*phaseData) error {
	for _, pd := range phases {
		if pd.refused != nil {
			return pd.refused
		}
		if err := refusedSamples(pd.cpus); err != nil {
			return err
		}
	}
	return nil
}

// loadSamples reads pd's samples file on wg (a phase's, or under run
// --cpus one CPU's), or says in pd.note why there is none to read.
func (pd *phaseData) loadSamples(dir string, wg *group) {
	if pd.SamplesFile == "" {
		pd.note = "no samples file recorded for this phase"
		return
	}
	if !filepath.IsLocal(filepath.FromSlash(pd.SamplesFile)) {
		pd.note = "its samples file is named outside the results directory"
		return
	}
	wg.Go(func() {
		rec, e, err := readSamples(filepath.Join(dir, filepath.FromSlash(pd.SamplesFile)), pd)
		if errors.Is(err, rundata.ErrNotRegular) {
			pd.refused = badinput.Errorf("%v; allowed a regular file, as a run writes", err)
			return
		}
		if err != nil {
			pd.note = err.Error()
			return
		}
		if rec.Hist.Count == 0 {
			pd.note = "the samples file holds no period (the run ended before this phase measured one)"
			return
		}
		pd.hist, pd.env, pd.sides = rec.Hist, e, rec.Sides
	})
}

// mergeCPUs gives a phase of run --cpus the histogram of every CPU's
// periods together, for the overlay of all phases; its figures over time
// are each CPU's. A phase whose figures were never written (the run was
// killed) gets them from its CPUs', each recovered from its samples file
// (readSamples), as the run would have written them (Phase.FromCPUs).
func (pd *phaseData) mergeCPUs() {
	if len(pd.cpus) == 0 {
		return
	}
	h := rundata.NewHistogram(rundata.DefaultHistUS)
	var notes []string
	for _, c := range pd.cpus {
		if c.hist == nil {
			notes = append(notes, c.Name+": "+c.note)
			continue
		}
		h.Merge(c.hist)
	}
	if h.Count > 0 {
		pd.hist = h
	}
	pd.note = strings.Join(notes, "; ")
	if pd.Incomplete || pd.Periods == 0 {
		pd.CPUs = slices.Clone(pd.CPUs) // the run's own records stay as run.json has them
		for k, c := range pd.cpus {
			name, repeat := pd.CPUs[k].Name, pd.CPUs[k].Repeat
			pd.CPUs[k].Phase = c.Phase
			pd.CPUs[k].Name, pd.CPUs[k].Repeat = name, repeat
		}
		pd.FromCPUs(h)
	}
}

// readSamples makes one pass over a samples file. For a phase whose
// run.json figures are missing — a run killed before it summarised the
// phase (Incomplete), or one from before run.json had them — it fills them
// from the samples; figures run.json has are never overridden otherwise,
// since they are the contract.
func readSamples(path string, pd *phaseData) (*rundata.Accumulator, *envelope, error) {
	// The samples are the run's own files, never links: one found there
	// was planted (and a FIFO would block the report forever).
	f, err := rundata.OpenRegular(path, true)
	if err != nil {
		return nil, nil, fmt.Errorf("samples: %w", err)
	}
	defer f.Close()
	sr, err := rundata.NewSampleReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("samples %s: %w", filepath.Base(path), err)
	}
	rec := rundata.NewAccumulator(sr.Header, rundata.NominalDSP(&pd.Phase))
	e := newEnvelope()
	first := sr.Header.FirstDue
	breaks := glitchPeriods(pd.Sound)
	var s rundata.Sample
	for {
		if err := sr.Next(&s); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return rec, e, fmt.Errorf("samples %s: %w", filepath.Base(path), err)
		}
		rec.Add(&s)
		e.add(float64(s.Due-first)/1e9, float32(s.Latency())/1e6, float32(s.DSP)/1e6, s.Xrun != 0)
		for len(breaks) > 0 && breaks[0] <= s.Index {
			if breaks[0] == s.Index {
				pd.heardAt = append(pd.heardAt, float64(s.Due-first)/1e9)
			}
			breaks = breaks[1:]
		}
	}
	if pd.Incomplete || pd.Periods == 0 {
		pd.Lost = sr.Lost // before Fill: the verdict heeds it
		rec.Fill(&pd.Phase)
	}
	pd.act = float64(rec.LastLatency()) / 1000
	return rec, e, nil
}

// glitchPeriods are the periods, in order, a loopback heard the sine
// break in (rundata.Glitch.Period); none without one.
func glitchPeriods(snd *rundata.Sound) []int64 {
	if snd == nil {
		return nil
	}
	ps := make([]int64, 0, len(snd.Glitches))
	for _, g := range snd.Glitches {
		ps = append(ps, g.Period)
	}
	slices.Sort(ps)
	return ps
}

// perRun is each run the phase pools: itself when it is one run.
func (p *phaseData) perRun() []*phaseData {
	if len(p.runs) == 0 {
		return []*phaseData{p}
	}
	return p.runs
}

// runFigure is figure get of each run the phase pools.
func (p *phaseData) runFigure(get func(*phaseData) float64) []float64 {
	rs := p.perRun()
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = get(r)
	}
	return out
}
