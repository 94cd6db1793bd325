package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"latencytest/internal/decide"
	"latencytest/rundata"
)

// metric is one statistic of a phase. One table of them serves the
// overview, the per-phase tables, stats.csv and compare, so the four can
// never disagree on what a column means.
type metric struct {
	key    string // stats.csv column and HTML class
	label  string // table header
	better int    // -1 lower is better, +1 higher is better, 0 neither
	get    func(*phaseData) float64
	format func(float64) string
	// pct marks a percentile of the wakeup latency: beyond the histogram's
	// range it is only a lower bound, and reads "≥ range".
	pct bool
}

var metrics = []metric{
	{"periods", "periods", 0, func(p *phaseData) float64 { return float64(p.Periods) }, fmtInt, false},
	{"min_us", "min µs", -1, func(p *phaseData) float64 { return p.Latency.Min }, fmtUS, false},
	{"avg_us", "avg µs", -1, func(p *phaseData) float64 { return p.Latency.Avg }, fmtUS, false},
	{"p50_us", "p50 µs", -1, func(p *phaseData) float64 { return p.Latency.P50 }, fmtUS, true},
	{"p99_us", "p99 µs", -1, func(p *phaseData) float64 { return p.Latency.P99 }, fmtUS, true},
	{"p999_us", "p99.9 µs", -1, func(p *phaseData) float64 { return p.Latency.P999 }, fmtUS, true},
	{"p9999_us", "p99.99 µs", -1, func(p *phaseData) float64 { return p.Latency.P9999 }, fmtUS, true},
	{"max_us", "max µs", -1, func(p *phaseData) float64 { return p.Latency.Max }, fmtUS, false},
	// The share of wakeups at most 100 µs (1 ms) late, early ones included.
	{"within_100us_pct", "wakeups ≤ 100 µs %", +1, func(p *phaseData) float64 { return p.WithinUS100 }, fmtPct, false},
	{"within_1ms_pct", "wakeups ≤ 1 ms %", +1, func(p *phaseData) float64 { return p.WithinMS1 }, fmtPct, false},
	// The share of CPU loops whose duration is within ±100 µs of nominal
	// (|real − nominal| ≤ 100 µs): a DSP figure, not a wakeup one.
	{"cpu_loop_within_100us_pct", "CPU loop ±100 µs %", +1, func(p *phaseData) float64 {
		if p.noLoop {
			return math.NaN()
		}
		return p.CPULoop.Within100USPct
	}, fmtPct, false},
	{"headroom_min_us", "min headroom µs", +1, func(p *phaseData) float64 {
		if p.noLoop {
			return math.NaN()
		}
		return p.HeadroomMinUS
	}, fmtUS, false},
	{"xruns", "xruns", -1, func(p *phaseData) float64 {
		if p.noLoop {
			return math.NaN()
		}
		return float64(p.Xruns)
	}, fmtInt, false},
	{"xrun_ms_total", "underrun ms", -1, func(p *phaseData) float64 {
		if p.noLoop {
			return math.NaN()
		}
		return p.XrunMSTotal
	}, fmtUS, false},
	// The periods measured but not handed over (the engine's ring was
	// full): in no figure above, and one of them may have been the late
	// one, so a phase that lost any is never marked best on them
	// (lossProof).
	{"lost", "lost", -1, func(p *phaseData) float64 {
		if p.noLoop {
			return math.NaN()
		}
		return float64(p.Lost)
	}, fmtInt, false},
	// What the machine was doing besides: its one-minute load average as
	// the phase started, and on a virtual machine the share of its time
	// the host gave to others (steal). Context, neither better nor worse.
	{"loadavg", "load avg", 0, func(p *phaseData) float64 { return p.LoadAvg }, fmtLoad, false},
	{"steal_pct", "steal %", 0, func(p *phaseData) float64 { return p.StealPct }, fmtPct, false},
	// What a loopback heard (run --loopback): the round trip from the
	// application's write to its read over the phase, followed across
	// its restarts (its median; before the first break alone in a run.json
	// of old), so that one that grows under load shows; and the breaks
	// in the sine.
	{"round_trip_min_ms", "round trip min ms", -1, roundTrip(func(s *rundata.MSStats) float64 { return s.Min }), fmtUS, false},
	{"round_trip_ms", "round trip ms", -1, func(p *phaseData) float64 {
		switch {
		case p.Sound == nil:
			return math.NaN()
		case p.Sound.RoundTripFollowed != nil:
			return p.Sound.RoundTripFollowed.Median
		case p.Sound.CardDelay != nil:
			return p.Sound.RoundTripMS
		}
		return math.NaN()
	}, fmtUS, false},
	{"round_trip_max_ms", "round trip max ms", -1, roundTrip(func(s *rundata.MSStats) float64 { return s.Max }), fmtUS, false},
	{"sound_breaks", "sound broke", -1, func(p *phaseData) float64 {
		if p.Sound == nil || !p.Sound.Judged {
			return math.NaN()
		}
		return float64(len(p.Sound.Glitches))
	}, fmtInt, false},
}

// roundTrip is a metric of the round trip followed over a loopback
// phase: f of its spread, NaN without one.
func roundTrip(f func(*rundata.MSStats) float64) func(*phaseData) float64 {
	return func(p *phaseData) float64 {
		if p.Sound == nil || p.Sound.RoundTripFollowed == nil {
			return math.NaN()
		}
		return f(p.Sound.RoundTripFollowed)
	}
}

// sometimes are the metrics only some phases have, each with the text
// that reads as not having it: a loopback's (run --loopback) and the
// periods lost (a phase that lost none has nothing to say). A table shows
// their columns only where a row has them, so a run without a loopback or
// a loss keeps the table it always had. stats.csv keeps every column.
var sometimes = map[string]string{"round_trip_min_ms": unmeasured, "round_trip_ms": unmeasured, "round_trip_max_ms": unmeasured,
	"sound_breaks": unmeasured, "lost": "0"}

// lossProof are the metrics that lost periods cannot change: the others
// are figures of the periods' samples, which a lost period, maybe the late
// one, is missing from.
var lossProof = map[string]bool{"periods": true, "lost": true, "loadavg": true, "steal_pct": true,
	"round_trip_min_ms": true, "round_trip_ms": true, "round_trip_max_ms": true, "sound_breaks": true}

// dropUnmeasured removes from t the columns of sometimes-metrics that no
// row has.
func (t *statsTable) dropUnmeasured() {
	for i := len(metrics) - 1; i >= 0; i-- {
		if _, ok := sometimes[metrics[i].key]; !ok || measuredIn(t.Rows, i) {
			continue
		}
		t.Head = slices.Delete(t.Head, i, i+1)
		for r := range t.Rows {
			if len(t.Rows[r].Cells) > i {
				t.Rows[r].Cells = slices.Delete(t.Rows[r].Cells, i, i+1)
			}
		}
	}
}

// measuredIn says whether any of rows has a value in column i, a
// sometimes-metric's other than the text that reads as none.
func measuredIn(rows []statsRow, i int) bool {
	for _, r := range rows {
		if len(r.Cells) <= i {
			continue
		}
		c := r.Cells[i]
		if none, ok := sometimes[c.Key]; c.Text != unmeasured && (!ok || c.Text != none) {
			return true
		}
	}
	return false
}

// unmeasured is how a cell reads without a value.
const unmeasured = "—"

func fmtLoad(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// cell is one formatted table value.
type cell struct {
	Key, Text string
	Best      bool
}

// row formats the metrics of a phase that ran.
func row(p *phaseData) []cell {
	cs := make([]cell, len(metrics))
	for i, m := range metrics {
		cs[i] = cell{Key: m.key, Text: m.text(p)}
	}
	return cs
}

// text formats the metric of a phase for the page.
func (m *metric) text(p *phaseData) string {
	v := m.get(p)
	if m.pct {
		return fmtPercentile(p.Latency, v)
	}
	return m.format(v)
}

// csv formats the metric of a phase for stats.csv: plain decimals, empty
// when unknown, ">=N" for a percentile that is only a lower bound.
func (m *metric) csv(p *phaseData) string {
	v := m.get(p)
	switch {
	case math.IsNaN(v):
		return ""
	case m.pct && p.Latency.Beyond(v):
		return ">=" + strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// fmtPercentile formats a percentile of s: one whose rank fell among the
// values beyond the histogram's range reads "≥ range" (the bins cannot say
// how far beyond), never the maximum.
func fmtPercentile(s rundata.LatencyStats, v float64) string {
	if s.Beyond(v) {
		return "≥ " + strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmtUS(v)
}

// decidedFigure is a figure compare decides on from the spread of each
// source's runs (internal/decide): the decisions compare prints and
// writes in -json, its best and worst, and the ★ of its tables all come
// from this one table. A figure is one of metrics' by key, taken run by
// run, or derived from them (xruns per minute, so that runs of other
// lengths compare).
type decidedFigure struct {
	key, label string
	// column is the metric whose cells take the figure's ★.
	column string
	// unit is added to every run's figure before the ratio is taken
	// (decide.Compare): 0 for latencies, the resolution of a count that
	// can be 0 (one xrun in 10 minutes, 1 ms of xrun), so that none
	// against none is a ratio of 1.
	unit float64
	get  func(*phaseData) float64
}

var decidedFigures = []decidedFigure{
	{"p99_us", "p99", "p99_us", 0, metricByKey("p99_us").get},
	{"p999_us", "p99.9", "p999_us", 0, metricByKey("p999_us").get},
	{"max_us", "max", "max_us", 0, metricByKey("max_us").get},
	{"xruns_per_min", "xruns/min", "xruns", 0.1, xrunsPerMinute},
	{"xrun_ms_total", "xrun time ms", "xrun_ms_total", 1, metricByKey("xrun_ms_total").get},
}

// xrunsPerMinute is the phase's xruns over its length; NaN where either
// is unknown (cyclictest has no xruns; a phase recovered from a crash may
// have no end).
func xrunsPerMinute(p *phaseData) float64 {
	x := metricByKey("xruns").get(p)
	minutes := float64(p.EndMonoNS-p.StartMonoNS) / 60e9
	if math.IsNaN(x) || minutes <= 0 {
		return math.NaN()
	}
	return x / minutes
}

// figureByKey is the decided figure called key.
func figureByKey(key string) decidedFigure {
	for _, f := range decidedFigures {
		if f.key == key {
			return f
		}
	}
	panic("report: no decided figure " + key)
}

// runs is f of each run phase p pools, those without it left out (a
// percentile beyond the histogram's range is only a lower bound); nil for
// a phase that did not run.
func (f decidedFigure) runs(p *phaseData) []float64 {
	if p == nil {
		return nil
	}
	var out []float64
	for _, v := range p.runFigure(f.get) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && !(metricByKey(f.column).pct && p.Latency.Beyond(v)) {
			out = append(out, v)
		}
	}
	return out
}

// metricByKey is the metric called key.
func metricByKey(key string) *metric {
	for i := range metrics {
		if metrics[i].key == key {
			return &metrics[i]
		}
	}
	panic("report: no metric " + key)
}

// decidedOne is the index of the one source whose runs (runs[i]; nil:
// not ranked) are decided w (decide.Better: best; decide.Worse: worst)
// against every other ranked source's on figure f; -1 when there are
// fewer than two or the runs cannot tell.
func (f decidedFigure) decidedOne(runs [][]float64, within float64, w decide.Word) int {
	return decidedOne(runs, f.unit, within, w)
}

// decidedOne is the index of the one source whose runs (runs[i]; nil:
// not ranked) are decided w against every other's, unit added to every
// figure (decide.Compare); -1 when there are fewer than two or the runs
// cannot tell.
func decidedOne(runs [][]float64, unit, within float64, w decide.Word) int {
	ranked := 0
	for _, r := range runs {
		if len(r) > 0 {
			ranked++
		}
	}
	if ranked < 2 {
		return -1
	}
	for i, r := range runs {
		if len(r) == 0 {
			continue
		}
		all := true
		for j, o := range runs {
			if j != i && len(o) > 0 && decide.Compare(o, r, unit, within).Word != w {
				all = false
				break
			}
		}
		if all {
			return i
		}
	}
	return -1
}

// markDecided flags, in each column a decided figure takes its ★ in,
// the source decided better than every other from the runs' spread
// (nil ps are phases that did not run); no other cell is flagged: a
// figure the runs cannot tell apart has no best.
func markDecided(ps []*phaseData, rows [][]cell, within float64) {
	for _, f := range decidedFigures {
		runs := make([][]float64, len(ps))
		for i, p := range ps {
			if p != nil && (p.Lost == 0 || lossProof[f.column]) {
				runs[i] = f.runs(p) // one lost period may have been the late one
			}
		}
		i := f.decidedOne(runs, within, decide.Better)
		if i < 0 {
			continue
		}
		for mi, m := range metrics {
			if m.key == f.column {
				rows[i][mi].Best = true
			}
		}
	}
}

func fmtInt(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatInt(int64(v), 10)
}

// fmtUS shows latencies to 0.1 µs: the clocks resolve far better, but the
// histogram's bins are 1 µs and more digits only add noise.
func fmtUS(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// fmtPct keeps the digits that matter near 100 %: 99.9 % and 99.999 % of
// wakeups in time are very different machines for audio.
func fmtPct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v == 100:
		return "100"
	case v >= 99.9:
		return strconv.FormatFloat(math.Floor(v*1e4)/1e4, 'f', 4, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// stressorSummary renders a stressor's throughput figures as named
// figures with units: its rate ("0.43 rounds/s", "41.2 MB/s"), hackbench's
// round time, a file's size in MiB, then its other figures as k=v sorted
// by key, so that the same run always reads the same. Series (one value
// per round) are summarised here and listed by stressorSeries.
func stressorSummary(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	done := map[string]bool{"unit": true, "seconds": true}
	if unit, ok := m["unit"].(string); ok {
		key := unitKey(m)
		done[key], done[key+"_per_s"] = true, true
		if rate, ok := m[key+"_per_s"].(float64); ok {
			p := fmt.Sprintf("%s %s/s", strconv.FormatFloat(rate, 'g', 4, 64), unit)
			if total, ok := m[key].(float64); ok {
				p += fmt.Sprintf(" (%s %s in %s s)", strconv.FormatFloat(total, 'g', 6, 64), unit, strconv.FormatFloat(asNum(m["seconds"]), 'f', 1, 64))
			}
			parts = append(parts, p)
		}
	}
	if ts, ok := numbers(m["round_time_s"]); ok && len(ts) > 0 {
		done["round_time_s"] = true
		lo, hi, sum := ts[0], ts[0], 0.0
		for _, v := range ts {
			lo, hi, sum = min(lo, v), max(hi, v), sum+v
		}
		parts = append(parts, fmt.Sprintf("Time: mean %.3f s over %d rounds (%.3f–%.3f)", sum/float64(len(ts)), len(ts), lo, hi))
	}
	if b, ok := m["size_bytes"].(float64); ok {
		done["size_bytes"] = true
		parts = append(parts, fmt.Sprintf("size %s MiB", strconv.FormatFloat(b/(1<<20), 'f', -1, 64)))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !done[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if vs, ok := numbers(m[k]); ok {
			parts = append(parts, fmt.Sprintf("%s: %d values", k, len(vs)))
			continue
		}
		parts = append(parts, k+"="+plainValue(m[k]))
	}
	return strings.Join(parts, ", ")
}

// stressorSeries lists a stressor's per-round figures, for the report's
// "on demand" list: "round_time_s: 0.808 0.822 …".
func stressorSeries(m map[string]any) []string {
	var out []string
	for k, v := range m {
		if vs, ok := numbers(v); ok {
			var b strings.Builder
			b.WriteString(k + ":")
			for _, x := range vs {
				b.WriteString(" " + strconv.FormatFloat(x, 'g', 6, 64))
			}
			out = append(out, b.String())
		}
	}
	sort.Strings(out)
	return out
}

func plainValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', 6, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// numbers reads a JSON array of numbers.
func numbers(v any) ([]float64, bool) {
	a, ok := v.([]any)
	if !ok {
		if f, ok := v.([]float64); ok {
			return f, true
		}
		return nil, false
	}
	out := make([]float64, 0, len(a))
	for _, x := range a {
		f, ok := x.(float64)
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

func asNum(v any) float64 {
	f, _ := v.(float64)
	return f
}
