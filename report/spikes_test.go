package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"latencytest/report/synth"
	"latencytest/rundata"
)

func testSpikes() []rundata.Spike {
	return []rundata.Spike{
		{Period: 10, CPU: 1, DueNS: 10e6, LatencyNS: 6e6, Causes: []rundata.Cause{{Kind: rundata.CauseThread, Name: "kworker/1:2", Policy: "SCHED_OTHER", NS: 4e6}, {Kind: rundata.CauseIRQ, Name: "IRQ 24 ahci", NS: 2e6}},
			Strip: []rundata.Slice{{Kind: rundata.CauseIRQ, Name: "IRQ 24 ahci", NS: 2e6}, {Kind: rundata.CauseThread, Name: "kworker/1:2", StartNS: 2e6, NS: 4e6}}},
		{Period: 20, CPU: 1, DueNS: 20e6, LatencyNS: 4e6, Causes: []rundata.Cause{{Kind: rundata.CauseSoftIRQ, Name: "NET_RX", NS: 1e6}}, UnexplainedNS: 3e6},
	}
}

func TestCulpritRows(t *testing.T) {
	got := culpritRows(testSpikes())
	want := []culpritRow{
		{Kind: "thread", Label: "kworker/1:2 (SCHED_OTHER)", Share: "40 %", MS: "4.00"},
		{Kind: "", Label: "unexplained (no trace event accounts for it)", Share: "30 %", MS: "3.00"},
		{Kind: "irq", Label: "IRQ 24 ahci", Share: "20 %", MS: "2.00"},
		{Kind: "softirq", Label: "NET_RX softirq", Share: "10 %", MS: "1.00"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("culpritRows\n %+v\nwant %+v", got, want)
	}
}

func TestSpikeFigure(t *testing.T) {
	svg, err := spikeFigure(testSpikes(), 8)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, want := range []string{"<svg", "period 10, CPU 1", "period 20, CPU 1", "unexplained", "held the CPU"} {
		if !strings.Contains(s, want) {
			t.Errorf("figure lacks %q", want)
		}
	}
	if svg, _ := spikeFigure(nil, 8); svg != "" {
		t.Error("a figure without spikes")
	}
}

// A traced run's page says, per phase, what made it late: the culprits
// ranked and the worst spikes' timeline; a phase without spikes says so,
// and names from the system stay text.
func TestRenderSpikes(t *testing.T) {
	c := synth.Default()
	dir, _ := writeRun(t, c)
	r, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Trace = &rundata.Trace{Enabled: true, AboveNS: 667e3}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	ss := testSpikes()
	ss[0].Causes[0].Name = `<img src=x>kworker`
	ss[1].EventsLost = true
	if err := rundata.WriteSpikes(dir, ss); err != nil {
		t.Fatal(err)
	}
	out, doc := renderDoc(t, dir)
	if strings.Contains(out, "<img src=x>") {
		t.Error("a thread's name became markup")
	}
	first := byID(doc, "phase-1")
	txt := text(first)
	for _, want := range []string{"What made it late", "<img src=x>kworker (SCHED_OTHER)", "40 %", "NET_RX softirq", "Across 2 spikes", "In 1 of them the kernel dropped trace events"} {
		if !strings.Contains(txt, want) {
			t.Errorf("phase 1 lacks %q", want)
		}
	}
	if figs := findAll(first, func(n *html.Node) bool { return n.Data == "figure" && strings.Contains(attr(n, "class"), "fig-spikes") }); len(figs) != 1 {
		t.Errorf("%d spike timelines in phase 1, want 1", len(figs))
	}
	if len(r.Phases) > 1 && !strings.Contains(text(byID(doc, "phase-2")), "No spike in this phase") {
		t.Error("phase 2 does not say it had no spike")
	}
}

// compare puts the traced runs' culprit tables side by side, a cause that
// one run lacks shown as "—".
func TestCompareCulprits(t *testing.T) {
	mk := func(label string, ss []rundata.Spike) *compared {
		return &compared{Input: Input{Label: label}, run: &rundata.Run{Trace: &rundata.Trace{Enabled: true}},
			phases: []*phaseData{{Phase: rundata.Phase{Name: "hackbench"}}}, spikes: map[int][]rundata.Spike{0: ss}}
	}
	other := []rundata.Spike{{LatencyNS: 2e6, Causes: []rundata.Cause{{Kind: rundata.CauseIRQ, Name: "IRQ 24 ahci", NS: 2e6}}}}
	untraced := &compared{Input: Input{Label: "c"}, run: &rundata.Run{}, phases: []*phaseData{{Phase: rundata.Phase{Name: "hackbench"}}}}
	cc := compareCulprits([]*compared{mk("a", testSpikes()), mk("b", other), untraced}, "hackbench")
	if cc == nil || !reflect.DeepEqual(cc.Runs, []string{"a", "b"}) {
		t.Fatalf("runs %+v", cc)
	}
	got := map[string][]string{}
	for _, r := range cc.Rows {
		got[r.Label] = r.Shares
	}
	if !reflect.DeepEqual(got["IRQ 24 ahci"], []string{"20 %", "100 %"}) || !reflect.DeepEqual(got["kworker/1:2 (SCHED_OTHER)"], []string{"40 %", "—"}) {
		t.Errorf("rows %+v", got)
	}
	if compareCulprits([]*compared{untraced}, "hackbench") != nil {
		t.Error("a table without a traced run")
	}
}

// A stressor's figures read as named figures with units; the per-round
// list is kept for the page's on-demand list.
func TestStressorSummary(t *testing.T) {
	hack := map[string]any{"unit": "rounds", "seconds": 10.0, "rounds": 12.0, "rounds_per_s": 1.2, "groups": 6.0, "mode": "process",
		"round_time_s": []any{0.808, 0.822, 0.868}}
	if got, want := stressorSummary(hack), "1.2 rounds/s (12 rounds in 10.0 s), Time: mean 0.833 s over 3 rounds (0.808–0.868), groups=6, mode=process"; got != want {
		t.Errorf("hackbench\n = %q\nwant %q", got, want)
	}
	if got := stressorSeries(hack); !reflect.DeepEqual(got, []string{"round_time_s: 0.808 0.822 0.868"}) {
		t.Errorf("series %q", got)
	}
	disk := map[string]any{"unit": "MB", "seconds": 20.0, "mb": 824.0, "mb_per_s": 41.2, "size_bytes": 1073741824.0, "dir": "/tmp"}
	if got, want := stressorSummary(disk), "41.2 MB/s (824 MB in 20.0 s), size 1024 MiB, dir=/tmp"; got != want {
		t.Errorf("disk\n = %q\nwant %q", got, want)
	}
}

// A phase that was RT throttled says so, with its count and time, and
// names the cause in its culprit table as the budget, not as latency.
func TestRenderThrottled(t *testing.T) {
	c := synth.Default()
	dir, _ := writeRun(t, c)
	r, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Trace = &rundata.Trace{Enabled: true, AboveNS: 667e3}
	r.Phases[0].RTThrottled, r.Phases[0].RTThrottledNS = 3, 1125e6
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	ss := []rundata.Spike{{Phase: 0, Period: 10, LatencyNS: 380e6, Causes: []rundata.Cause{{Kind: rundata.CauseThrottled, Name: "RT throttling", NS: 375e6}}}}
	if err := rundata.WriteSpikes(dir, ss); err != nil {
		t.Fatal(err)
	}
	_, doc := renderDoc(t, dir)
	txt := text(byID(doc, "phase-1"))
	for _, want := range []string{"RT throttled: 3 spikes, 1125 ms", "sched_rt_runtime_us", "RT throttling: the real-time budget"} {
		if !strings.Contains(txt, want) {
			t.Errorf("phase 1 lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(text(byID(doc, "phase-2")), "RT throttled") {
		t.Error("phase 2 says RT throttled")
	}
}

// A glitch heard beside a spike, lined up from synthetic samples: the
// capture's periods of 64 frames at 48 kHz, one glitch 2.0 ms into period
// 150's capture, inside the window of period 149's spike, whose culprit
// (named with markup, as any thread can name itself) spikes.json marks as
// heard and the report lists beside the glitch, escaped; another glitch,
// far from any spike, is listed with no culprit.
func TestRenderHeardCulprit(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	dir, r := writeRun(t, c)
	const periodNS, base = 1_333_333, int64(7e9)
	var m rundata.CaptureMap
	for i := int64(0); i < 700; i++ {
		s := rundata.Sample{Index: i, Due: base + (i+1)*periodNS}
		s.CaptureDue, s.PlaybackDue = s.Due, s.Due
		m.Add(&s)
	}
	snd := &rundata.Sound{ToneHz: 997.5, Judged: true, Rate: 48000, Glitches: []rundata.Glitch{
		{AtMS: 150 * 64 / 48.0, LengthMS: 1.5}, // period 150's first frame
		{AtMS: 600 * 64 / 48.0, LengthMS: 0.5},
	}}
	m.LineUp(snd, 64, 48000)
	evil := `<img src=x onerror=alert(1)>`
	culprit := rundata.Cause{Kind: rundata.CauseThread, Name: evil, PID: 31, Policy: "SCHED_FIFO 90", NS: 3_000_000}
	ss := []rundata.Spike{
		{Phase: 0, Period: 149, DueNS: base + 150*periodNS - 500_000, LatencyNS: 3_500_000, Causes: []rundata.Cause{culprit}, UnexplainedNS: 500_000},
		{Phase: 0, Period: 400, DueNS: base + 401*periodNS, LatencyNS: 900_000, Causes: []rundata.Cause{{Kind: rundata.CauseIdle, Name: "idle", NS: 900_000}}},
	}
	rundata.LineUpTrace(snd, ss, rundata.SpikesOf{Phase: 0, CPU: rundata.AnyCPU, Traced: true})
	if err := rundata.WriteSpikes(dir, ss); err != nil {
		t.Fatal(err)
	}
	r.Phases[0].Sound = snd
	r.Trace = &rundata.Trace{Enabled: true, AboveNS: 500_000}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := rundata.ReadSpikes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h := back[0].Heard; h == nil || h.Culprit != culprit || len(h.GlitchesAtMS) != 1 || h.GlitchesAtMS[0] != 200 {
		t.Errorf("spikes.json: spike of period 149 heard %+v, want the culprit and the glitch at 200 ms", h)
	}
	if back[1].Heard != nil {
		t.Errorf("spikes.json: spike of period 400 heard %+v, no glitch in its window", back[1].Heard)
	}
	out, doc := renderDoc(t, dir)
	lines := findAll(doc, func(n *html.Node) bool { return hasClass(n, "sound") })
	if len(lines) == 0 {
		t.Fatal("no line of what was heard")
	}
	for _, want := range []string{
		"at 200.0 ms for 1.5 ms (period 150, no xrun; in the trace: " + evil + " (SCHED_FIFO 90) in the spike of period 149)",
		"at 800.0 ms for 0.5 ms (period 600, no xrun; in the trace: no spike at that time)",
	} {
		if !strings.Contains(text(lines[0]), want) {
			t.Errorf("what was heard\n%q\nwithout %q", text(lines[0]), want)
		}
	}
	if strings.Contains(out, "<img") {
		t.Error("a thread's name became markup")
	}
	if !strings.Contains(out, "1 of them were heard") {
		t.Error("the spikes' note does not say one was heard")
	}
}
