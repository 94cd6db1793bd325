package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"latencytest/cyclictest"
	"latencytest/internal/badinput"
	"latencytest/report/synth"
)

func readFixture(t *testing.T, name string) *cyclictest.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cyclictest", name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cyclictest.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// The fixtures are real cyclictest runs (rt-tests 2.x) that wrote both a
// histogram file and a JSON file; the two parsers must agree on them.
func TestCyclictestHistAndJSONAgree(t *testing.T) {
	for _, run := range []struct {
		name    string
		threads int
		cycles  uint64 // -l loops × threads
	}{{"idle", 1, 2000}, {"hackbench", 2, 4000}} {
		h, j := readFixture(t, run.name+".hist"), readFixture(t, run.name+".json")
		if h.Threads != run.threads || j.Threads != run.threads {
			t.Errorf("%s: threads hist %d json %d, want %d", run.name, h.Threads, j.Threads, run.threads)
		}
		if h.Hist.Count != run.cycles || j.Hist.Count != run.cycles {
			t.Errorf("%s: count hist %d json %d, want %d", run.name, h.Hist.Count, j.Hist.Count, run.cycles)
		}
		if h.Hist.Overflow == 0 || h.Hist.Overflow != j.Hist.Overflow {
			t.Errorf("%s: overflow hist %d json %d (the fixtures were made to overflow)", run.name, h.Hist.Overflow, j.Hist.Overflow)
		}
		if h.Hist.MinNS != j.Hist.MinNS || h.Hist.MaxNS != j.Hist.MaxNS {
			t.Errorf("%s: min/max hist %d/%d json %d/%d", run.name, h.Hist.MinNS, h.Hist.MaxNS, j.Hist.MinNS, j.Hist.MaxNS)
		}
		for i := range int64(h.Hist.RangeUS) {
			if n, m := h.Hist.Bin(i), j.Hist.Bin(i); n != m {
				t.Fatalf("%s: bin %d hist %d json %d", run.name, i, n, m)
			}
		}
		if j.Hist.RangeUS != h.Hist.RangeUS {
			t.Errorf("%s: JSON histogram range %d, hist file %d (the range comes from the JSON's command line)", run.name, j.Hist.RangeUS, h.Hist.RangeUS)
		}
		if j.Kernel == "" || j.Cmdline == "" {
			t.Errorf("%s: JSON system or command line not read", run.name)
		}
		// Percentiles that land among the overflowed values read the
		// histogram's edge, a lower bound, and say so.
		if p := h.Hist.Percentile(1); p != float64(h.Hist.RangeUS) || !h.Hist.Stats().Beyond(p) || fmtPercentile(h.Hist.Stats(), p) != fmt.Sprintf("≥ %d", h.Hist.RangeUS) {
			t.Errorf("%s: p100 = %v (%s), want the range %d read as a lower bound", run.name, p, fmtPercentile(h.Hist.Stats(), p), h.Hist.RangeUS)
		}
	}
}

func TestCyclictestHistofall(t *testing.T) {
	c := readFixture(t, "histofall.hist")
	// -H adds a sum column to the bins and to some summary lines; it must
	// not count as a third thread nor double the counts.
	if c.Threads != 2 || c.Hist.Count != 2000 {
		t.Fatalf("threads %d count %d, want 2 and 2000 (1000 loops × 2)", c.Threads, c.Hist.Count)
	}
	in := c.Hist.CountIn(0, int64(c.Hist.RangeUS))
	if in+c.Hist.Overflow != c.Hist.Count || c.Hist.Overflow != 22 {
		t.Errorf("bins %d + overflow %d != count %d", in, c.Hist.Overflow, c.Hist.Count)
	}
	p := ctPhase("x", c)
	// The bins stop at 99 µs with overflows up to 1.6 ms: "≤ 1 ms" is
	// unknown, and so is "≤ 100 µs" (a value of exactly 100 µs is among
	// the overflows).
	if fmtPct(p.WithinMS1) != "—" || fmtPct(p.WithinUS100) != "—" {
		t.Errorf("within 1 ms %v, within 100 µs %v", p.WithinMS1, p.WithinUS100)
	}
}

// parseFile parses an HTML file written by the package.
func parseFile(t *testing.T, path string) *html.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// sectionTable returns the compare section of a phase: its run labels and
// the cells of its rows by metric key.
func sectionTable(t *testing.T, doc *html.Node, phase string) ([]string, map[string][]*html.Node) {
	t.Helper()
	for _, s := range findAll(doc, tag("section")) {
		h2 := findAll(s, tag("h2"))
		if len(h2) == 0 || text(h2[0]) != "Phase: "+phase {
			continue
		}
		if n := len(findAll(s, tag("svg"))); n != 1 {
			t.Errorf("phase %s: %d figures, want 1", phase, n)
		}
		var runs []string
		for _, th := range findAll(findAll(s, tag("thead"))[0], tag("th"))[1:] {
			runs = append(runs, text(th))
		}
		rows := map[string][]*html.Node{}
		for _, tr := range findAll(findAll(s, tag("tbody"))[0], tag("tr")) {
			rows[attr(tr, "class")] = findAll(tr, tag("td"))
		}
		return runs, rows
	}
	t.Fatalf("no section for phase %q", phase)
	return nil, nil
}

func TestCompareTwoRuns(t *testing.T) {
	a := synth.Default()
	a.PhaseLength = 3 * time.Second
	a.Hostname = "kernel-rt"
	b := a
	b.Hostname, b.Seed = "kernel-generic", 2
	b.Phases = []synth.Phase{synth.Idle(), synth.Hackbench()}
	b.Phases[0].MedianUS, b.Phases[1].MedianUS, b.Phases[1].SpikeProb = 9, 40, 1e-2
	dirA, runA := writeRun(t, a)
	dirB, _ := writeRun(t, b)
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := compareInputs([]Input{{Path: dirA, Label: "rt"}, {Path: dirB, Label: "generic"}}, out); err != nil {
		t.Fatal(err)
	}
	doc := parseFile(t, out)
	for pi, name := range []string{"idle", "hackbench"} {
		runs, rows := sectionTable(t, doc, name)
		if strings.Join(runs, ",") != "rt,generic" {
			t.Fatalf("%s: columns %v", name, runs)
		}
		pa := runA.Phases[pi]
		// One run each: no row marks a best, however far apart the
		// figures (one run against one says nothing of the run-to-run
		// spread).
		for key, cells := range rows {
			if len(cells) != 2 {
				t.Fatalf("%s %s: %d cells", name, key, len(cells))
			}
			if hasClass(cells[0], "best") || hasClass(cells[1], "best") {
				t.Errorf("%s %s: ★ from one run each", name, key)
			}
		}
		if got := cellValue(t, rowOf(rows["p999_us"], 0), "p999_us"); got != pa.Latency.P999 {
			t.Errorf("%s p99.9 of rt = %v, run.json %v", name, got, pa.Latency.P999)
		}
	}
}

// rowOf is cell i of a row, detached into a row of its own, so that
// cellValue can read it alone.
func rowOf(cs []*html.Node, i int) *html.Node {
	c := *cs[i]
	c.NextSibling, c.PrevSibling, c.Parent = nil, nil, nil
	return &html.Node{Type: html.ElementNode, Data: "tr", FirstChild: &c}
}

func TestCompareCyclictest(t *testing.T) {
	dir, _ := writeRun(t, func() synth.Config { c := synth.Default(); c.PhaseLength = 2 * time.Second; return c }())
	fx := func(n string) string { return filepath.Join("testdata", "cyclictest", n) }
	out := filepath.Join(t.TempDir(), "c.html")
	err := compareInputs([]Input{
		{Path: dir, Label: "latencytest"},
		{Path: fx("idle.hist"), Phase: "idle"},
		{Path: fx("idle.json"), Label: "idle json", Phase: "idle"},
		{Path: fx("hackbench.json")},
		{Path: fx("hackbench.hist")},
	}, out)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseFile(t, out)
	runs, rows := sectionTable(t, doc, "idle")
	if strings.Join(runs, ",") != "latencytest,idle.hist,idle json" {
		t.Errorf("idle columns %v", runs)
	}
	// cyclictest measures no CPU loop and no xruns: unknown, never "best".
	for _, c := range rows["xruns"][1:] {
		if text(c) != "—" || hasClass(c, "best") {
			t.Errorf("cyclictest xruns cell %q best=%v", text(c), hasClass(c, "best"))
		}
	}
	if text(rows["max_us"][1]) != "1935.0" || text(rows["max_us"][2]) != "1935.0" {
		t.Errorf("cyclictest max %q %q, want the fixture's 1935", text(rows["max_us"][1]), text(rows["max_us"][2]))
	}
	runs, rows = sectionTable(t, doc, DefaultCyclictestPhase)
	if strings.Join(runs, ",") != "hackbench.json,hackbench.hist" || text(rows["periods"][0]) != "4000" {
		t.Errorf("cyclictest section columns %v periods %q", runs, text(rows["periods"][0]))
	}
	// The same run read from its two files ties on every row.
	for k, cs := range rows {
		if text(cs[0]) != text(cs[1]) && k != "avg_us" { // the text file rounds averages to 1 µs
			t.Errorf("%s: json %q hist %q", k, text(cs[0]), text(cs[1]))
		}
	}
}

func TestCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(junk, []byte("not a cyclictest file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join("testdata", "cyclictest", "idle.hist")
	for _, in := range [][]string{nil, {filepath.Join(dir, "missing")}, {good, junk}, {dir}} {
		out := filepath.Join(t.TempDir(), "out.html")
		err := compare(in, out)
		if !badinput.Is(err) {
			t.Errorf("compare(%v) = %v, want bad input", in, err)
		}
		if _, serr := os.Stat(out); !os.IsNotExist(serr) {
			t.Errorf("compare(%v) wrote %s despite the error", in, out)
		}
	}
}

// compare is CompareTo of paths alone, without JSON.
func compare(inputs []string, out string) error {
	ins := make([]Input, len(inputs))
	for i, p := range inputs {
		ins[i] = Input{Path: p}
	}
	return compareInputs(ins, out)
}

// compareInputs is CompareTo without JSON.
func compareInputs(ins []Input, out string) error { return CompareTo(ins, out, "") }
