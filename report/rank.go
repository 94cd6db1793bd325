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
	"latencytest/rundata"
)

// Ranking is compare's opening table, and what `compare -json` writes:
// per phase, each source's run-to-run figures, ranked by p99.9 where every
// source has a histogram: one maximum is one wakeup, and on a shared
// machine even cyclictest against itself spreads 0.2–3× in max from run to
// run. The worst run's max, the figure the lists compare kernels by (one
// bad run in a dozen is the finding), stays beside it, and ranks where a
// source has no percentiles (a cyclictest log); the page says when the two
// rankings disagree.
type Ranking struct {
	Phases []RankedPhase `json:"phases"`
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
	// Best and Worst name the sources with the smallest and the largest
	// figure By ("" with fewer than two sources that ran the phase, or
	// when NotRanked says why they are not ranked).
	Best  string `json:"best,omitempty"`
	Worst string `json:"worst,omitempty"`
	// BestMax and WorstMax are Best and Worst by the worst run's max,
	// when By is p99.9 and they differ.
	BestMax   string `json:"best_by_max,omitempty"`
	WorstMax  string `json:"worst_by_max,omitempty"`
	NotRanked string `json:"not_ranked,omitempty"`
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
// appearance.
func rank(cs []*compared) Ranking {
	var r Ranking
	for _, name := range phaseNames(cs) {
		rp := RankedPhase{Phase: name}
		for _, c := range cs {
			if p := c.phase(name); p != nil {
				rp.Sources = append(rp.Sources, rankedSource(c.Label, p))
			}
		}
		rankPhase(&rp)
		if why := unrankable(cs); why != "" {
			rp.Best, rp.Worst, rp.BestMax, rp.WorstMax, rp.NotRanked = "", "", "", "", why
		}
		r.Phases = append(r.Phases, rp)
	}
	r.Differs = differs(cs)
	return r
}

// rankPhase ranks rp's sources by p99.9 when all that ran have one, else
// by the worst run's max; and by the max too, said when it disagrees.
func rankPhase(rp *RankedPhase) {
	worstMax := func(s RankedSource) float64 { return s.WorstMaxUS }
	rp.Best, rp.Worst = bestWorst(rp.Sources, worstMax)
	for i := range rp.Sources {
		rp.Sources[i].WorstVsBest = rp.Sources[i].VsBest
	}
	rp.By = "worst max"
	for _, s := range rp.Sources {
		if s.Runs > 0 && s.P999US == nil {
			return
		}
	}
	bm, wm := rp.Best, rp.Worst
	rp.By = "p99.9"
	rp.Best, rp.Worst = bestWorst(rp.Sources, func(s RankedSource) float64 { return *s.P999US })
	if bm != rp.Best || wm != rp.Worst {
		rp.BestMax, rp.WorstMax = bm, wm
	}
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
	s.MaxUS = p.runFigure(func(r *phaseData) float64 { return r.Latency.Max })
	s.Runs = len(s.MaxUS)
	s.WorstMaxUS, s.MedianMaxUS = slices.Max(s.MaxUS), median(s.MaxUS)
	if v := p.Latency.P99; !math.IsNaN(v) {
		s.P99US = &v
	}
	if v := p.Latency.P999; !math.IsNaN(v) {
		s.P999US = &v
		if rs := p.runFigure(func(r *phaseData) float64 { return r.Latency.P999 }); len(rs) > 1 && !slices.ContainsFunc(rs, math.IsNaN) {
			s.RunP999US = rs
		}
	}
	if !p.noLoop {
		x, l := p.Xruns, p.Lost
		s.Xruns, s.Lost = &x, &l
	}
	return s
}

// bestWorst names the sources with the smallest and largest figure fig,
// of those ranked, and sets each source's VsBest, its figure over the
// best's.
func bestWorst(ss []RankedSource, fig func(RankedSource) float64) (best, worst string) {
	b, w := -1, -1
	for i, s := range ss {
		if !s.ranked() {
			continue
		}
		if b < 0 || fig(s) < fig(ss[b]) {
			b = i
		}
		if w < 0 || fig(s) > fig(ss[w]) {
			w = i
		}
	}
	if b < 0 {
		return "", ""
	}
	for i := range ss {
		if ss[i].Runs > 0 && fig(ss[b]) > 0 {
			ss[i].VsBest = fig(ss[i]) / fig(ss[b])
		}
	}
	if b == w {
		return "", ""
	}
	return ss[b].Label, ss[w].Label
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
	Fig            template.HTML // the sources' per-run maxima, when some have several runs
}

type rankRow struct {
	Label, Runs, PerRun string
	Cells               []cell // median max, worst max, p99, p99.9, × best, xruns, lost
}

// rankViews formats r for the page, marking the best of each column.
func rankViews(r Ranking) ([]rankView, error) {
	var vs []rankView
	for _, rp := range r.Phases {
		v := rankView{Phase: rp.Phase}
		v.Verdict = rankVerdict(rp)
		cols := [][]float64{}
		for _, s := range rp.Sources {
			row := rankRow{Label: s.Label}
			if s.Skipped != "" {
				row.Runs = "skipped: " + s.Skipped
				v.Rows = append(v.Rows, row)
				cols = append(cols, nil)
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
			if !s.ranked() {
				vals = nil // shown, never ★
			}
			cols = append(cols, vals)
		}
		for k := range rankKeys {
			best := math.Inf(1)
			for _, vals := range cols {
				if vals != nil && !math.IsNaN(vals[k]) {
					best = min(best, vals[k])
				}
			}
			for i, vals := range cols {
				if vals != nil && vals[k] == best && len(rp.Sources) > 1 {
					v.Rows[i].Cells[k].Best = true
				}
			}
		}
		fig, err := rankFigure(rp)
		if err != nil {
			return nil, err
		}
		v.Fig = fig
		vs = append(vs, v)
	}
	return vs, nil
}

// rankFigure draws each source's per-run maxima in a column of its own,
// when any source has more than one run.
func rankFigure(rp RankedPhase) (template.HTML, error) {
	var labels []string
	var columns [][]float64
	several := false
	for _, s := range rp.Sources {
		labels, columns = append(labels, s.Label), append(columns, s.MaxUS)
		several = several || s.Runs > 1
	}
	if !several {
		return "", nil
	}
	return maximaFigure(labels, columns)
}

// maximaFigure draws columns of per-run maxima (RunMaxima), one per label.
func maximaFigure(labels []string, columns [][]float64) (template.HTML, error) {
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i), Label: l}
	}
	p := newPlot("", "", "max latency per run, µs")
	p.Add(&RunMaxima{Columns: columns, Color: colLatency})
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	return svgOf(p, figW, figHCPU+30)
}

var rankKeys = []string{"median_max_us", "worst_max_us", "p99_us", "p999_us", "vs_best", "xruns", "lost"}

// rankVerdict says which source ranked best and worst, by what, where
// the worst run's max ranks them otherwise, and which sources lost
// periods and were left out.
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

// bestVerdict says which source ranked best and worst, and by what.
func bestVerdict(rp RankedPhase) string {
	switch {
	case rp.Best == "":
		return ""
	case rp.By == "p99.9":
		v := fmt.Sprintf("Best: %s; worst: %s (by p99.9, pooled over each source's runs).", rp.Best, rp.Worst)
		if rp.BestMax != "" {
			v += fmt.Sprintf(" By the worst run's max: best %s, worst %s — one wakeup each, weigh it against the runs' spread.", rp.BestMax, rp.WorstMax)
		}
		return v
	}
	return fmt.Sprintf("Best: %s; worst: %s (by the worst run's max: not every source has percentiles).", rp.Best, rp.Worst)
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
// marked, and a source not ranked for the periods it lost.
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
		if ph.NotRanked == "" && ph.BestMax != "" {
			fmt.Fprintf(tw, "  by the worst run's max: best %s, worst %s\n", ph.BestMax, ph.WorstMax)
		}
	}
	tw.Flush()
}

// WorseThanFirst says, a line each, where a source's ranked figure (p99.9,
// or the worst run's max where not every source has percentiles:
// RankedPhase.By) is more than pct percent above the first source's in the
// same phase (compare --fail-if-worse): the first source is the reference,
// e.g. the kernel before an upgrade. Phases the first source did not run,
// and sources that skipped one, are not judged. A source that lost
// periods in a phase and is not above the reference is not passed: a
// lost period may have been its late one, so it gets a line too.
func (r Ranking) WorseThanFirst(pct float64) []string {
	var out []string
	for _, ph := range r.Phases {
		if len(ph.Sources) < 2 || ph.Sources[0].Skipped != "" || ph.Sources[0].Runs == 0 {
			continue
		}
		fig := func(s RankedSource) float64 { return s.WorstMaxUS }
		if ph.By == "p99.9" {
			fig = func(s RankedSource) float64 { return *s.P999US }
		}
		ref := ph.Sources[0]
		for _, s := range ph.Sources[1:] {
			switch {
			case s.Skipped != "" || s.Runs == 0:
			case fig(s) > fig(ref)*(1+pct/100):
				out = append(out, fmt.Sprintf("%s: %s's %s %s µs is %.0f %% above %s's %s µs (--fail-if-worse %g%%)",
					ph.Phase, s.Label, ph.By, fmtNum(fig(s)), 100*(fig(s)/fig(ref)-1), ref.Label, fmtNum(fig(ref)), pct))
			case s.lost() > 0:
				out = append(out, fmt.Sprintf("%s: %s lost %d periods: its %s %s µs may be understated, not judged against %s's %s µs (--fail-if-worse %g%%)",
					ph.Phase, s.Label, s.lost(), ph.By, fmtNum(fig(s)), ref.Label, fmtNum(fig(ref)), pct))
			}
		}
	}
	return out
}
