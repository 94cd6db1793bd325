package report

import (
	"html/template"
	"math"

	"latencytest/rundata"
)

// pool merges the repetitions of a phase that ran (skipped ones left
// out) into one, for the run-to-run tables and compare: their figures
// pooled as a phase's CPUs are (rundata.Phase.Pool), so a repetition's
// lost periods or verdict are never dropped; the distribution read from
// their histograms merged; what the machine was doing averaged; each
// repetition kept (runs). nil when none ran.
func pool(ps []*phaseData) *phaseData {
	var ran []*phaseData
	for _, p := range ps {
		if p.Skipped == "" {
			ran = append(ran, p)
		}
	}
	if len(ran) == 0 {
		return nil
	}
	if len(ran) == 1 {
		return ran[0]
	}
	out := &phaseData{noLoop: ran[0].noLoop, hist: mergedHist(ran)}
	out.Name, out.Stressor = ran[0].Name, ran[0].Stressor
	parts := make([]*rundata.Phase, len(ran))
	steal := 0.0 // weighted by periods, for the share of the time pooled
	for i, p := range ran {
		parts[i] = &p.Phase
		out.LoadAvg += p.LoadAvg / float64(len(ran)) // one reading at each start
		steal += p.StealPct * float64(p.Periods)
		out.runs = append(out.runs, p.perRun()...)
	}
	out.Pool(parts, out.hist)
	if out.Periods > 0 {
		out.StealPct = steal / float64(out.Periods)
	}
	if out.hist == nil {
		out.Latency, out.WithinUS100, out.WithinMS1 = extremes(ran)
	}
	out.StressorStats = poolStats(ran)
	return out
}

// mergedHist is the repetitions' histograms merged; nil unless every one
// has one, of one range.
func mergedHist(ps []*phaseData) *rundata.Histogram {
	for _, p := range ps {
		if p.hist == nil || p.hist.RangeUS != ps[0].hist.RangeUS {
			return nil
		}
	}
	h := rundata.NewHistogram(ps[0].hist.RangeUS)
	for _, p := range ps {
		h.Merge(p.hist)
	}
	return h
}

// extremes are the latency figures of repetitions without every
// histogram: only the extremes pool, the rest is unknown.
func extremes(ps []*phaseData) (lat rundata.LatencyStats, within100, within1 float64) {
	nan := math.NaN()
	lat = rundata.LatencyStats{Min: math.Inf(1), Max: math.Inf(-1), Avg: nan, P50: nan, P90: nan, P99: nan, P999: nan, P9999: nan}
	for _, p := range ps {
		lat.Min, lat.Max = min(lat.Min, p.Latency.Min), max(lat.Max, p.Latency.Max)
	}
	return lat, nan, nan
}

// byName groups phases by name, in order of first appearance.
func byName(ps []*phaseData) (names []string, groups map[string][]*phaseData) {
	groups = map[string][]*phaseData{}
	for _, p := range ps {
		if _, ok := groups[p.Name]; !ok {
			names = append(names, p.Name)
		}
		groups[p.Name] = append(groups[p.Name], p)
	}
	return names, groups
}

// spreadTables are the report's run-to-run tables of a repeated run: per
// phase, a row per repetition and the pooled figures.
func spreadTables(ps []*phaseData) []statsTable {
	names, groups := byName(ps)
	var ts []statsTable
	for _, name := range names {
		g := groups[name]
		if len(g) < 2 {
			continue
		}
		t := statsTable{ID: "spread-" + name, First: name, Head: metricHeads()}
		for _, p := range g {
			r := statsRow{Name: p.Label(), Skipped: p.Skipped}
			if p.Skipped == "" {
				r.Cells = row(p)
			}
			t.Rows = append(t.Rows, r)
		}
		if pl := pool(g); pl != nil {
			t.Rows = append(t.Rows, statsRow{Name: "pooled", Cells: row(pl)})
		}
		t.dropUnmeasured()
		ts = append(ts, t)
	}
	return ts
}

// poolRepeats makes a repeated run one source for compare: each phase's
// repetitions pooled (pool), their spikes together.
func (c *compared) poolRepeats() {
	if c.run == nil || c.run.Repeat < 2 {
		return
	}
	c.poolByName()
}

// poolByName pools c's phases of one name into one, in order of first
// appearance, their spikes together: a repeated run's repetitions, or the
// phases of several results directories given to one source.
func (c *compared) poolByName() {
	index := map[*phaseData]int{}
	for i, p := range c.phases {
		index[p] = i
	}
	names, groups := byName(c.phases)
	phases := make([]*phaseData, 0, len(names))
	spikes := map[int][]rundata.Spike{}
	for k, name := range names {
		g := groups[name]
		pl := pool(g)
		if pl == nil {
			pl = g[0] // skipped every time
		}
		phases = append(phases, pl)
		for _, p := range g {
			spikes[k] = append(spikes[k], c.spikes[index[p]]...)
		}
	}
	c.phases, c.spikes = phases, spikes
}

// poolStats pools the repetitions' load figures: the work done and the
// time it took summed (so the rate is the pooled one), the per-round
// times put together. nil when the phases had no load.
func poolStats(ps []*phaseData) map[string]any {
	first := ps[0].StressorStats
	if first == nil {
		return nil
	}
	unit, _ := first["unit"].(string)
	rk := rateKey(first)
	out := map[string]any{"unit": unit, "repetitions": float64(len(ps))}
	var units, secs float64
	var rounds []any
	for _, p := range ps {
		m := p.StressorStats
		units += asNum(m[unitKey(m)])
		secs += asNum(m["seconds"])
		if ts, ok := numbers(m["round_time_s"]); ok {
			for _, t := range ts {
				rounds = append(rounds, t)
			}
		}
	}
	if rk != "" {
		out[unitKey(first)], out["seconds"] = units, secs
		if secs > 0 {
			out[rk] = units / secs
		}
	}
	if rounds != nil {
		out["round_time_s"] = rounds
	}
	return out
}

// spreadFigure draws each repeated phase's per-run maxima side by side
// (RunMaxima); "" when no phase ran more than once.
func spreadFigure(ps []*phaseData) (template.HTML, error) {
	names, groups := byName(ps)
	var labels []string
	var columns [][]float64
	for _, name := range names {
		if len(groups[name]) < 2 {
			continue
		}
		var maxima []float64
		for _, p := range groups[name] {
			if p.Skipped == "" {
				maxima = append(maxima, p.Latency.Max)
			}
		}
		labels, columns = append(labels, name), append(columns, maxima)
	}
	if len(columns) == 0 {
		return "", nil
	}
	return maximaFigure(labels, columns, nil, "max latency per run, µs")
}
