package report

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"latencytest/report/synth"
	"latencytest/rundata"
)

// repeatedRun writes a synthetic run of idle and hackbench, twice over,
// marked as run --repeat 2 writes it.
func repeatedRun(t *testing.T) (string, *rundata.Run) {
	t.Helper()
	c := synth.Default()
	c.Phases = append(c.Phases, c.Phases...)
	dir, r := writeRun(t, c)
	r.Repeat = 2
	for i := range r.Phases {
		r.Phases[i].Repeat = i/2 + 1
	}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir, r
}

// The report of a repeated run has a run-to-run table per phase: a row
// per repetition with its own figures, and the pooled ones.
func TestRenderRepeated(t *testing.T) {
	dir, r := repeatedRun(t)
	_, doc := renderDoc(t, dir)
	for _, name := range []string{"idle", "hackbench"} {
		tab := byID(doc, "spread-"+name)
		if tab == nil {
			t.Fatalf("no run-to-run table for %s", name)
		}
		rows := findAll(tab, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-phase") != "" })
		var got []string
		for _, row := range rows {
			got = append(got, attr(row, "data-phase"))
		}
		if want := []string{name + " #1", name + " #2", "pooled"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s rows %q, want %q", name, got, want)
		}
	}
	// A figure of each run's max per phase, one column per phase.
	fig := byID(doc, "fig-spread")
	if fig == nil || !strings.Contains(text(fig), "idle") || !strings.Contains(text(fig), "hackbench") {
		t.Error("no figure of the per-run maxima with a column per phase")
	}
	// The pooled max is the larger of the two repetitions'.
	pooled := pool([]*phaseData{{Phase: r.Phases[0]}, {Phase: r.Phases[2]}})
	if want := max(r.Phases[0].Latency.Max, r.Phases[2].Latency.Max); pooled.Latency.Max != want || len(pooled.runs) != 2 {
		t.Errorf("pooled max %v (runs %v), want %v", pooled.Latency.Max, pooled.runs, want)
	}
}

// compare takes a repeated run as one source with as many runs as it has
// repetitions: each one's max in the ranking, the histograms pooled.
func TestCompareRepeated(t *testing.T) {
	dir, r := repeatedRun(t)
	rk, _ := rankingOf(t, []Input{{Path: dir, Label: "rep"}, {Path: dir, Label: "again"}}, t.TempDir())
	if len(rk.Phases) != 2 || rk.Phases[0].Phase != "idle" {
		t.Fatalf("phases %+v", rk.Phases)
	}
	s := rk.Phases[0].Sources[0]
	want := []float64{r.Phases[0].Latency.Max, r.Phases[2].Latency.Max}
	if s.Runs != 2 || s.MaxUS[0] != want[0] || s.MaxUS[1] != want[1] || s.P99US == nil || s.Xruns == nil {
		t.Errorf("idle: %+v, want two runs with maxima %v, a pooled p99 and xruns", s, want)
	}
	if *s.Xruns != r.Phases[0].Xruns+r.Phases[2].Xruns {
		t.Errorf("xruns %d, want the sum of the repetitions'", *s.Xruns)
	}
	// The pooled p99 lies between the repetitions' own.
	lo, hi := min(r.Phases[0].Latency.P99, r.Phases[2].Latency.P99), max(r.Phases[0].Latency.P99, r.Phases[2].Latency.P99)
	if *s.P99US < lo-1 || *s.P99US > hi+1 {
		t.Errorf("pooled p99 %g µs, want between the repetitions' %g and %g", *s.P99US, lo, hi)
	}
	// Each repetition is a run the decisions draw from: two against two
	// give no 95 % interval, and the run against itself is a ratio of 1.
	if !slices.Equal(s.RunFigures["max_us"], want) {
		t.Errorf("run figures %v, want the repetitions' maxima %v", s.RunFigures, want)
	}
	d, ok := rk.Phases[0].Sources[1].against("p999_us")
	if !ok || d.Word != "cannot tell" || d.RunsA != 2 || d.RunsB != 2 || *d.Ratio != 1 || d.Interval != nil || d.RunsNeeded < 5 {
		t.Errorf("again against rep: %+v", d)
	}
}

// The repetitions pooled keep what keeps a phase from holding: a
// repetition's lost periods, its verdict (the worse one), its periods
// caught up; the pool of two that held holds.
func TestPoolKeepsVerdict(t *testing.T) {
	rep := func(lost int64, safe *rundata.Safe) *phaseData {
		p := &phaseData{Phase: rundata.Phase{Name: "idle", Periods: 1000, CaughtUp: 2, Lost: lost, ClockHz: 48000,
			Safe: safe, SafeAtDefaultLoad: safe}}
		p.Latency.Max = 50
		return p
	}
	clean := pool([]*phaseData{rep(0, &rundata.Safe{Periods: 2, MarginNS: 900}), rep(0, &rundata.Safe{Periods: 2, MarginNS: 400})})
	if !clean.Held(2) || clean.Safe.MarginNS != 400 || clean.CaughtUp != 4 || clean.ClockHz != 48000 {
		t.Errorf("two repetitions that held: %q, verdict %+v, caught up %d, clock %g Hz; want held, the smaller margin, the sum, the card's clock",
			clean.NotHeld(2, 1333), clean.Safe, clean.CaughtUp, clean.ClockHz)
	}
	lost := pool([]*phaseData{rep(0, &rundata.Safe{Periods: 2}), rep(5, &rundata.Safe{Periods: 2})})
	if lost.Lost != 5 || lost.Held(2) {
		t.Errorf("a repetition with 5 lost: pooled lost %d, %q; want 5 and not held", lost.Lost, lost.NotHeld(2, 1333))
	}
	unknown := pool([]*phaseData{rep(0, &rundata.Safe{Periods: 2}), rep(3, nil)})
	if unknown.Lost != 3 || unknown.Safe != nil || unknown.Held(2) {
		t.Errorf("a repetition with 3 lost and no verdict: pooled lost %d, verdict %+v, %q; want 3, none, not held",
			unknown.Lost, unknown.Safe, unknown.NotHeld(2, 1333))
	}
}
