package report

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"latencytest/report/synth"
	"latencytest/rundata"
)

// A scheduler regression shows as more underruns and a slower hackbench:
// compare puts the two runs' hackbench Time and rate side by side with
// their ratios to the first; one run each marks no best (one run against
// one says nothing of the run-to-run spread).
func TestCompareLoadFigures(t *testing.T) {
	var dirs []string
	for _, st := range []map[string]any{
		{"unit": "rounds", "rounds": 4.0, "seconds": 28.0, "rounds_per_s": 4.0 / 28, "round_time_s": []any{7.0, 7.0, 7.0, 7.0}},
		{"unit": "rounds", "rounds": 8.0, "seconds": 29.6, "rounds_per_s": 8.0 / 29.6, "round_time_s": []any{3.7, 3.7, 3.7, 3.7, 3.7, 3.7, 3.7, 3.7}},
	} {
		dir, r := writeRun(t, synth.Default())
		r.Phases[1].StressorStats = st
		if err := rundata.WriteRun(dir, r); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	out := filepath.Join(t.TempDir(), "c.html")
	if err := CompareTo([]Input{{Path: dirs[0], Label: "before"}, {Path: dirs[1], Label: "patched"}}, out, ""); err != nil {
		t.Fatal(err)
	}
	_, doc := parsePage(t, out)
	sec := byID(doc, "phase-2")
	rows := findAll(sec, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "class") == "load_time_s" })
	if len(rows) != 1 {
		t.Fatalf("%d hackbench Time rows in the hackbench section", len(rows))
	}
	cells := findAll(rows[0], func(n *html.Node) bool { return n.Data == "td" })
	if len(cells) != 2 || text(cells[0]) != "7 (1.00×)" || text(cells[1]) != "3.7 (0.53×)" || strings.Contains(attr(cells[1], "class"), "best") {
		var got []string
		for _, c := range cells {
			got = append(got, text(c)+" ["+attr(c, "class")+"]")
		}
		t.Errorf("hackbench Time cells %q, want 7 (1.00×) and 3.7 (0.53×), neither ★ from one run each", got)
	}
	if r := findAll(sec, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "class") == "load_rate" }); len(r) != 1 || !strings.Contains(text(r[0]), "load: rounds/s") {
		t.Error("no load rate row")
	}
	if r := findAll(byID(doc, "phase-1"), func(n *html.Node) bool { return n.Data == "tr" && strings.HasPrefix(attr(n, "class"), "load_") }); len(r) != 0 {
		t.Error("the idle phase has load rows")
	}
}

// With five runs each, the faster hackbench is decided best and ★; the
// rate's best is the higher.
func TestLoadRowsDecidedBest(t *testing.T) {
	src := func(times ...float64) *phaseData {
		pl := &phaseData{}
		for _, tm := range times {
			r := &phaseData{}
			r.StressorStats = map[string]any{"unit": "rounds", "rounds": 1.0, "seconds": tm, "rounds_per_s": 1 / tm, "round_time_s": []any{tm}}
			pl.runs = append(pl.runs, r)
		}
		pl.StressorStats = poolStats(pl.runs)
		return pl
	}
	ps := []*phaseData{src(7, 7.2, 6.9, 7.1, 7.05), src(3.7, 3.8, 3.6, 3.75, 3.65), nil}
	rows := loadRows(ps, 10)
	if len(rows) < 2 {
		t.Fatalf("%d load rows", len(rows))
	}
	for _, r := range rows[:2] { // the rate and the mean Time; then the summary
		if !r.Cells[1].Best || r.Cells[0].Best || r.Cells[2].Best {
			t.Errorf("%s: ★ %v %v %v, want the second source's", r.Key, r.Cells[0].Best, r.Cells[1].Best, r.Cells[2].Best)
		}
	}
}
