package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"

	"latencytest/cyclictest"
	"latencytest/internal/decide"
	"latencytest/rundata"
)

// Ranking is compare's opening table, and what `compare -json` writes:
// per phase, each source's run-to-run figures, ranked by p99.9 where every
// source has a histogram: one maximum is one wakeup, and on a shared
// machine even cyclictest against itself spreads 0.2–3× in max from run to
// run. The runs' maxima, the figure the lists compare kernels by (one bad
// run in a dozen is the finding), stay beside it, and rank where a source
// has no percentiles (a cyclictest log); the page says when the two
// rankings disagree. Only decided differences rank: best and worst are
// named where each source's runs decide them (internal/decide), and every
// later source is decided against the first, figure by figure (VsFirst).
type Ranking struct {
	Phases []RankedPhase `json:"phases"`
	// WithinPct is X of the decisions' "no difference larger than X %"
	// (compare --fail-if-worse's PCT, else DefaultWithinPct).
	WithinPct float64 `json:"within_pct"`
	// Differs says, a line each, what differs between the sources besides
	// the machine or kernel being compared (driver, buffer, DSP load,
	// priority, measuring threads, tool version): figures measured
	// otherwise are not like with like. run --cpus N's phases pool N
	// threads' periods, and the worst of N CPUs is later than one CPU's.
	Differs []string `json:"differs,omitempty"`
}

// RankedPhase is one phase across the sources.
type RankedPhase struct {
	Phase   string         `json:"phase"`
	Sources []RankedSource `json:"sources"` // in the order given
	// By is the figure ranked by: "p99.9" or "worst max".
	By string `json:"by,omitempty"`
	// Best and Worst name the sources decided better (worse) than every
	// other on figure By from their runs ("" with fewer than two sources
	// that ran the phase, when the runs cannot tell, Undecided says so,
	// or when NotRanked says why they are not ranked).
	Best  string `json:"best,omitempty"`
	Worst string `json:"worst,omitempty"`
	// BestMax and WorstMax are Best and Worst by the runs' maxima, when
	// By is p99.9 and they differ.
	BestMax   string `json:"best_by_max,omitempty"`
	WorstMax  string `json:"worst_by_max,omitempty"`
	NotRanked string `json:"not_ranked,omitempty"`
	// Undecided says why no best or worst is named though two sources or
	// more ran the phase: the runs cannot tell them apart.
	Undecided string `json:"undecided,omitempty"`
}

// RankedSource is one source's figures in a phase. Figures a source does
// not have are absent: a cyclictest log has no histogram (no p99) and
// cyclictest no xruns.
type RankedSource struct {
	Label       string    `json:"label"`
	Skipped     string    `json:"skipped,omitempty"`
	Runs        int       `json:"runs"`
	Periods     int64     `json:"periods"` // measured, every run's together
	MaxUS       []float64 `json:"max_us"`  // each run's max
	MedianMaxUS float64   `json:"median_max_us"`
	WorstMaxUS  float64   `json:"worst_max_us"`
	// WorstVsBest is WorstMaxUS over the best source's: 1 for the best,
	// 2.5 for a source whose worst run is two and a half times as late.
	WorstVsBest float64  `json:"worst_max_vs_best"`
	P99US       *float64 `json:"p99_us,omitempty"`
	// P999US is the p99.9 of every run pooled, RunP999US each run's when
	// there were several: their spread is the run-to-run noise.
	P999US    *float64  `json:"p999_us,omitempty"`
	RunP999US []float64 `json:"run_p999_us,omitempty"`
	// VsBest is the figure ranked by (RankedPhase.By) over the best
	// source's.
	VsBest float64 `json:"vs_best,omitempty"`
	Xruns  *int    `json:"xruns,omitempty"`
	// Lost counts the periods measured but not handed over (the engine's
	// ring was full), every run's together; absent for cyclictest. One of
	// them may have been the late one, so a source that lost any is not
	// ranked in the phase (neither best nor worst, nor ★), only shown.
	Lost *int64 `json:"lost,omitempty"`
	// RunFigures is each run's figure, by decided figure (p99_us,
	// p999_us, max_us, xruns_per_min, xrun_ms_total): what the decisions
	// are drawn from.
	RunFigures map[string][]float64 `json:"run_figures,omitempty"`
	// VsFirst decides the source against the phase's first, figure by
	// figure (absent for the first itself).
	VsFirst []Decision `json:"vs_first,omitempty"`
}

// DefaultWithinPct is X of "no difference larger than X %" when compare
// is not given --fail-if-worse.
const DefaultWithinPct = 10

// Decision is one figure of a source decided against another from their
// runs (internal/decide): the ratio of B to A, its 95 % interval, and the
// word.
type Decision struct {
	Figure  string `json:"figure"`
	Against string `json:"against"`
	// Ratio is B over A; absent when a figure is not above 0.
	Ratio *float64 `json:"ratio,omitempty"`
	// Interval is the ratio's 95 % interval [lo, hi], absent when the
	// runs are too few for one.
	Interval []float64 `json:"interval,omitempty"`
	// Word is "worse", "better", "no difference" (larger than
	// WithinPct) or "cannot tell".
	Word       string  `json:"word"`
	WithinPct  float64 `json:"within_pct"`
	RunsA      int     `json:"runs_a"`
	RunsB      int     `json:"runs_b"`
	RunsNeeded int     `json:"runs_needed,omitempty"`
	Why        string  `json:"why,omitempty"`
	// Text is the decision as the terminal and the page say it.
	Text string `json:"text"`
}

// decisionOf is d as -json writes it.
func decisionOf(fig, against string, d decide.Decision) Decision {
	out := Decision{Figure: fig, Against: against, Word: string(d.Word), WithinPct: d.WithinPct, RunsA: d.RunsA,
		RunsB: d.RunsB, RunsNeeded: d.RunsNeeded, Why: d.Why, Text: d.String()}
	if !math.IsNaN(d.Ratio) {
		out.Ratio = &d.Ratio
	}
	if d.HasInterval() {
		out.Interval = []float64{d.Lo, d.Hi}
	}
	return out
}

// decision is d back as internal/decide's, for its judgements.
func (d Decision) decision() decide.Decision {
	out := decide.Decision{Ratio: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), RunsA: d.RunsA, RunsB: d.RunsB,
		Word: decide.Word(d.Word), WithinPct: d.WithinPct, RunsNeeded: d.RunsNeeded, Why: d.Why}
	if d.Ratio != nil {
		out.Ratio = *d.Ratio
	}
	if len(d.Interval) == 2 {
		out.Lo, out.Hi = d.Interval[0], d.Interval[1]
	}
	return out
}

// lost is how many periods s lost, 0 where unknown.
func (s RankedSource) lost() int64 {
	if s.Lost == nil {
		return 0
	}
	return *s.Lost
}

// ranked says whether s takes part in its phase's ranking: it ran, and
// every period it measured reached the run.
func (s RankedSource) ranked() bool { return s.Runs > 0 && s.lost() == 0 }

// rank ranks the sources in every phase, phases in order of first
// appearance, deciding with X = within (decide.Compare).
func rank(cs []*compared, within float64) Ranking {
	r := Ranking{WithinPct: within}
	for _, name := range phaseNames(cs) {
		rp := RankedPhase{Phase: name}
		for _, c := range cs {
			if p := c.phase(name); p != nil {
				rp.Sources = append(rp.Sources, rankedSource(c.Label, p))
			}
		}
		rankPhase(&rp, within)
		decideAgainstFirst(&rp, within)
		if why := unrankable(cs); why != "" {
			rp.Best, rp.Worst, rp.BestMax, rp.WorstMax, rp.Undecided, rp.NotRanked = "", "", "", "", "", why
		}
		r.Phases = append(r.Phases, rp)
	}
	r.Differs = differs(cs)
	return r
}

// rankPhase ranks rp's sources by p99.9 when all that ran have one, else
// by the runs' maxima; and by the maxima too, said when it disagrees.
// Best and worst are named only where the runs decide them.
func rankPhase(rp *RankedPhase, within float64) {
	setVsBest(rp.Sources, func(s RankedSource) float64 { return s.WorstMaxUS })
	for i := range rp.Sources {
		rp.Sources[i].WorstVsBest = rp.Sources[i].VsBest
	}
	rp.By = "worst max"
	rp.Best, rp.Worst = decidedBestWorst(rp.Sources, "max_us", within)
	for _, s := range rp.Sources {
		if s.Runs > 0 && s.P999US == nil {
			rp.Undecided = undecided(*rp)
			return
		}
	}
	bm, wm := rp.Best, rp.Worst
	rp.By = "p99.9"
	setVsBest(rp.Sources, func(s RankedSource) float64 { return *s.P999US })
	rp.Best, rp.Worst = decidedBestWorst(rp.Sources, "p999_us", within)
	if bm != rp.Best || wm != rp.Worst {
		rp.BestMax, rp.WorstMax = bm, wm
	}
	rp.Undecided = undecided(*rp)
}

// byKey is the decided figure rp ranks by.
func (rp RankedPhase) byKey() string {
	if rp.By == "p99.9" {
		return "p999_us"
	}
	return "max_us"
}

// decidedBestWorst names the ranked sources decided better and worse
// than every other on figure key from their runs; "" where the runs
// cannot tell.
func decidedBestWorst(ss []RankedSource, key string, within float64) (best, worst string) {
	runs := rankedRuns(ss, key)
	f := figureByKey(key)
	if i := f.decidedOne(runs, within, decide.Better); i >= 0 {
		best = ss[i].Label
	}
	if i := f.decidedOne(runs, within, decide.Worse); i >= 0 {
		worst = ss[i].Label
	}
	return best, worst
}

// rankedRuns is each source's runs of figure key, nil for a source not
// ranked (it did not run, or lost periods).
func rankedRuns(ss []RankedSource, key string) [][]float64 {
	runs := make([][]float64, len(ss))
	for i, s := range ss {
		if s.ranked() {
			runs[i] = s.RunFigures[key]
		}
	}
	return runs
}

// undecided says why rp names no best or worst though two sources or
// more were ranked in it; "" when it names both.
func undecided(rp RankedPhase) string {
	ranked, several := 0, false
	for _, s := range rp.Sources {
		if s.ranked() {
			ranked++
			several = several || s.Runs > 1
		}
	}
	switch {
	case ranked < 2 || rp.Best != "" && rp.Worst != "":
		return ""
	case !several:
		return decide.OneRunEach
	}
	which := "the best or the worst"
	switch {
	case rp.Best != "":
		which = "the worst"
	case rp.Worst != "":
		which = "the best"
	}
	return "cannot tell " + which + " by " + rp.By + " from the runs' spread (see each source against the first)"
}

// decideAgainstFirst decides every later source of rp against the first,
// on each figure both have.
func decideAgainstFirst(rp *RankedPhase, within float64) {
	if len(rp.Sources) < 2 || rp.Sources[0].Runs == 0 {
		return
	}
	ref := rp.Sources[0]
	for i := range rp.Sources[1:] {
		s := &rp.Sources[i+1]
		if s.Runs == 0 {
			continue
		}
		for _, f := range decidedFigures {
			a, b := ref.RunFigures[f.key], s.RunFigures[f.key]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			s.VsFirst = append(s.VsFirst, decisionOf(f.key, ref.Label, decide.Compare(a, b, f.unit, within)))
		}
	}
}

// against is s's decision against the first source on figure key.
func (s RankedSource) against(key string) (Decision, bool) {
	for _, d := range s.VsFirst {
		if d.Figure == key {
			return d, true
		}
	}
	return Decision{}, false
}

// unrankable says why the sources are not ranked at all: PortAudio's
// figures are its callback's jitter, not a latency from the card.
func unrankable(cs []*compared) string {
	pa, other := false, false
	for _, c := range cs {
		if c.run != nil && c.run.Driver == "portaudio" {
			pa = true
		} else {
			other = true
		}
	}
	if pa && other {
		return "PortAudio's jitter is not ranked against another driver's latency"
	}
	return ""
}

// differs lists the conditions of measurement that differ between the
// sources, each with every source's value: "driver: alsa (A), timer (B)".
func differs(cs []*compared) []string {
	var out []string
	for _, c := range cs {
		for _, d := range c.inner {
			out = append(out, c.Label+"'s runs: "+d)
		}
	}
	cond := func(name string, of func(*rundata.Run) string) {
		var vals, parts []string
		for _, c := range cs {
			if c.run == nil {
				continue // cyclictest: said apart below
			}
			v := of(c.run)
			parts = append(parts, fmt.Sprintf("%s (%s)", v, c.Label))
			if !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 1 {
			out = append(out, name+" differs: "+strings.Join(parts, ", "))
		}
	}
	cond("driver", func(r *rundata.Run) string { return r.Driver })
	cond("buffer", func(r *rundata.Run) string { return fmt.Sprintf("%d×%d at %d Hz", r.PeriodFrames, r.Periods, r.Rate) })
	cond("DSP load", func(r *rundata.Run) string { return fmt.Sprintf("%d %%", r.CPULoad) })
	cond("priority obtained", func(r *rundata.Run) string {
		return strings.TrimSpace(fmt.Sprintf("%s %d", r.RT.Obtained.Policy, r.RT.Obtained.Priority))
	})
	cond("thread count", func(r *rundata.Run) string { return strconv.Itoa(max(1, len(r.CPUs))) })
	cond("tool version", func(r *rundata.Run) string { return r.Tool })
	var ct, lt []string
	for _, c := range cs {
		if c.run == nil {
			ct = append(ct, c.Label)
		} else if c.run.Driver != "timer" {
			lt = append(lt, c.Label)
		}
	}
	if len(ct) > 0 && len(lt) > 0 {
		out = append(out, fmt.Sprintf("cyclictest (%s) measures a timer's wakeup, latencytest (%s) the wakeup after a driver's due instant (the card's interrupt): alike only with --driver timer",
			strings.Join(ct, ", "), strings.Join(lt, ", ")))
	}
	for _, c := range cs {
		if c.run != nil && c.run.Driver == "portaudio" && len(cs) > 1 {
			out = append(out, c.Label+": PortAudio's figures are its callback's jitter, not a wakeup latency from the card's interrupt (docs/portaudio.md): not ranked like with like")
		}
	}
	return out
}

func rankedSource(label string, p *phaseData) RankedSource {
	s := RankedSource{Label: label, Skipped: p.Skipped}
	if p.Skipped != "" {
		return s
	}
	s.Periods = p.Periods
	s.MaxUS = p.runFigure(metricByKey("max_us").get)
	s.Runs = len(s.MaxUS)
	s.WorstMaxUS, s.MedianMaxUS = slices.Max(s.MaxUS), decide.Median(s.MaxUS)
	if v := p.Latency.P99; !math.IsNaN(v) {
		s.P99US = &v
	}
	if v := p.Latency.P999; !math.IsNaN(v) {
		s.P999US = &v
		if rs := p.runFigure(metricByKey("p999_us").get); len(rs) > 1 && !slices.ContainsFunc(rs, math.IsNaN) {
			s.RunP999US = rs
		}
	}
	if !p.noLoop {
		x, l := p.Xruns, p.Lost
		s.Xruns, s.Lost = &x, &l
	}
	s.RunFigures = map[string][]float64{}
	for _, f := range decidedFigures {
		if rs := f.runs(p); len(rs) > 0 {
			s.RunFigures[f.key] = rs
		}
	}
	return s
}

// setVsBest sets each source's VsBest: its figure fig over the smallest
// of those ranked (a point figure, shown beside the decisions, never
// ranking by itself).
func setVsBest(ss []RankedSource, fig func(RankedSource) float64) {
	b := -1
	for i, s := range ss {
		if s.ranked() && (b < 0 || fig(s) < fig(ss[b])) {
			b = i
		}
	}
	if b < 0 {
		return
	}
	for i := range ss {
		if ss[i].Runs > 0 && fig(ss[b]) > 0 {
			ss[i].VsBest = fig(ss[i]) / fig(ss[b])
		}
	}
}

// phase is c's phase called name, or nil.
func (c *compared) phase(name string) *phaseData {
	for _, p := range c.phases {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// phaseNames is every phase name of the inputs, in order of first
// appearance.
func phaseNames(cs []*compared) []string {
	var names []string
	seen := map[string]bool{}
	for _, c := range cs {
		for _, p := range c.phases {
			if !seen[p.Name] {
				seen[p.Name] = true
				names = append(names, p.Name)
			}
		}
	}
	return names
}

// marshalRanking is the JSON of `compare -json`.
func marshalRanking(r Ranking) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// logPhase turns the runs of a cyclictest log into a phase: latencies
// pooled over every thread of every run, each run's max kept. A log holds
// no histogram, so its percentiles and "within" shares are unknown (NaN).
func logPhase(name string, runs []cyclictest.LogRun) *phaseData {
	p := &phaseData{noLoop: true}
	p.Name = name
	nan := math.NaN()
	p.Latency = rundata.LatencyStats{Min: math.Inf(1), P50: nan, P90: nan, P99: nan, P999: nan, P9999: nan}
	p.WithinUS100, p.WithinMS1 = nan, nan
	var sum float64
	for i, r := range runs {
		runMax := 0.0
		for _, t := range r.Threads {
			p.Periods += t.Count
			sum += float64(t.AvgUS) * float64(t.Count)
			p.Latency.Min = min(p.Latency.Min, float64(t.MinUS))
			runMax = max(runMax, float64(t.MaxUS))
		}
		if len(runs) > 1 {
			p.runs = append(p.runs, logPhase(name, runs[i:i+1]))
		}
		p.Latency.Max = max(p.Latency.Max, runMax)
	}
	if p.Periods > 0 {
		p.Latency.Avg = sum / float64(p.Periods)
	}
	if math.IsInf(p.Latency.Min, 1) {
		p.Latency.Min = nan
	}
	return p
}

// rankView is a phase's ranking as the compare page shows it.
type rankView struct {
	Phase, Verdict string
	Rows           []rankRow
	// Figures and Decisions are every later source against the first.
	Figures   []string
	Decisions []decisionRow
	Figs      []rankFig // the sources' per-run figures, when some have several runs
}

type rankRow struct {
	Label, Runs, PerRun string
	Cells               []cell // median max, worst max, p99, p99.9, × best, xruns, lost
}

// rankViews formats r for the page, marking the best of each column
// where the runs decide it.
func rankViews(r Ranking) ([]rankView, error) {
	var vs []rankView
	for _, rp := range r.Phases {
		v := rankView{Phase: rp.Phase}
		v.Verdict = rankVerdict(rp)
		for _, s := range rp.Sources {
			row := rankRow{Label: s.Label}
			if s.Skipped != "" {
				row.Runs = "skipped: " + s.Skipped
				v.Rows = append(v.Rows, row)
				continue
			}
			per := make([]string, len(s.MaxUS))
			for i, m := range s.MaxUS {
				per[i] = fmtUS(m)
			}
			row.Runs, row.PerRun = strconv.Itoa(s.Runs), strings.Join(per, " · ")
			nan := math.NaN()
			vals := []float64{s.MedianMaxUS, s.WorstMaxUS, nan, nan, s.VsBest, nan, nan}
			if s.P99US != nil {
				vals[2] = *s.P99US
			}
			if s.P999US != nil {
				vals[3] = *s.P999US
			}
			if s.Xruns != nil {
				vals[5] = float64(*s.Xruns)
			}
			if s.Lost != nil {
				vals[6] = float64(*s.Lost)
			}
			for i, f := range []func(float64) string{fmtUS, fmtUS, fmtUS, fmtUS, fmtRatio, fmtInt, fmtInt} {
				row.Cells = append(row.Cells, cell{Key: rankKeys[i], Text: f(vals[i])})
			}
			if len(s.RunP999US) > 1 {
				row.Cells[3].Text += fmt.Sprintf(" (%s–%s)", fmtUS(slices.Min(s.RunP999US)), fmtUS(slices.Max(s.RunP999US)))
			}
			v.Rows = append(v.Rows, row)
		}
		markRankDecided(rp, v.Rows, r.WithinPct)
		v.Figures, v.Decisions = decisionRows(rp)
		figs, err := rankFigures(rp)
		if err != nil {
			return nil, err
		}
		v.Figs = figs
		vs = append(vs, v)
	}
	return vs, nil
}

// rankFigures draw, when any source has more than one run, each run's
// figure per source (a dot per run, the median a bar) with the interval
// the runs give each later source against the first: one figure for the
// figure ranked by (p99.9, or the max), and one for the max beside
// p99.9.
func rankFigures(rp RankedPhase) ([]rankFig, error) {
	several := false
	for _, s := range rp.Sources {
		several = several || s.Runs > 1
	}
	if !several {
		return nil, nil
	}
	keys := []string{rp.byKey()}
	if keys[0] != "max_us" {
		keys = append(keys, "max_us")
	}
	var figs []rankFig
	for _, key := range keys {
		f := figureByKey(key)
		var labels []string
		var columns [][]float64
		var ivs [][2]float64
		for _, s := range rp.Sources {
			labels, columns = append(labels, s.Label), append(columns, s.RunFigures[key])
			ivs = append(ivs, whisker(rp.Sources[0], s, key))
		}
		svg, err := maximaFigure(labels, columns, ivs, f.label+" per run, µs")
		if err != nil {
			return nil, err
		}
		figs = append(figs, rankFig{SVG: svg, Caption: fmt.Sprintf("Each run's %s (dots) and their median (bar), per source; beside each later source, "+
			"the first's median (dashed) times the 95 %% interval of the ratio to it: it clears the dashed line only where the runs decide.", f.label)})
	}
	return figs, nil
}

// rankFig is one figure of the ranking, with its caption.
type rankFig struct {
	SVG     template.HTML
	Caption string
}

// whisker is s's interval against ref on figure key in the figure's
// unit: ref's median times the ratio's interval; NaNs for none.
func whisker(ref, s RankedSource, key string) [2]float64 {
	none := [2]float64{math.NaN(), math.NaN()}
	d, ok := s.against(key)
	if !ok || len(d.Interval) != 2 || len(ref.RunFigures[key]) == 0 {
		return none
	}
	m := decide.Median(ref.RunFigures[key])
	return [2]float64{m * d.Interval[0], m * d.Interval[1]}
}

// maximaFigure draws columns of per-run figures (RunMaxima), one per
// label, with their whiskers (ivs; nil: none).
func maximaFigure(labels []string, columns [][]float64, ivs [][2]float64, ylabel string) (template.HTML, error) {
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i), Label: l}
	}
	p := newPlot("", "", ylabel)
	p.Add(&RunMaxima{Columns: columns, Intervals: ivs, Color: colLatency})
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return svgOf(p, figW, figHCPU+30)
}

var rankKeys = []string{"median_max_us", "worst_max_us", "p99_us", "p999_us", "vs_best", "xruns", "lost"}

// rankColumnFigures are the decided figures whose ★ each column of rankKeys
// takes ("": none: a point ratio, a count of lost periods).
var rankColumnFigures = []string{"max_us", "max_us", "p99_us", "p999_us", "", "xruns_per_min", ""}

// markRankDecided stars, in each column of the ranking's table, the
// source decided better than every other from the runs; none where they
// cannot tell.
func markRankDecided(rp RankedPhase, rows []rankRow, within float64) {
	if rp.NotRanked != "" {
		return
	}
	for k, key := range rankColumnFigures {
		if key == "" {
			continue
		}
		if i := figureByKey(key).decidedOne(rankedRuns(rp.Sources, key), within, decide.Better); i >= 0 && len(rows[i].Cells) > k {
			rows[i].Cells[k].Best = true
		}
	}
}

// decisionRows are the page's table of every later source against the
// first: a column per decided figure any has, a row per source.
func decisionRows(rp RankedPhase) (figures []string, rows []decisionRow) {
	var keys []string
	for _, f := range decidedFigures {
		for _, s := range rp.Sources {
			if _, ok := s.against(f.key); ok {
				keys, figures = append(keys, f.key), append(figures, f.label)
				break
			}
		}
	}
	for _, s := range rp.Sources {
		if len(s.VsFirst) == 0 {
			continue
		}
		r := decisionRow{Label: s.Label, Against: s.VsFirst[0].Against}
		if oneRunEach(s.VsFirst) {
			r.Note = decide.OneRunEach
		}
		for _, k := range keys {
			d, ok := s.against(k)
			switch dd := d.decision(); {
			case !ok:
				r.Cells = append(r.Cells, decisionCell{Interval: unmeasured})
			case r.Note != "":
				r.Cells = append(r.Cells, decisionCell{Word: d.Word, Interval: dd.Interval()})
			default:
				r.Cells = append(r.Cells, decisionCell{Word: d.Word, Label: dd.Label(), Interval: dd.Interval(), Note: dd.Note()})
			}
		}
		rows = append(rows, r)
	}
	return figures, rows
}

type decisionRow struct {
	Label, Against, Note string
	Cells                []decisionCell
}

// decisionCell is one decision on the page: Word its class, Label the
// word as said, the ratio and its interval, and what the runs would need.
type decisionCell struct{ Word, Label, Interval, Note string }

// rankVerdict says which source was decided best and worst, by what,
// where the runs' maxima decide otherwise, what the runs cannot tell, and
// which sources lost periods and were left out.
func rankVerdict(rp RankedPhase) string {
	if rp.NotRanked != "" {
		return "Not ranked: " + rp.NotRanked + "."
	}
	v := bestVerdict(rp)
	if l := lostOut(rp); l != "" {
		v = strings.TrimSpace(v + " Not ranked: " + l + ".")
	}
	return v
}

// lostOut names the sources of rp left out of its ranking for the
// periods they lost, "" when none did: "B, 5 lost (...)".
func lostOut(rp RankedPhase) string {
	var out []string
	for _, s := range rp.Sources {
		if n := s.lost(); n > 0 && s.Runs > 0 {
			out = append(out, fmt.Sprintf("%s, %d lost", s.Label, n))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "; ") + " (periods measured but not handed over: one of them may have been the late one)"
}

// bestVerdict says which source was decided best and worst, and by
// what, or that the runs cannot tell.
func bestVerdict(rp RankedPhase) string {
	or := orCannotTell
	var v string
	if rp.Best != "" || rp.Worst != "" {
		by := "by p99.9"
		if rp.By != "p99.9" {
			by = "by the runs' maxima: not every source has percentiles"
		}
		v = fmt.Sprintf("Best: %s; worst: %s (%s, decided from each source's runs).", or(rp.Best), or(rp.Worst), by)
	}
	if rp.BestMax != "" || rp.WorstMax != "" {
		v += fmt.Sprintf(" By the runs' maxima: best %s, worst %s.", or(rp.BestMax), or(rp.WorstMax))
	}
	if rp.Undecided != "" {
		v += " " + strings.ToUpper(rp.Undecided[:1]) + rp.Undecided[1:] + "."
	}
	return strings.TrimSpace(v)
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}

// WriteRanking writes the ranking as a plain-text table, a phase at a
// time, each source on a line: the worst of its runs' maxima, the median
// max, p99 and p99.9 where the source has them, how many times the best
// source's its ranked figure is, xruns and periods lost; "best" and "worst"
// marked where the runs decide them, and a source not ranked for the
// periods it lost. Under each phase, every later source against the
// first, figure by figure: the ratio, its interval and the word.
func WriteRanking(w io.Writer, r Ranking) {
	for _, d := range r.Differs {
		fmt.Fprintf(w, "not like with like: %s\n", d)
	}
	if len(r.Differs) > 0 {
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, ph := range r.Phases {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\truns\tworst max µs\tmedian max µs\tp99 µs\tp99.9 µs\t× best (%s)\txruns\tlost\t\n", ph.Phase, ph.By)
		for _, s := range ph.Sources {
			if s.Skipped != "" {
				fmt.Fprintf(tw, "  %s\tskipped: %s\t\t\t\t\t\t\t\n", s.Label, s.Skipped)
				continue
			}
			p99, p999, xruns, lost := "—", "—", "—", "—"
			if s.P99US != nil {
				p99 = fmtNum(*s.P99US)
			}
			if s.P999US != nil {
				p999 = fmtNum(*s.P999US)
			}
			if s.Xruns != nil {
				xruns = strconv.Itoa(*s.Xruns)
			}
			if s.Lost != nil {
				lost = strconv.FormatInt(*s.Lost, 10)
			}
			mark := ""
			switch {
			case s.lost() > 0:
				mark = fmt.Sprintf("not ranked: %d lost", s.lost())
			case s.Label == ph.Best:
				mark = "best"
			case s.Label == ph.Worst:
				mark = "worst"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", s.Label, s.Runs, fmtNum(s.WorstMaxUS),
				fmtNum(s.MedianMaxUS), p99, p999, s.VsBest, xruns, lost, mark)
		}
		switch l := lostOut(ph); {
		case ph.NotRanked != "":
			fmt.Fprintf(tw, "  not ranked: %s\n", ph.NotRanked)
		case l != "":
			fmt.Fprintf(tw, "  not ranked: %s\n", l)
		}
		if ph.NotRanked == "" && (ph.BestMax != "" || ph.WorstMax != "") {
			fmt.Fprintf(tw, "  by the runs' maxima: best %s, worst %s\n", orCannotTell(ph.BestMax), orCannotTell(ph.WorstMax))
		}
		if ph.NotRanked == "" && ph.Undecided != "" {
			fmt.Fprintf(tw, "  %s\n", ph.Undecided)
		}
		writeDecisions(tw, ph, r.WithinPct)
	}
	tw.Flush()
}

func orCannotTell(l string) string {
	if l == "" {
		return string(decide.CannotTell)
	}
	return l
}

// writeDecisions writes every later source of ph against the first,
// a figure a line; one line for a source of one run against one run,
// which decides nothing.
func writeDecisions(w io.Writer, ph RankedPhase, within float64) {
	head := false
	for _, s := range ph.Sources {
		if len(s.VsFirst) == 0 {
			continue
		}
		if !head {
			fmt.Fprintf(w, "  against %s (B/A, 95 %% interval over the runs; no difference: within ±%g %%):\n", s.VsFirst[0].Against, within)
			head = true
		}
		if oneRunEach(s.VsFirst) {
			var rs []string
			for _, d := range s.VsFirst {
				rs = append(rs, figureByKey(d.Figure).label+" "+d.decision().Interval())
			}
			fmt.Fprintf(w, "    %s\t%s (%s)\n", s.Label, decide.OneRunEach, strings.Join(rs, ", "))
			continue
		}
		for _, d := range s.VsFirst {
			fmt.Fprintf(w, "    %s\t%s\t%s\n", s.Label, figureByKey(d.Figure).label, d.Text)
		}
	}
}

// oneRunEach says whether ds are all of one run against one run.
func oneRunEach(ds []Decision) bool {
	for _, d := range ds {
		if d.RunsA > 1 || d.RunsB > 1 {
			return false
		}
	}
	return true
}

// Exit codes of compare --fail-if-worse beside 0 (every later source
// decided not worse by more than PCT): ExitWorse when one is decided
// worse by more than PCT, ExitCannotTell when the runs' spread cannot tell
// for one (git bisect run's "skip").
const (
	ExitWorse      = 1
	ExitCannotTell = 125
)

// FailIfWorse judges every later source against the first (the
// reference, e.g. the kernel before an upgrade) on the figure each phase
// ranks by (RankedPhase.By: p99.9, or the runs' maxima where not every
// source has percentiles), by the interval of the ratio drawn from their
// runs (compare --fail-if-worse): the exit code, and a line for each
// source not decided within pct. Phases the first source did not run,
// and sources that skipped one, are not judged. A source that lost
// periods in a phase and is not decided worse cannot be passed: a lost
// period may have been its late one, so the runs cannot tell; nor can one
// be failed against a first source that lost periods.
func (r Ranking) FailIfWorse(pct float64) (code int, lines []string) {
	worse, unknown := false, false
	for _, ph := range r.Phases {
		if len(ph.Sources) < 2 || ph.Sources[0].Skipped != "" || ph.Sources[0].Runs == 0 {
			continue
		}
		ref := ph.Sources[0]
		for _, s := range ph.Sources[1:] {
			if s.Skipped != "" || s.Runs == 0 {
				continue
			}
			d, ok := s.against(ph.byKey())
			if !ok {
				continue
			}
			head := fmt.Sprintf("%s: %s's %s against %s's", ph.Phase, s.Label, ph.By, ref.Label)
			side := d.decision().Exceeds(pct)
			// A source that lost periods may have lost the late one: worse
			// than a lossy first source, or anything of a lossy later one,
			// cannot be told.
			lossy := s
			if side == decide.Above {
				lossy = ref
			}
			switch {
			case lossy.lost() > 0:
				unknown = true
				lines = append(lines, fmt.Sprintf("%s: cannot tell: %s lost %d periods, its figures may be understated: %s (--fail-if-worse %g%%)",
					head, lossy.Label, lossy.lost(), d.Text, pct))
			case side == decide.Above:
				worse = true
				lines = append(lines, fmt.Sprintf("%s: worse by more than %g %%: %s over %d runs against %d (--fail-if-worse %g%%)",
					head, pct, d.decision().Interval(), d.RunsB, d.RunsA, pct))
			case side == decide.Straddles:
				unknown = true
				lines = append(lines, fmt.Sprintf("%s: cannot tell whether worse by more than %g %%: %s over %d runs against %d%s (--fail-if-worse %g%%)",
					head, pct, d.decision().Interval(), d.RunsB, d.RunsA, runsToTell(d.decision(), pct), pct))
			}
		}
	}
	switch {
	case worse:
		return ExitWorse, lines
	case unknown:
		return ExitCannotTell, lines
	}
	return 0, lines
}

// runsToTell says how many runs each would likely decide d against
// 1 + pct %.
func runsToTell(d decide.Decision, pct float64) string {
	switch n := d.RunsFor(1 + pct/100); {
	case d.RunsA == 1 && d.RunsB == 1:
		return ": " + decide.OneRunEach
	case n >= decide.MaxRunsNeeded:
		return fmt.Sprintf("; more than %d runs each would be needed", decide.MaxRunsNeeded)
	case n > 0:
		return fmt.Sprintf("; ~%d runs each would likely tell", n)
	}
	return ""
}
