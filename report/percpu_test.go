package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"latencytest/internal/decide"
	"latencytest/report/synth"
)

// A phase of run --cpus renders a row, a latency-over-time figure and a
// histogram per CPU, from each CPU's own samples file, and one overlay of
// the CPUs' histograms; the page's verdict names the best and the worst
// CPU for audio with its why, and the real-time set-up that a thread was
// pinned to each CPU. CPU 3 stalls past the buffer, CPU 0 is
// quiet. The phase's name is markup, which must stay text.
func TestRenderPerCPU(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = 2 * time.Second
	quiet, stalling := synth.Idle(), synth.Hackbench()
	quiet.CPU, stalling.CPU = 0, 3
	stalling.StallProb = 2e-3 // a few stalls in 1500 periods
	name := `<b>idle</b>`
	c.Phases = []synth.Phase{{Name: name, CPUs: []synth.Phase{quiet, stalling}}}
	dir, r := writeRun(t, c)
	out, doc := renderDoc(t, dir)
	if strings.Contains(out, "<b>idle") || len(findAll(doc, tag("b"))) != 0 {
		t.Errorf("the phase's name became markup")
	}
	sec := byID(doc, "phase-1")
	if sec == nil {
		t.Fatal("no section for the phase")
	}
	ph := r.Phases[0]
	rows := findAll(sec, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-phase") != "" })
	want := map[string]float64{name: ph.Latency.Max, "CPU 0": ph.CPUs[0].Latency.Max, "CPU 3": ph.CPUs[1].Latency.Max}
	if len(rows) != len(want) {
		t.Fatalf("%d rows in the phase's table, want the phase's and one per CPU", len(rows))
	}
	for _, tr := range rows {
		w, ok := want[attr(tr, "data-phase")]
		if got := cellValue(t, tr, "max_us"); !ok || !near(got, w, 0.5) {
			t.Errorf("row %q: max %.1f µs, want %.1f (run.json)", attr(tr, "data-phase"), got, w)
		}
	}
	if ph.CPUs[1].Latency.Max <= ph.CPUs[0].Latency.Max {
		t.Fatalf("synthetic CPUs: CPU 3's max %.0f µs not above CPU 0's %.0f", ph.CPUs[1].Latency.Max, ph.CPUs[0].Latency.Max)
	}
	overlay := findAll(sec, func(n *html.Node) bool { return n.Data == "figure" && hasClass(n, "fig-cpus") })
	if len(overlay) != 1 || !strings.Contains(text(overlay[0]), "CPU 0") || !strings.Contains(text(overlay[0]), "CPU 3") {
		t.Fatalf("no overlay of the CPUs' histograms with each CPU in its legend")
	}
	heads := findAll(sec, func(n *html.Node) bool { return n.Data == "h3" && hasClass(n, "cpu") })
	if len(heads) != 2 || text(heads[0]) != "CPU 0" || text(heads[1]) != "CPU 3" {
		t.Fatalf("per-CPU headings: %d", len(heads))
	}
	for _, kind := range []string{"fig-time", "fig-hist"} {
		figs := findAll(sec, func(n *html.Node) bool {
			return n.Data == "figure" && hasClass(n, kind) && !hasClass(n, "fig-cpus") && len(findAll(n, tag("svg"))) == 1
		})
		if len(figs) != 2 {
			t.Errorf("%d %s figures drawn in the phase, want one per CPU", len(figs), kind)
		}
	}
	rt := byID(doc, "rt")
	if rt == nil || !strings.Contains(text(rt), "CPU affinitya thread pinned to each of CPUs 0,3a thread pinned to each of CPUs 0,3") {
		t.Errorf("real-time set-up: the affinity row does not say a thread was pinned to each CPU:\n%s", text(rt))
	}
	v := byID(doc, "verdict-cpus")
	if v == nil {
		t.Fatal("no verdict on the CPUs")
	}
	if s := text(v); !strings.Contains(s, "best for audio CPU 0 (") || !strings.Contains(s, "worst CPU 3 (") {
		t.Errorf("verdict on the CPUs: %q", s)
	}
}

// compare of two runs --cpus compares them CPU by CPU: a section per
// CPU beside the phase's, its table's max each run's figure for that
// CPU, and a ranking per CPU: the run whose CPU 3 stalled is the worst on
// CPU 3, while on CPU 0, quiet in both, neither run is ranked by CPU 3.
func TestComparePerCPU(t *testing.T) {
	cpus := func(stall bool) synth.Config {
		c := synth.Default()
		c.PhaseLength = 2 * time.Second
		quiet, other := synth.Idle(), synth.Idle()
		quiet.CPU, other.CPU = 0, 3
		if stall {
			other = synth.Hackbench()
			other.CPU, other.StallProb = 3, 2e-3
		}
		c.Phases = []synth.Phase{{Name: "idle", CPUs: []synth.Phase{quiet, other}}}
		return c
	}
	dirA, runA := writeRun(t, cpus(true))
	b := cpus(false)
	b.Seed = 2
	dirB, runB := writeRun(t, b)
	out := filepath.Join(t.TempDir(), "compare.html")
	rk, err := CompareGated([]Input{{Path: dirA, Label: "stalls"}, {Path: dirB, Label: "quiet"}}, out, "", DefaultWithinPct, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseFile(t, out)
	for k, name := range []string{"idle CPU 0", "idle CPU 3"} {
		runs, rows := sectionTable(t, doc, name)
		if strings.Join(runs, ",") != "stalls,quiet" {
			t.Fatalf("%s: columns %v", name, runs)
		}
		for i, want := range []float64{runA.Phases[0].CPUs[k].Latency.Max, runB.Phases[0].CPUs[k].Latency.Max} {
			if got := cellValue(t, rowOf(rows["max_us"], i), "max_us"); !near(got, want, 0.5) {
				t.Errorf("%s, %s: max %.1f µs, want %.1f (its run.json)", name, runs[i], got, want)
			}
		}
	}
	var on3 *RankedPhase
	for i := range rk.Phases {
		if rk.Phases[i].Phase == "idle CPU 3" {
			on3 = &rk.Phases[i]
		}
	}
	// One run each: the stalled CPU's max is far above, but no best or
	// worst is named from one run against one.
	if on3 == nil || on3.Worst != "" || on3.Best != "" || on3.Undecided != decide.OneRunEach {
		t.Fatalf("ranking on CPU 3: %+v; want it undecided", on3)
	}
	if d, ok := on3.Sources[1].against("max_us"); !ok || d.Ratio == nil || *d.Ratio > 0.1 || d.Word != string(decide.CannotTell) {
		t.Errorf("quiet's max against stalls' on CPU 3: %+v", d)
	}
}
