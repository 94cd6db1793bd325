package report

import (
	"html/template"
	"math"
	"slices"

	"latencytest/rundata"
)

// pool merges the repetitions of a phase that ran (skipped ones left
// out) into one: the histograms merged and the statistics read from the
// merge, counts summed, each repetition's max kept (runMaxUS). nil when
// none ran.
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
	out := &phaseData{noLoop: ran[0].noLoop}
	out.Name, out.Stressor = ran[0].Name, ran[0].Stressor
	var hist *rundata.Histogram // nil unless every repetition has one, of one range
	if h := ran[0].hist; h != nil {
		hist = rundata.NewHistogram(h.RangeUS)
	}
	headroom, loopWithin := math.Inf(1), 0.0
	for _, p := range ran {
		if p.hist == nil || hist == nil || p.hist.RangeUS != hist.RangeUS {
			hist = nil
		} else {
			hist.Merge(p.hist)
		}
		out.Periods += p.Periods
		out.Xruns += p.Xruns
		out.XrunMSTotal += p.XrunMSTotal
		out.PointerJumps += p.PointerJumps
		out.RTThrottled += p.RTThrottled
		out.RTThrottledNS += p.RTThrottledNS
		headroom = min(headroom, p.HeadroomMinUS)
		loopWithin += p.CPULoop.Within100USPct * float64(p.Periods)
		out.CPULoop.NominalUS = p.CPULoop.NominalUS
		out.CPULoop.MaxUS = max(out.CPULoop.MaxUS, p.CPULoop.MaxUS)
		if p.CPULoop.MinUS > 0 && (out.CPULoop.MinUS == 0 || p.CPULoop.MinUS < out.CPULoop.MinUS) {
			out.CPULoop.MinUS = p.CPULoop.MinUS
		}
		out.runMaxUS = append(out.runMaxUS, p.Latency.Max)
		out.runP999US = append(out.runP999US, p.Latency.P999)
	}
	if slices.ContainsFunc(out.runP999US, math.IsNaN) {
		out.runP999US = nil
	}
	if hist != nil {
		out.hist = hist
		rundata.FillPhase(&out.Phase, hist)
		out.Periods = int64(hist.Count)
	} else {
		// Without every histogram only the extremes pool.
		nan := math.NaN()
		out.Latency = rundata.LatencyStats{Min: math.Inf(1), Avg: nan, P50: nan, P90: nan, P99: nan, P999: nan, P9999: nan}
		for _, p := range ran {
			out.Latency.Min = min(out.Latency.Min, p.Latency.Min)
			out.Latency.Max = max(out.Latency.Max, p.Latency.Max)
		}
		out.WithinUS100, out.WithinMS1 = nan, nan
	}
	out.HeadroomMinUS = headroom
	out.StressorStats = poolStats(ran)
	if out.Periods > 0 {
		out.CPULoop.Within100USPct = loopWithin / float64(out.Periods)
	}
	return out
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
	return maximaFigure(labels, columns)
}
