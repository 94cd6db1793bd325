package report

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"latencytest/report/synth"
	"latencytest/rundata"
)

// writeRun writes a synthetic run into a fresh temporary directory.
func writeRun(t testing.TB, c synth.Config) (string, *rundata.Run) {
	t.Helper()
	dir := t.TempDir()
	r, err := synth.Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	return dir, r
}

// renderDoc renders dir and parses index.html.
func renderDoc(t *testing.T, dir string) (string, *html.Node) {
	t.Helper()
	if err := Render(dir); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return parsePage(t, filepath.Join(dir, IndexFile))
}

// parsePage reads the HTML page at path and parses it.
func parsePage(t *testing.T, path string) (string, *html.Node) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), doc
}

// DOM helpers over golang.org/x/net/html.

func attr(n *html.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

// findAll returns the elements under n (n included) for which ok holds.
func findAll(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && ok(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func byID(doc *html.Node, id string) *html.Node {
	ns := findAll(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	if len(ns) != 1 {
		return nil
	}
	return ns[0]
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

// cellValue finds the cell of class key in a table row and parses it.
func cellValue(t *testing.T, tr *html.Node, key string) float64 {
	t.Helper()
	tds := findAll(tr, func(n *html.Node) bool { return n.Data == "td" && hasClass(n, key) })
	if len(tds) != 1 {
		t.Fatalf("row %q: %d cells of class %s", attr(tr, "data-phase"), len(tds), key)
	}
	s := strings.TrimSuffix(text(tds[0]), " ★")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("row %q cell %s: %q is not a number", attr(tr, "data-phase"), key, s)
	}
	return v
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestRenderStructure(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = 5 * time.Second
	c.Phases[1].StallProb = 5e-3 // some xruns for sure in 3750 periods
	c.Phases = append(c.Phases, synth.Phase{Name: "disk-write", Stressor: "disk-write", Skipped: "no writable temp dir"})
	dir, r := writeRun(t, c)
	// A soundcard driver also splits the latency at the pointer update.
	r.Phases[0].UpdateDelay = &rundata.LatencyStats{Min: 1, Avg: 3, P50: 3, P90: 4, P99: 8, P999: 12, P9999: 14, Max: 5000}
	r.Phases[0].AfterUpdate = &rundata.LatencyStats{Min: 0.5, Avg: 2, P50: 2, P90: 3, P99: 7, P999: 11, P9999: 13, Max: 21.5}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, doc := renderDoc(t, dir)
	if !strings.Contains(out, "p99 7.0, p99.9 11.0, p99.99 13.0, max 21.5 µs") {
		t.Error("the wakeup after the pointer update is not shown")
	}

	// The overview table has one row per phase, in order, and its figures
	// are run.json's.
	ov := byID(doc, "overview-table")
	if ov == nil {
		t.Fatal("no overview table")
	}
	rows := findAll(ov, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-phase") != "" })
	if len(rows) != len(r.Phases) {
		t.Fatalf("overview has %d rows, run.json %d phases", len(rows), len(r.Phases))
	}
	for i, p := range r.Phases {
		tr := rows[i]
		if got := attr(tr, "data-phase"); got != p.Name {
			t.Errorf("row %d is %q, want %q", i, got, p.Name)
		}
		if p.Skipped != "" {
			if !strings.Contains(text(tr), p.Skipped) {
				t.Errorf("skipped row %q does not say why: %q", p.Name, text(tr))
			}
			continue
		}
		checks := []struct {
			key       string
			want, tol float64
		}{
			{"periods", float64(p.Periods), 0},
			{"min_us", p.Latency.Min, 0.051},
			{"avg_us", p.Latency.Avg, 0.051},
			{"p50_us", p.Latency.P50, 0.051},
			{"p99_us", p.Latency.P99, 0.051},
			{"p999_us", p.Latency.P999, 0.051},
			{"p9999_us", p.Latency.P9999, 0.051},
			{"max_us", p.Latency.Max, 0.051},
			{"within_100us_pct", p.WithinUS100, 0.006},
			{"within_1ms_pct", p.WithinMS1, 0.006},
			{"cpu_loop_within_100us_pct", p.CPULoop.Within100USPct, 0.006},
			{"headroom_min_us", p.HeadroomMinUS, 0.051},
			{"xruns", float64(p.Xruns), 0},
			{"xrun_ms_total", p.XrunMSTotal, 0.051},
		}
		for _, ck := range checks {
			if got := cellValue(t, tr, ck.key); !near(got, ck.want, ck.tol) {
				t.Errorf("phase %s %s = %v, run.json has %v", p.Name, ck.key, got, ck.want)
			}
		}
	}
	// The synthetic hackbench phase has xruns, and the page says they are simulated.
	if r.Phases[1].Xruns == 0 {
		t.Fatal("fixture: the hackbench phase should have xruns")
	}
	if !strings.Contains(out, "xruns (simulated)") {
		t.Error("xrun marks are not labelled as simulated")
	}

	// Each phase that ran has its section with the three graphs and its
	// table; the skipped one says so instead.
	sections := findAll(doc, func(n *html.Node) bool { return n.Data == "section" && hasClass(n, "phase") })
	if len(sections) != len(r.Phases) {
		t.Fatalf("%d phase sections, want %d", len(sections), len(r.Phases))
	}
	for i, p := range r.Phases {
		s := sections[i]
		figs := map[string]int{}
		for _, f := range findAll(s, tag("figure")) {
			if len(findAll(f, tag("svg"))) == 1 {
				figs[attr(f, "class")]++
			}
		}
		if p.Skipped != "" {
			if len(figs) != 0 || !strings.Contains(text(s), "skipped") {
				t.Errorf("skipped phase %s: figures %v, text %q", p.Name, figs, text(s))
			}
			continue
		}
		for _, want := range []string{"fig-time", "fig-cpu", "fig-hist"} {
			if figs[want] != 1 {
				t.Errorf("phase %s: %d %s figures, want 1", p.Name, figs[want], want)
			}
		}
		tabs := findAll(s, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "stats") })
		if len(tabs) != 1 || cellValue(t, findAll(tabs[0], func(n *html.Node) bool { return attr(n, "data-phase") != "" })[0], "p99_us") != p.Latency.P99 {
			t.Errorf("phase %s: its statistics table is missing or wrong", p.Name)
		}
	}
	if !strings.Contains(out, `skipped: no writable temp dir`) {
		t.Error("no banner for the skipped phase")
	}
	if byID(doc, "fig-overview") == nil || len(findAll(byID(doc, "fig-overview"), tag("svg"))) != 1 {
		t.Error("no overlay histogram in the overview")
	}
	// The check findings, the real-time setup and the system are shown.
	for _, f := range r.Checks {
		if !strings.Contains(text(byID(doc, "checktable")), f.Name) {
			t.Errorf("check %q missing", f.Name)
		}
	}
	if !strings.Contains(text(byID(doc, "rt")), "SCHED_FIFO") || !strings.Contains(text(byID(doc, "system")), r.System.KernelRelease) {
		t.Error("real-time setup or system missing")
	}

	// stats.csv has a header and one record per phase with run.json's figures.
	f, err := os.Open(filepath.Join(dir, StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(r.Phases)+1 {
		t.Fatalf("stats.csv has %d records, want %d", len(recs), len(r.Phases)+1)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for i, p := range r.Phases {
		rec := recs[i+1]
		if rec[col["phase"]] != p.Name || rec[col["skipped"]] != p.Skipped {
			t.Errorf("stats.csv row %d: %v", i, rec)
		}
		if p.Skipped != "" {
			continue
		}
		if v, _ := strconv.ParseFloat(rec[col["p9999_us"]], 64); v != p.Latency.P9999 {
			t.Errorf("stats.csv %s p9999 = %v, want %v", p.Name, v, p.Latency.P9999)
		}
		if g := p.AfterUpdate; g != nil && rec[col["after_update_max_us"]] != "21.5" {
			t.Errorf("stats.csv %s after_update_max_us = %q", p.Name, rec[col["after_update_max_us"]])
		}
		if v, _ := strconv.Atoi(rec[col["xruns"]]); v != p.Xruns {
			t.Errorf("stats.csv %s xruns = %v, want %v", p.Name, v, p.Xruns)
		}
	}
}

func TestRenderEscapes(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	c.Hostname = `<script>alert("host")</script>`
	c.Device = `hw:0"><img src=x onerror=alert(1)>`
	c.Command = []string{"latencytest", "run", `-device=</td><script>alert('cmd')</script>`}
	c.Phases[1].Name = `<b>hack</b>"bench'`
	c.Phases[1].StressorStats = map[string]any{`<i>k</i>`: `<script>v</script>`}
	dir, _ := writeRun(t, c)
	// Strings the kernel hands over are just as untrusted.
	r, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.System.Cmdline = `quiet "><script>alert('cmdline')</script>`
	r.Checks = append(r.Checks, rundata.Finding{Name: "fs", Status: "WARN", Value: `<svg onload=alert(1)>`, Fix: `mount -o remount,noatime "/tmp"`})
	r.RTTasks = append(r.RTTasks, rundata.RTTask{TID: 7, PID: 7, Comm: `<img src=x>rt`, Policy: "SCHED_FIFO", Priority: 85, CPUs: "0-1", Preempts: true})
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, doc := renderDoc(t, dir)
	if n := findAll(doc, func(n *html.Node) bool {
		return n.Data == "script" || n.Data == "img" || n.Data == "b" || n.Data == "i"
	}); len(n) != 0 {
		t.Fatalf("user text became markup: %d script/img/b/i elements", len(n))
	}
	for _, bad := range []string{"<script", "<img", "<b>hack", "<svg onload"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q unescaped", bad)
		}
	}
	// ... and every string still reads as the text it was.
	page := text(doc)
	for _, want := range []string{c.Hostname, c.Device, c.Command[2], r.System.Cmdline, c.Phases[1].Name, `<i>k</i>=<script>v</script>`, `<svg onload=alert(1)>`, `<img src=x>rt`} {
		if !strings.Contains(page, want) {
			t.Errorf("page text lacks %q", want)
		}
	}
}

func TestRenderInterrupted(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	c.Interrupted = true
	dir, _ := writeRun(t, c)
	// A killed run may leave its last samples file cut mid-record and a
	// phase whose samples file never appeared.
	r, _ := rundata.ReadRun(dir)
	p := filepath.Join(dir, r.Phases[1].SamplesFile)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	r.Phases = append(r.Phases, rundata.Phase{Name: "lost", SamplesFile: "missing.samples", Periods: 10},
		rundata.Phase{Name: "escape", SamplesFile: "../" + filepath.Base(dir) + "/" + r.Phases[0].SamplesFile, Periods: 10})
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, doc := renderDoc(t, dir)
	banners := findAll(doc, func(n *html.Node) bool { return hasClass(n, "banner") && strings.Contains(text(n), "interrupted") })
	if len(banners) != 1 {
		t.Errorf("%d interrupted banners, want 1", len(banners))
	}
	if n := strings.Count(out, "Graphs unavailable"); n != 2 {
		t.Errorf("%d phases say their graphs are missing, want 2 (a missing file, a path leaving the directory)", n)
	}
	if got := len(findAll(doc, func(n *html.Node) bool { return hasClass(n, "fig-time") })); got != 2 {
		t.Errorf("%d latency graphs, want 2 (the truncated file still draws)", got)
	}
}

func TestRenderMissingRun(t *testing.T) {
	dir := t.TempDir()
	if err := Render(dir); err == nil {
		t.Fatal("Render of an empty directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); !os.IsNotExist(err) {
		t.Error("a failed Render left an index.html")
	}
}

// A run interrupted before its first phase, and a phase whose samples file
// is empty (killed before its first period), still render.
func TestRenderEmpty(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	dir, r := writeRun(t, c)
	if err := os.WriteFile(filepath.Join(dir, r.Phases[1].SamplesFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.Phases[1].Periods = 0
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, _ := renderDoc(t, dir)
	if !strings.Contains(out, "Graphs unavailable: the samples file holds no period") {
		t.Error("the empty phase does not say it has no samples")
	}

	r.Phases, r.Interrupted = nil, true
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	_, doc := renderDoc(t, dir)
	if byID(doc, "overview-table") == nil || len(findAll(doc, tag("section"))) != 0 {
		t.Error("a run without phases should render its overview and no phase section")
	}
}

// A duplex phase shows the wakeups against each side's due as two
// histograms, and the time apart and the poll wait under its table; a
// playback-only phase shows none of it.
func TestRenderDuplex(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = 2 * time.Second
	c.Phases[0].ApartUS = 300
	c.Phases[0].Poll = true
	dir, r := writeRun(t, c)
	dp := r.Phases[0]
	if dp.CaptureLatency == nil || dp.PlaybackLatency == nil || dp.CapturePlaybackApart == nil || dp.PollWait == nil {
		t.Fatalf("synthetic duplex phase lacks its figures: %+v", dp)
	}
	_, doc := renderDoc(t, dir)
	phase := func(i int) *html.Node { return byID(doc, "phase-"+strconv.Itoa(i)) }
	for i, duplex := range []bool{true, false} {
		sec := phase(i + 1)
		if sec == nil {
			t.Fatalf("no section for phase %d", i+1)
		}
		figs := findAll(sec, func(n *html.Node) bool { return n.Data == "figure" && hasClass(n, "fig-sides") })
		lines := findAll(sec, func(n *html.Node) bool { return n.Data == "p" && (hasClass(n, "sides") || hasClass(n, "poll")) })
		if !duplex {
			if len(figs)+len(lines) != 0 {
				t.Errorf("playback-only phase shows %d side figures and %d side lines", len(figs), len(lines))
			}
			continue
		}
		if len(figs) != 1 {
			t.Fatalf("duplex phase has %d side figures, want 1", len(figs))
		}
		svg := text(figs[0])
		for _, want := range []string{"after the playback side's due", "after the capture side's due"} {
			if !strings.Contains(svg, want) {
				t.Errorf("the side figure has no series %q", want)
			}
		}
		if len(lines) != 2 {
			t.Fatalf("duplex phase has %d lines under its table, want 2 (apart, poll)", len(lines))
		}
		a := dp.CapturePlaybackApart
		if got, want := text(lines[0]), "capture due − playback due: min "+fmtUS(a.Min); !strings.Contains(got, want) {
			t.Errorf("apart line %q lacks %q", got, want)
		}
		w := dp.PollWait
		if got, want := text(lines[1]), "max "+fmtUS(w.Max)+" µs"; !strings.Contains(got, want) {
			t.Errorf("poll line %q lacks %q", got, want)
		}
	}
}

// A loopback phase's line says what it heard, its strings escaped.
func TestRenderHeard(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	dir, _ := writeRun(t, c)
	r, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Phases[0].Sound = &rundata.Sound{ToneHz: 997.5, Judged: true, BufferFrames: 1024, RoundTripMS: 27.5, RoundTrips: 9, RoundTripsBeforeBreak: 4,
		CardDelay: &rundata.FrameStats{Min: 296, Median: 296, Max: 300}, Glitches: []rundata.Glitch{{AtMS: 1500, Period: 281, LengthMS: 50, With: rundata.GlitchXrun}}, XrunsHeard: 1, XrunsNotHeard: 2,
		RoundTripFollowed: &rundata.MSStats{Min: 27.5, Median: 27.6, Max: 31.25}, RoundTripsFollowed: 8, RoundTripPerSecond: rundata.PerSecond{27.5, math.NaN()}}
	r.Phases[0].CardReported = &rundata.ReportedDelay{PlaybackFrames: 40, CaptureFrames: 24}
	r.Phases[1].Sound = &rundata.Sound{Note: `<script>alert("note")</script>`, RoundTripsMissing: 3}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, doc := renderDoc(t, dir)
	lines := findAll(doc, func(n *html.Node) bool { return hasClass(n, "sound") })
	if len(lines) != 2 {
		t.Fatalf("%d lines of what was heard, want 2", len(lines))
	}
	want := []string{
		"Heard through the loopback: the 997.5 Hz sine broke once: at 1500.0 ms for 50.0 ms (period 281, an xrun); of the xruns 1 heard, 2 not; 0 breaks with no xrun or pointer jump; round trip 27.5 ms: the playback buffer's 1024 frames and a card delay of 296 frames (min 296, max 300; 9 repetitions read, 4 before the sound first broke, 0 missing); the drivers report 64 frames of it (playback 40, capture 24); over the whole phase, across its restarts, 27.6 ms (min 27.5, max 31.2; 8 repetitions).",
		`Heard through the loopback: the sine was not judged (<script>alert("note")</script>); round trip not found (3 repetitions looked in).`,
	}
	for i, l := range lines {
		if text(l) != want[i] {
			t.Errorf("line %d:\n%q\nwant\n%q", i, text(l), want[i])
		}
	}
	if strings.Contains(out, "<script>alert") {
		t.Error("the note became markup")
	}
	// The break is marked on the first phase's time figure, at the
	// bottom in its own colour; the second phase heard none.
	caps := findAll(doc, func(n *html.Node) bool {
		return n.Data == "figcaption" && strings.HasPrefix(text(n), "White: wakeup latency")
	})
	if len(caps) < 2 || !strings.Contains(text(caps[0]), "Violet marks") || strings.Contains(text(caps[1]), "Violet marks") {
		t.Errorf("time figures' captions: %d, want the first only to name the violet marks", len(caps))
	}
	if n := strings.Count(out, "fill:#C06CFF"); n != 1 {
		t.Errorf("%d marks in the glitches' colour, want 1", n)
	}
	// The overview's columns: the round trip and the breaks, "—" where
	// a phase did not judge them; none of the two without a loopback.
	cells := func(doc *html.Node, class string) []string {
		var got []string
		for _, n := range findAll(doc, func(n *html.Node) bool { return n.Data == "td" && hasClass(n, class) }) {
			got = append(got, text(n))
		}
		return got
	}
	// The round trip over the phase, min / median / max, followed
	// across its restarts, and a line of it per second on the time figure.
	for class, want := range map[string]string{"round_trip_min_ms": "27.5", "round_trip_ms": "27.6", "round_trip_max_ms": "31.2"} {
		if got := cells(doc, class); len(got) < 2 || got[0] != want || got[1] != "—" {
			t.Errorf("%s cells %q, want %s then —", class, got, want)
		}
	}
	if n := strings.Count(out, "stroke:#4DD0C0"); n != 1 || !strings.Contains(text(caps[0]), "Teal") || strings.Contains(text(caps[1]), "Teal") {
		t.Errorf("%d lines in the round trip's colour, want 1, named in the first figure's caption alone", n)
	}
	if got := cells(doc, "sound_breaks"); len(got) < 2 || got[0] != "1" || got[1] != "—" {
		t.Errorf("sound broke cells %q, want 1 then —", got)
	}
	r.Phases[0].Sound, r.Phases[1].Sound = nil, nil
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	if _, doc := renderDoc(t, dir); len(cells(doc, "round_trip_ms"))+len(cells(doc, "round_trip_max_ms"))+len(cells(doc, "sound_breaks")) != 0 {
		t.Error("a run without a loopback has the loopback's columns")
	}
}

// A duplex run's capture side is listed on its own when its shape was
// recorded; a run of one side, or an older file, lists none.
func TestCaptureSideText(t *testing.T) {
	r := &rundata.Run{Stream: "duplex", Format: "S16_LE", Channels: 4, CaptureFormat: "S24_3LE", CaptureChannels: 2, CaptureCard: &rundata.Card{Index: 1, ID: "USB"}}
	if got := captureSideText(r); got != "S24_3LE, 2 channels, card 1 [USB]" {
		t.Errorf("capture side %q", got)
	}
	var found bool
	for _, e := range configKV(r) {
		found = found || e.K == "capture side"
	}
	if !found {
		t.Error("configKV lists no capture side")
	}
	if got := captureSideText(&rundata.Run{Stream: "duplex", Channels: 2}); got != "" {
		t.Errorf("an older duplex run: %q", got)
	}
}

// TestRenderServer: a phase through PipeWire has a table of the server's
// late cycles by node, every name (a client's own choice) escaped.
func TestRenderServer(t *testing.T) {
	c := synth.Default()
	c.PhaseLength = time.Second
	dir, _ := writeRun(t, c)
	r, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	evil := `<script>alert("node")</script>`
	r.Phases[0].Server = &rundata.Server{Server: "pipewire", DetectedBy: `libjack <img src=x>`, Rate: 48000, QuantumFrames: 256, QuantumUS: 5333,
		Cycles: 1875, LateCycles: 12, ByNode: []rundata.ServerNode{
			{Node: evil, ID: 31, Why: "ran past its deadline", N: 11, MaxOverrunUS: 3100},
			{Node: "latencytest", ID: 40, Why: "woke late", N: 1, MaxOverrunUS: -1}}}
	r.Phases[1].Server = &rundata.Server{Server: "jackd", LateCycles: 2, Which: rundata.JackdWhich}
	if err := rundata.WriteRun(dir, r); err != nil {
		t.Fatal(err)
	}
	out, doc := renderDoc(t, dir)
	if n := findAll(doc, func(n *html.Node) bool { return n.Data == "script" || n.Data == "img" }); len(n) != 0 {
		t.Fatalf("a node's name became markup: %d script/img elements", len(n))
	}
	if strings.Contains(out, "<script>alert") {
		t.Error("output holds the name unescaped")
	}
	rows := findAll(doc, func(n *html.Node) bool { return n.Data == "table" && strings.Contains(attr(n, "class"), "server") })
	if len(rows) != 1 {
		t.Fatalf("%d server tables, want 1", len(rows))
	}
	page := text(doc)
	for _, want := range []string{"'" + evil + "'", "libjack <img src=x>", "quantum 256 frames at 48000 Hz", "12 late cycles of 1875", "3.1 ms", "not known",
		"which client: not known (jackd gives no account)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page text lacks %q", want)
		}
	}
}
