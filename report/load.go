package report

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// phaseData is one phase as the report draws it: run.json's summary plus
// what only the samples hold (the distribution and the time series).
type phaseData struct {
	rundata.Phase
	hist *rundata.Histogram // nil when there are no samples to read
	env  *envelope          // nil for inputs without a time series (cyclictest)
	// note says why the graphs of a phase that ran are missing.
	note string
	// noLoop marks inputs that measure no CPU loop and no xruns (cyclictest).
	noLoop bool
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
// missing. A run.json that cannot be read is bad input (internal/badinput).
func load(dir string) (*runData, error) {
	r, err := rundata.ReadRun(dir)
	if err != nil {
		return nil, badinput.Errorf("%v", err)
	}
	rd := &runData{dir: dir, run: r, spikes: map[int][]rundata.Spike{}}
	if ss, err := rundata.ReadSpikes(dir); err != nil {
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
		if pd.Skipped != "" {
			continue
		}
		if pd.SamplesFile == "" {
			pd.note = "no samples file recorded for this phase"
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(pd.SamplesFile)) {
			pd.note = "its samples file is named outside the results directory"
			continue
		}
		wg.Go(func() {
			loadPhase(pd, filepath.Join(dir, filepath.FromSlash(pd.SamplesFile)))
		})
	}
	wg.Wait()
	return rd, nil
}

// loadPhase reads one phase's samples file into pd.
func loadPhase(pd *phaseData, path string) {
	h, e, err := readSamples(path)
	if err != nil {
		pd.note = err.Error()
		return
	}
	if h.Count == 0 {
		pd.note = "the samples file holds no period (the run ended before this phase measured one)"
		return
	}
	pd.hist, pd.env = h, e
	fillFromSamples(&pd.Phase, h)
}

// readSamples makes one pass over a samples file.
func readSamples(path string) (*rundata.Histogram, *envelope, error) {
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
	h := rundata.NewHistogram(rundata.DefaultHistUS)
	e := newEnvelope()
	first := sr.Header.FirstDue
	var s rundata.Sample
	for {
		if err := sr.Next(&s); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return h, e, fmt.Errorf("samples %s: %w", filepath.Base(path), err)
		}
		lat := s.Woke - s.Due
		h.Add(lat)
		e.add(float64(s.Due-first)/1e9, float32(lat)/1e6, float32(s.DSP)/1e6, s.Xrun != 0)
	}
	return h, e, nil
}

// fillFromSamples completes a phase whose run.json figures are missing (a
// run killed before it summarised the phase) from its samples; figures that
// run.json has are never overridden, since they are the contract.
func fillFromSamples(p *rundata.Phase, h *rundata.Histogram) {
	if p.Periods != 0 || h.Count == 0 {
		return
	}
	p.Periods = int64(h.Count)
	rundata.FillPhase(p, h)
}
