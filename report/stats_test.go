package report

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"

	"latencytest/rundata"
)

// stats.csv and the tables say what each figure is: a percentile beyond the
// histogram's range is a lower bound, negative lateness stays negative,
// and text from the run cannot become a spreadsheet formula.
func TestStatsRecordRepresentations(t *testing.T) {
	h := rundata.NewHistogram(rundata.DefaultHistUS)
	// 90 early wakeups of 2.5 µs, 9 at 100 µs exactly, 1 at 150 ms.
	for range 90 {
		h.Add(-2_500)
	}
	for range 9 {
		h.Add(100_000)
	}
	h.Add(150_000_000)
	p := &phaseData{hist: h}
	p.Name, p.Stressor = "=HYPERLINK(\"http://x\")", "@cmd"
	p.Periods = int64(h.Count)
	p.StressorStats = map[string]any{"-a": "+b"}
	rundata.FillPhase(&p.Phase, h)

	var buf bytes.Buffer
	if err := writeStats(&buf, []*phaseData{p}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, k := range recs[0] {
		got[k] = recs[1][i]
	}
	for k, want := range map[string]string{
		"phase":               "'=HYPERLINK(\"http://x\")",
		"stressor":            "'@cmd",
		"stressor_stats":      "'-a=+b",
		"min_us":              "-2.5",
		"p50_us":              "-2.5", // bin −3, clamped to the min
		"p99_us":              "100",  // the 99th value is 100.000 µs: bin 100
		"p9999_us":            ">=100000",
		"max_us":              "150000",
		"within_100us_pct":    "99", // ≤ 100 µs: the early ones and the nine at exactly 100 µs
		"within_1ms_pct":      "99",
		"histogram_overflow":  "1",
		"histogram_underflow": "0",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	cells := map[string]string{}
	for _, c := range row(p) {
		cells[c.Key] = c.Text
	}
	if cells["p9999_us"] != "≥ 100000" || cells["p50_us"] != "-2.5" || cells["max_us"] != "150000.0" {
		t.Errorf("table cells %v", cells)
	}
}

// A phase's lost periods are a column of the tables where a phase lost
// some, beside the figures they are missing from, and of stats.csv always:
// one metric, every output.
func TestStatsLostColumn(t *testing.T) {
	h := rundata.NewHistogram(rundata.DefaultHistUS)
	h.Add(10_000)
	whole, lossy := &phaseData{hist: h}, &phaseData{hist: h}
	whole.Name, lossy.Name, lossy.Lost = "idle", "hackbench", 3
	rundata.FillPhase(&whole.Phase, h)
	rundata.FillPhase(&lossy.Phase, h)
	table := func(ps ...*phaseData) map[string][]string {
		tb := statsTable{Head: metricHeads()}
		for _, p := range ps {
			tb.Rows = append(tb.Rows, statsRow{Name: p.Name, Cells: row(p)})
		}
		tb.dropUnmeasured()
		cols := map[string][]string{}
		for _, r := range tb.Rows {
			for _, c := range r.Cells {
				cols[c.Key] = append(cols[c.Key], c.Text)
			}
		}
		return cols
	}
	if got, ok := table(whole)["lost"]; ok {
		t.Errorf("a phase that lost nothing has a lost column: %q", got)
	}
	if got := table(whole, lossy)["lost"]; !slices.Equal(got, []string{"0", "3"}) {
		t.Errorf("lost column %q, want 0 and 3", got)
	}
	var buf bytes.Buffer
	if err := writeStats(&buf, []*phaseData{whole, lossy}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, k := range recs[0] {
		if k == "lost" {
			got = append(got, recs[1][i], recs[2][i])
		}
	}
	if !slices.Equal(got, []string{"0", "3"}) {
		t.Errorf("stats.csv lost %q, want one column: 0 and 3", got)
	}
}
