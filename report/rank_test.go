package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"latencytest/internal/badinput"
	"latencytest/internal/decide"
	"latencytest/report/synth"
	"latencytest/rundata"
)

// cyclictestLog is the terminal output of cyclictest run in a shell loop,
// once per max given, as it is pasted into a mail: the command line, then
// each run's dma-latency line and status line. wrap breaks the status
// line of the second run before its Max value, as a mailer does.
func cyclictestLog(maxes []int, wrap bool) string {
	var b strings.Builder
	b.WriteString("$ while true; do cyclictest -t1 -p 80 -n -i 10000 -l 10000 -q; done\n")
	for i, m := range maxes {
		b.WriteString("# /dev/cpu_dma_latency set to 0us\n")
		line := fmt.Sprintf("T: 0 (%5d) P:80 I:10000 C:  10000 Min:      3 Act:   75 Avg:   54 Max: %7d\n", 7000+i, m)
		if wrap && i == 1 {
			line = strings.Replace(line, "Max:", "Max:\n", 1)
		}
		b.WriteString(line)
	}
	b.WriteString("^C\n")
	return b.String()
}

// Four kernels' cyclictest logs, a dozen-run habit in small: ranked by the
// runs' maxima where they decide, every run shown, the JSON the same table.
// One bad run in five (6.12's) tops the worst max but does not decide 6.12
// worse than kernels whose every run is later than its other four.
func TestCompareRanksCyclictestLogs(t *testing.T) {
	dir := t.TempDir()
	kernels := []struct {
		name  string
		maxes []int
	}{
		{"6.1", []int{121, 148, 130, 125, 135}},
		{"6.12", []int{119, 17800, 140, 131, 128}},
		{"6.6-rt", []int{40, 45, 42, 44, 41}},
		{"5.10", []int{300, 250, 280, 270, 290}},
	}
	var ins []Input
	for i, k := range kernels {
		p := filepath.Join(dir, k.name+".txt")
		if err := os.WriteFile(p, []byte(cyclictestLog(k.maxes, i == 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, Input{Path: p, Label: k.name})
	}
	r, out := rankingOf(t, ins, dir)
	if len(r.Phases) != 1 || r.Phases[0].Best != "6.6-rt" || r.Phases[0].Worst != "" || r.Phases[0].Undecided == "" {
		t.Fatalf("ranking %+v, want 6.6-rt best and the worst undecided", r.Phases)
	}
	// Against the first (6.1): 6.6-rt better, 5.10 worse, 6.12 cannot tell.
	for i, want := range []string{"", "cannot tell", "better", "worse"} {
		d, ok := r.Phases[0].Sources[i].against("max_us")
		if ok != (i > 0) || d.Word != want || ok && (d.Against != "6.1" || len(d.Interval) != 2 || d.RunsA != 5) {
			t.Errorf("%s against 6.1: %+v, want %q", kernels[i].name, d, want)
		}
	}
	for i, s := range r.Phases[0].Sources {
		k := kernels[i]
		var want []float64
		worst := 0.0
		for _, m := range k.maxes {
			want = append(want, float64(m))
			worst = max(worst, float64(m))
		}
		if s.Label != k.name || !reflect.DeepEqual(s.MaxUS, want) || s.WorstMaxUS != worst || s.Runs != len(k.maxes) {
			t.Errorf("%s: %+v, want every run's max %v", k.name, s, want)
		}
		if s.P99US != nil || s.Xruns != nil {
			t.Errorf("%s: a log knows no p99 and no xruns: %+v", k.name, s)
		}
	}
	if s := r.Phases[0].Sources[1]; s.MedianMaxUS != 131 || s.WorstVsBest != 17800.0/45 {
		t.Errorf("6.12: median %v, worst vs best %v", s.MedianMaxUS, s.WorstVsBest)
	}
	_, doc := parsePage(t, out)
	txt := text(doc)
	if figs := findAll(doc, func(n *html.Node) bool { return n.Data == "figure" && attr(n, "class") == "fig-runmax" }); len(figs) != 1 || !strings.Contains(text(figs[0]), "6.6-rt") {
		t.Errorf("%d figures of the per-run maxima, want 1 naming every source", len(figs))
	}
	for _, want := range []string{"Best: 6.6-rt; worst: cannot tell", "119.0 · 17800.0 · 140.0", "395.56×", "cyclictest terminal log: 5 runs",
		"6.12 / 6.1", "cannot tell", "worse"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// A latencytest run and a cyclictest log in the same phase rank side by
// side, the run with its p99 and xruns; a log whose status line cannot be
// read is bad input naming the file and the line, and nothing is written.
func TestCompareRunBesideLog(t *testing.T) {
	run, _ := writeRun(t, synth.Default())
	dir := t.TempDir()
	log := filepath.Join(dir, "k.txt")
	if err := os.WriteFile(log, []byte(cyclictestLog([]int{90, 95}, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := rankingOf(t, []Input{{Path: run, Label: "lt"}, {Path: log, Label: "ct", Phase: "idle"}}, dir)
	var idle *RankedPhase
	for i := range r.Phases {
		if r.Phases[i].Phase == "idle" {
			idle = &r.Phases[i]
		}
	}
	if idle == nil || len(idle.Sources) != 2 || idle.Sources[0].P99US == nil || idle.Sources[0].Xruns == nil || idle.Sources[0].Runs != 1 || idle.Sources[1].Runs != 2 {
		t.Fatalf("idle: %+v", idle)
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("T: 0 ( 7024) P:80 I:10000 C:  10000 Min:      3 Act:   75 Avg:   54 Max:     121\nT: 1 (oops) P:80\n"), 0o644)
	out := filepath.Join(dir, "bad.html")
	err := CompareTo([]Input{{Path: bad}}, out, filepath.Join(dir, "bad.json"))
	if !badinput.Is(err) || !strings.Contains(err.Error(), "bad.txt") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad log: %v, want bad input naming the file and line 2", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a page was written for a bad input")
	}
}

// --fail-if-worse judges each later source against the first, per phase,
// by the interval drawn from their runs: 1 when one is decided worse by
// more than PCT, 125 when the runs cannot tell, 0 when every one is
// decided not worse by more than PCT.
func TestFailIfWorse(t *testing.T) {
	scaled := func(xs []float64, f float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x * f
		}
		return out
	}
	tight := []float64{40, 40.4, 39.8, 40.2, 40.1, 39.9, 40.3, 39.7}
	noisy := []float64{40, 80, 30, 55, 120, 45, 60, 35}
	phase := func(name string, a, b []float64) RankedPhase {
		ph := RankedPhase{Phase: name, By: "p99.9", Sources: []RankedSource{
			{Label: "old", Runs: len(a), RunFigures: map[string][]float64{"p999_us": a}},
			{Label: "new", Runs: len(b), RunFigures: map[string][]float64{"p999_us": b}},
		}}
		decideAgainstFirst(&ph, 10)
		return ph
	}
	same, unsure, worse := phase("idle", tight, scaled(tight, 1.01)), phase("disk", noisy, scaled(noisy, 1.1)), phase("hackbench", tight, scaled(tight, 1.5))
	for _, c := range []struct {
		phases []RankedPhase
		code   int
		line   string
	}{
		{[]RankedPhase{same}, 0, ""},
		{[]RankedPhase{same, unsure}, ExitCannotTell, "disk: new's p99.9 against old's: cannot tell whether worse by more than 10 %: 1.10×"},
		{[]RankedPhase{same, unsure, worse}, ExitWorse, "hackbench: new's p99.9 against old's: worse by more than 10 %: 1.50× [1.49, 1.51] over 8 runs against 8"},
	} {
		code, lines := Ranking{Phases: c.phases}.FailIfWorse(10)
		if code != c.code || c.line != "" && !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, c.line) }) ||
			c.line == "" && lines != nil {
			t.Errorf("%d phases: exit %d %q, want %d with a line %q", len(c.phases), code, lines, c.code, c.line)
		}
	}
	// One run each: the spread is unknown, so 125, and the line says how
	// many to give.
	one := phase("idle", []float64{40}, []float64{80})
	if code, lines := (Ranking{Phases: []RankedPhase{one}}).FailIfWorse(10); code != ExitCannotTell || len(lines) != 1 ||
		!strings.Contains(lines[0], "one run each cannot tell") || !strings.Contains(lines[0], "run --repeat 5") {
		t.Errorf("one run each: exit %d %q", code, lines)
	}
}

// Sources measured otherwise are said not to be like with like, each
// condition once with every source's value; alike, nothing is said.
func TestRankingDiffers(t *testing.T) {
	run := func(label, driver string, frames, load int) *compared {
		r := &rundata.Run{Driver: driver, PeriodFrames: frames, Periods: 2, Rate: 48000, CPULoad: load, Tool: "v1",
			RT: rundata.RTSetup{Obtained: rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80}}}
		return &compared{Input: Input{Label: label}, run: r}
	}
	if d := differs([]*compared{run("a", "alsa", 64, 80), run("b", "alsa", 64, 80)}); d != nil {
		t.Errorf("alike: %q", d)
	}
	d := differs([]*compared{run("a", "alsa", 64, 80), run("b", "timer", 128, 80), {Input: Input{Label: "ct"}}})
	want := []string{
		"driver differs: alsa (a), timer (b)",
		"buffer differs: 64×2 at 48000 Hz (a), 128×2 at 48000 Hz (b)",
		"cyclictest (ct) measures a timer's wakeup, latencytest (a) the wakeup after a driver's due instant (the card's interrupt): alike only with --driver timer",
	}
	if !slices.Equal(d, want) {
		t.Errorf("differs\n%q\nwant\n%q", d, want)
	}
}

// Each condition of measurement besides the driver and the buffer is said,
// alone, with every source's value, when only it differs: the DSP load,
// the priority the kernel granted, the measuring threads (run --cpus) and
// the tool's version.
func TestRankingDiffersEachCondition(t *testing.T) {
	run := func(label string, change func(*rundata.Run)) *compared {
		r := &rundata.Run{Driver: "alsa", PeriodFrames: 64, Periods: 2, Rate: 48000, CPULoad: 80, Tool: "v1",
			RT: rundata.RTSetup{Obtained: rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80}}}
		if change != nil {
			change(r)
		}
		return &compared{Input: Input{Label: label}, run: r}
	}
	for _, tc := range []struct {
		change func(*rundata.Run)
		want   string
	}{
		{func(r *rundata.Run) { r.CPULoad = 20 }, "DSP load differs: 80 % (a), 20 % (b)"},
		{func(r *rundata.Run) { r.RT.Obtained = rundata.RTParams{Policy: "SCHED_OTHER"} }, "priority obtained differs: SCHED_FIFO 80 (a), SCHED_OTHER 0 (b)"},
		{func(r *rundata.Run) { r.RT.Obtained.Priority = 50 }, "priority obtained differs: SCHED_FIFO 80 (a), SCHED_FIFO 50 (b)"},
		{func(r *rundata.Run) { r.CPUs = []int{0, 1, 2, 3} }, "thread count differs: 1 (a), 4 (b)"},
		{func(r *rundata.Run) { r.Tool = "v2" }, "tool version differs: v1 (a), v2 (b)"},
	} {
		d := differs([]*compared{run("a", nil), run("b", tc.change)})
		if !slices.Equal(d, []string{tc.want}) {
			t.Errorf("differs %q, want %q", d, tc.want)
		}
	}
	// One CPU asked (run --cpus 2) is one thread, as without --cpus.
	if d := differs([]*compared{run("a", nil), run("b", func(r *rundata.Run) { r.CPUs = []int{2} })}); d != nil {
		t.Errorf("one thread each: %q", d)
	}
}

// tailHist is 10000 wakeups: 9989 at 10 µs, 10 at p999 µs (the p99.9),
// one at maxUS.
func tailHist(p999, maxUS float64) *rundata.Histogram {
	h := rundata.NewHistogram(rundata.DefaultHistUS)
	for k := range 10000 {
		switch {
		case k < 9989:
			h.Add(10_000)
		case k < 9999:
			h.Add(int64(p999 * 1000))
		default:
			h.Add(int64(maxUS * 1000))
		}
	}
	return h
}

// tailSource is a source of runs in phase idle, each a tailHist, pooled
// as a repeated run's are, its phase having lost lost periods.
func tailSource(label string, p999, maxes []float64, lost int64) *compared {
	c := &compared{Input: Input{Label: label}, run: &rundata.Run{Driver: "alsa"}}
	var runs []*phaseData
	for i := range p999 {
		h := tailHist(p999[i], maxes[i])
		p := &phaseData{hist: h}
		p.Name = "idle"
		rundata.FillPhase(&p.Phase, h)
		runs = append(runs, p)
	}
	pl := pool(runs)
	pl.Lost = lost
	c.phases = []*phaseData{pl}
	return c
}

// Runs with histograms rank by p99.9, decided from each source's runs,
// each run's beside the pooled; where the runs' maxima decide otherwise
// the ranking says so. A source whose wakeups top the max is not the
// worst when its p99.9 is decided the best.
func TestRankByP999(t *testing.T) {
	cs := []*compared{
		tailSource("calm", []float64{40, 44, 42, 41, 43}, []float64{900, 800, 950, 870, 910}, 0),
		tailSource("busy", []float64{300, 280, 290, 310, 295}, []float64{500, 450, 470, 480, 460}, 0),
	}
	r := rank(cs, 10)
	ph := r.Phases[0]
	if ph.By != "p99.9" || ph.Best != "calm" || ph.Worst != "busy" || ph.BestMax != "busy" || ph.WorstMax != "calm" || ph.Undecided != "" {
		t.Fatalf("ranked %+v", ph)
	}
	// Pooled, the p99.9s are the lowest run's: 40 and 280 µs.
	if s := ph.Sources[1]; s.VsBest != 280.0/40 || s.WorstVsBest != 1 || ph.Sources[0].WorstVsBest != 950.0/500 || !slices.Equal(s.RunP999US, []float64{300, 280, 290, 310, 295}) {
		t.Errorf("busy: %+v", s)
	}
	if d, ok := ph.Sources[1].against("p999_us"); !ok || d.Word != "worse" || *d.Ratio < 6 || d.Interval[0] < 6 {
		t.Errorf("busy's p99.9 against calm's: %+v", d)
	}
	var b strings.Builder
	WriteRanking(&b, r)
	for _, want := range []string{"by the runs' maxima: best busy, worst calm", "against calm (B/A, 95 % interval over the runs; no difference: within ±10 %):",
		"busy  p99.9         worse: 7.02× [6.59, 7.50]"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("terminal table lacks %q:\n%s", want, b.String())
		}
	}
	if v := rankVerdict(ph); !strings.Contains(v, "by p99.9") || !strings.Contains(v, "By the runs' maxima: best busy, worst calm") {
		t.Errorf("verdict %q", v)
	}
	// The page draws each run's p99.9 and max per source, with busy's
	// interval against calm beside it.
	vs, err := rankViews(r)
	if err != nil {
		t.Fatal(err)
	}
	if figs := vs[0].Figs; len(figs) != 2 || !strings.Contains(figs[0].Caption, "p99.9") || !strings.Contains(figs[1].Caption, "max") {
		t.Errorf("figures %+v, want p99.9's and max's", figs)
	}
	if w := whisker(ph.Sources[0], ph.Sources[1], "p999_us"); w[0] < 6*42 || w[1] > 8*42 {
		t.Errorf("busy's whisker %v, want calm's median 42 µs times about 7", w)
	}
	// PortAudio beside ALSA: its jitter is not a latency from the card.
	cs[1].run.Driver = "portaudio"
	if ph := rank(cs, 10).Phases[0]; ph.Best != "" || ph.Worst != "" || ph.NotRanked == "" {
		t.Errorf("portaudio beside alsa ranked: %+v", ph)
	}
}

// One run each decides nothing: no best, no worst, no ★, and the ranking
// says how many runs to give; the figures are still shown.
func TestRankOneRunEach(t *testing.T) {
	cs := []*compared{tailSource("calm", []float64{40}, []float64{120}, 0), tailSource("busy", []float64{300}, []float64{500}, 0)}
	r := rank(cs, 10)
	ph := r.Phases[0]
	if ph.Best != "" || ph.Worst != "" || ph.Undecided != decide.OneRunEach || ph.Sources[1].VsBest != 300.0/40 {
		t.Fatalf("one run each ranked: %+v", ph)
	}
	vs, err := rankViews(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range vs[0].Rows {
		for _, c := range row.Cells {
			if c.Best {
				t.Errorf("%s ★ in %s from one run each", row.Label, c.Key)
			}
		}
	}
	if len(vs[0].Decisions) != 1 || vs[0].Decisions[0].Note != decide.OneRunEach || !strings.Contains(vs[0].Verdict, "run --repeat 5") {
		t.Errorf("page: %+v", vs[0])
	}
	var b strings.Builder
	WriteRanking(&b, r)
	if !strings.Contains(b.String(), "busy  "+decide.OneRunEach+" (p99 1.00×, p99.9 7.50×, max 4.17×") {
		t.Errorf("terminal:\n%s", b.String())
	}
}

// A source that lost periods in a phase (the engine's ring was full: one
// of them may have been the late one) says so beside its figures, "n lost",
// and is never ranked better on a figure they could have changed: not
// named best or worst, not ★ in any column of the ranking or of the
// phase's table, and not passed by --fail-if-worse.
func TestRankLostPeriods(t *testing.T) {
	src := func(label string, p999, maxUS float64, lost int64) *compared {
		return tailSource(label, []float64{p999, p999 + 1, p999 + 2, p999 + 3, p999 + 4}, []float64{maxUS, maxUS + 2, maxUS + 4, maxUS + 6, maxUS + 8}, lost)
	}
	cs := []*compared{src("calm", 40, 120, 0), src("lossy", 30, 100, 5), src("busy", 300, 500, 0)}
	r := rank(cs, 10)
	ph := r.Phases[0]
	if ph.Best != "calm" || ph.Worst != "busy" || ph.BestMax != "" || ph.WorstMax != "" {
		t.Errorf("ranked best %q worst %q (by max %q, %q), want calm and busy", ph.Best, ph.Worst, ph.BestMax, ph.WorstMax)
	}
	for i, want := range []int64{0, 5, 0} {
		if s := ph.Sources[i]; s.Lost == nil || *s.Lost != want {
			t.Errorf("%s: lost %v, want %d", s.Label, s.Lost, want)
		}
	}
	wantVerdict := "Best: calm; worst: busy (by p99.9, decided from each source's runs). Not ranked: lossy, 5 lost (periods measured but not handed over: one of them may have been the late one)."
	if v := rankVerdict(ph); v != wantVerdict {
		t.Errorf("verdict\n%q\nwant\n%q", v, wantVerdict)
	}
	// The terminal: the lost count beside the figures, the mark says why.
	var b strings.Builder
	WriteRanking(&b, r)
	var line []string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "lossy" && line == nil {
			line = f
		}
	}
	if want := []string{"5", "not", "ranked:", "5", "lost"}; len(line) < 5 || !slices.Equal(line[len(line)-5:], want) {
		t.Errorf("terminal line of lossy %q, want it to end %q\n%s", line, want, b.String())
	}
	if !strings.Contains(b.String(), "  not ranked: lossy, 5 lost (periods measured but not handed over: one of them may have been the late one)\n") {
		t.Errorf("terminal has no line leaving lossy out:\n%s", b.String())
	}
	// The page: no ★ for lossy, its lost count in its row.
	vs, err := rankViews(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range vs[0].Rows[1].Cells {
		if c.Best {
			t.Errorf("lossy marked best in %s", c.Key)
		}
		if c.Key == "lost" && c.Text != "5" {
			t.Errorf("lossy's lost cell %q, want 5", c.Text)
		}
	}
	if c := vs[0].Rows[0].Cells; !c[3].Best || c[3].Key != "p999_us" {
		t.Errorf("calm's p99.9 not marked best: %+v", c[3])
	}
	js, err := marshalRanking(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Ranking
	if err := json.Unmarshal(js, &back); err != nil || back.Phases[0].Sources[1].Lost == nil || *back.Phases[0].Sources[1].Lost != 5 {
		t.Errorf("JSON lost of lossy: %s", js)
	}
	// The phase's table: a lost column, and no ★ for lossy on a figure
	// of its samples.
	ps := []*phaseData{cs[0].phases[0], cs[1].phases[0], cs[2].phases[0]}
	rows := [][]cell{row(ps[0]), row(ps[1]), row(ps[2])}
	markDecided(ps, rows, 10)
	for i, m := range metrics {
		switch {
		case m.key == "lost" && (rows[1][i].Text != "5" || rows[0][i].Text != "0"):
			t.Errorf("lost cells %q, %q, want 0, 5", rows[0][i].Text, rows[1][i].Text)
		case m.key != "lost" && rows[1][i].Best:
			t.Errorf("lossy marked best in the table's %s", m.key)
		case m.key == "max_us" && !rows[0][i].Best:
			t.Errorf("calm's max not marked best")
		}
	}
	// --fail-if-worse: a figure lost periods could have hidden is not
	// passed as within the reference's: the runs cannot tell.
	want := "idle: lossy's p99.9 against calm's: cannot tell: lossy lost 5 periods, its figures may be understated: better: 0.76× [0.70, 0.82]"
	if code, got := rank(cs[:2], 10).FailIfWorse(10); code != ExitCannotTell || len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("--fail-if-worse exit %d %q, want 125 and %q", code, got, want)
	}
	// Against a lossy first source, nothing is failed: its figures may
	// be understated.
	if code, got := rank([]*compared{cs[1], cs[2]}, 10).FailIfWorse(10); code != ExitCannotTell || len(got) != 1 || !strings.Contains(got[0], "cannot tell: lossy lost 5 periods") {
		t.Errorf("--fail-if-worse against lossy: exit %d %q, want 125", code, got)
	}
	// Two sources, one of them lossy: nothing is ranked.
	ph = rank(cs[:2], 10).Phases[0]
	if ph.Best != "" || ph.Worst != "" || rankVerdict(ph) != wantVerdict[strings.Index(wantVerdict, "Not ranked"):] {
		t.Errorf("calm and lossy ranked %q, %q: %q", ph.Best, ph.Worst, rankVerdict(ph))
	}
}

// A mail comparing two kernels under headings that name no version
// ("Before the patch:", "After the patch:") is two sources, labelled by
// their headings, not one pooled; with a label given, the label comes
// first.
func TestCompareSplitsLogByHeading(t *testing.T) {
	mail := filepath.Join("..", "cyclictest", "testdata", "cyclictest-log", "mail-before-after.txt")
	dir := t.TempDir()
	for _, c := range []struct {
		label  string
		labels []string
	}{
		{"", []string{"Before the patch", "After the patch"}},
		{"box", []string{"box: Before the patch", "box: After the patch"}},
	} {
		r, out := rankingOf(t, []Input{{Path: mail, Label: c.label}}, dir)
		if len(r.Phases) != 1 || len(r.Phases[0].Sources) != 2 {
			t.Fatalf("label %q: %+v, want one phase of two sources", c.label, r.Phases)
		}
		var got []string
		for _, s := range r.Phases[0].Sources {
			got = append(got, s.Label)
		}
		ph := r.Phases[0]
		// Two runs each give no 95 % interval: two sources, and no best
		// (internal/decide), however far apart their maxima.
		if !reflect.DeepEqual(got, c.labels) || ph.Sources[0].Runs != 2 || ph.Sources[1].Runs != 2 || ph.Best != "" || ph.Undecided == "" {
			t.Errorf("label %q: sources %q, %+v, want %q, 2 runs each, no best (cannot tell)", c.label, got, ph, c.labels)
		}
		if ws := []float64{312, 405}; !reflect.DeepEqual(ph.Sources[0].MaxUS, ws) {
			t.Errorf("before: runs' max %v, want %v", ph.Sources[0].MaxUS, ws)
		}
		_, doc := parsePage(t, out)
		if txt := text(doc); !strings.Contains(txt, `the runs under "After the patch", from line 21`) {
			t.Errorf("label %q: the page does not say where the second source's runs come from:\n%s", c.label, txt)
		}
	}
}

// rankingOf compares ins into dir (compare.html and compare.json) and
// reads the JSON ranking back; it returns it and the page's path.
func rankingOf(t *testing.T, ins []Input, dir string) (Ranking, string) {
	t.Helper()
	out, js := filepath.Join(dir, "compare.html"), filepath.Join(dir, "compare.json")
	if err := CompareTo(ins, out, js); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var r Ranking
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v\n%s", js, err, b)
	}
	return r, out
}
