package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"latencytest/internal/decide"
)

// loadFigure is one of a stressor's figures that compare puts side by
// side: its rate (rounds/s, MB/s, redraws/s; higher is more load done) and
// hackbench's mean round time (the figure hackbench prints; lower is a
// faster scheduler).
type loadFigure struct {
	key, label string
	better     int // +1 higher is better, -1 lower
	value      func(m map[string]any) (float64, bool)
}

// unitKey is the key of a stressor's total in its figures, from its unit
// ("MB/s" work counts as "mb_s"); "" without a unit.
func unitKey(m map[string]any) string {
	unit, _ := m["unit"].(string)
	return strings.ToLower(strings.ReplaceAll(unit, "/", "_"))
}

// rateKey is the key of a stressor's rate in its figures.
func rateKey(m map[string]any) string {
	if k := unitKey(m); k != "" {
		return k + "_per_s"
	}
	return ""
}

// decidedBest is the index of the source (ps[i]; nil: skipped) whose
// runs decide it better on f than every other's, -1 when they cannot
// tell: the ★ of a load row, as of the latency rows (markDecided).
func (f loadFigure) decidedBest(ps []*phaseData, within float64) int {
	runs := make([][]float64, len(ps))
	for i, p := range ps {
		if p == nil {
			continue
		}
		for _, r := range p.perRun() {
			if v, ok := f.value(r.StressorStats); ok {
				runs[i] = append(runs[i], v)
			}
		}
	}
	w := decide.Better // lower is better: decided below every other
	if f.better > 0 {
		w = decide.Worse // higher is better: decided above every other
	}
	return decidedOne(runs, 0, within, w)
}

var loadFigures = []loadFigure{
	{"load_rate", "load rate", +1, func(m map[string]any) (float64, bool) {
		v, ok := m[rateKey(m)].(float64)
		return v, ok
	}},
	{"load_time_s", "hackbench Time, mean s", -1, func(m map[string]any) (float64, bool) {
		ts, ok := numbers(m["round_time_s"])
		if !ok || len(ts) == 0 {
			return 0, false
		}
		sum := 0.0
		for _, t := range ts {
			sum += t
		}
		return sum / float64(len(ts)), true
	}},
}

// loadRows are compare's rows of the phase's load figures, one per figure
// some source has: each source's value and its ratio to the first
// source's ("0.53×"), ★ on the source the runs decide best (within: X
// of decide.Compare); then each source's whole summary. ps holds nil for
// a source that skipped the phase.
func loadRows(ps []*phaseData, within float64) []compareRow {
	var rows []compareRow
	for _, f := range loadFigures {
		best := f.decidedBest(ps, within)
		vals := make([]float64, len(ps))
		have := false
		unit := ""
		for i, p := range ps {
			vals[i] = math.NaN()
			if p == nil {
				continue
			}
			if v, ok := f.value(p.StressorStats); ok {
				vals[i], have = v, true
				if u, _ := p.StressorStats["unit"].(string); u != "" {
					unit = u
				}
			}
		}
		if !have {
			continue
		}
		label := f.label
		if f.key == "load_rate" && unit != "" {
			label = "load: " + unit + "/s"
		}
		r := compareRow{Key: f.key, Label: label}
		ref := math.NaN()
		for _, v := range vals {
			if !math.IsNaN(v) {
				ref = v
				break
			}
		}
		for i, v := range vals {
			c := cell{Key: f.key, Text: "—"}
			if !math.IsNaN(v) {
				c.Text = strconv.FormatFloat(v, 'g', 4, 64)
				if ref > 0 {
					c.Text += fmt.Sprintf(" (%.2f×)", v/ref)
				}
				c.Best = i == best
			}
			r.Cells = append(r.Cells, c)
		}
		rows = append(rows, r)
	}
	if len(rows) > 0 {
		r := compareRow{Key: "load_summary", Label: "load figures"}
		for _, p := range ps {
			t := "—"
			if p != nil {
				t = stressorSummary(p.StressorStats)
			}
			r.Cells = append(r.Cells, cell{Key: "load_summary", Text: t})
		}
		rows = append(rows, r)
	}
	return rows
}
