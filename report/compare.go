package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"latencytest/cyclictest"
	"latencytest/internal/atomicfile"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// DefaultCyclictestPhase is the phase name given to a cyclictest file when
// the caller does not choose one.
const DefaultCyclictestPhase = "cyclictest"

// Input is one run to compare.
type Input struct {
	Path string
	// More are further results directories or cyclictest files of the
	// same source (the kernel measured again): each of their runs is a
	// run of this source, as a repeated run's repetitions are, so that
	// compare decides from their spread.
	More []string
	// Label names the run in the page; default: the base name of Path.
	Label string
	// Phase is the phase a cyclictest file is compared in, so that it can
	// sit beside a latencytest phase of the same name; default
	// DefaultCyclictestPhase. Ignored for results directories.
	Phase string
}

// compared is one loaded input.
type compared struct {
	Input
	run    *rundata.Run        // nil for cyclictest
	ct     *cyclictest.Result  // a cyclictest histogram or JSON file
	log    []cyclictest.LogRun // a cyclictest terminal log
	split  bool                // log is the runs under one of its headings (splitLog)
	phases []*phaseData
	spikes map[int][]rundata.Spike // by phase index, for a traced run
	// inner says what differs between the results directories given to
	// this one source (differs), a line each.
	inner []string
}

// CompareTo renders several runs side by side into out, and writes their
// ranking as JSON to jsonOut ("": none), for a script to gate a kernel
// upgrade on. Inputs are results directories or cyclictest files (its
// --histfile text, its --json output of rt-tests 2.x, its terminal log).
// Errors caused by the inputs are bad input (internal/badinput); out is
// only written when everything could be read.
func CompareTo(ins []Input, out, jsonOut string) error {
	_, err := CompareGated(ins, out, jsonOut, DefaultWithinPct, nil)
	return err
}

// CompareGated is CompareTo whose writes pass g (nil: none), so that the
// caller can stop it at any instant without a file half-written, deciding
// "no difference larger than within %" (compare --fail-if-worse's PCT);
// it returns the ranking, for the terminal (WriteRanking) and the exit
// code (Ranking.FailIfWorse).
func CompareGated(ins []Input, out, jsonOut string, within float64, g *Gate) (Ranking, error) {
	if len(ins) == 0 {
		return Ranking{}, badinput.New("nothing to compare: give at least one results directory or cyclictest file")
	}
	loaded := make([][]*compared, len(ins))
	errs := make([]error, len(ins))
	wg := newGroup()
	for i, in := range ins {
		wg.Go(func() { loaded[i], errs[i] = loadSource(in) })
	}
	wg.Wait()
	var cs []*compared
	for i, err := range errs {
		if err != nil {
			return Ranking{}, err // the first, in the order given: one line for the user
		}
		cs = append(cs, loaded[i]...)
	}
	labels := map[string]int{}
	for _, c := range cs {
		labels[c.Label]++
	}
	for i, c := range cs {
		if labels[c.Label] > 1 {
			c.Label = fmt.Sprintf("%s #%d", c.Label, i+1)
		}
	}
	rk := rank(cs, within)
	page, err := renderCompare(cs, rk, within)
	if err != nil {
		return Ranking{}, err
	}
	var ranking []byte
	if jsonOut != "" {
		if ranking, err = marshalRanking(rk); err != nil {
			return Ranking{}, err
		}
	}
	return rk, g.commit(func() error {
		if jsonOut != "" {
			if err := atomicfile.WriteFile(jsonOut, ranking); err != nil {
				return err
			}
		}
		return atomicfile.WriteFile(out, page)
	})
}

// expandCPUs follows each phase of run --cpus with a phase per CPU,
// "idle CPU 0", so that compare has a section, a table and a ranking per
// CPU beside the phase's over all CPUs: two runs --cpus compare CPU by
// CPU. The spikes keep their phases.
func (c *compared) expandCPUs() {
	var phases []*phaseData
	spikes := map[int][]rundata.Spike{}
	for i, p := range c.phases {
		if ss, ok := c.spikes[i]; ok {
			spikes[len(phases)] = ss
		}
		phases = append(phases, p)
		for _, cp := range p.cpus {
			one := *cp
			one.Name, one.Repeat = p.Name+" "+cp.Name, p.Repeat
			phases = append(phases, &one)
		}
	}
	c.phases, c.spikes = phases, spikes
}

// loadSource loads in: the sources it holds (one, or one per heading of
// a cyclictest mail, splitLog), or with in.More one source whose runs are
// all of theirs, phases pooled by name, every run kept (pool).
func loadSource(in Input) ([]*compared, error) {
	if len(in.More) == 0 {
		return loadInput(in)
	}
	paths := append([]string{in.Path}, in.More...)
	var parts []*compared
	for _, p := range paths {
		one := in
		one.Path, one.More, one.Label = p, nil, p
		cs, err := loadInput(one)
		if err != nil {
			return nil, err
		}
		parts = append(parts, cs...)
	}
	src := parts[0]
	for _, c := range parts[1:] {
		for i, ss := range c.spikes {
			if src.spikes == nil {
				src.spikes = map[int][]rundata.Spike{}
			}
			src.spikes[len(src.phases)+i] = ss
		}
		src.phases = append(src.phases, c.phases...)
	}
	// Runs of one source measured otherwise are not one source's runs.
	src.inner = differs(parts)
	src.Label = in.Label
	if in.Label == "" {
		src.Label = fmt.Sprintf("%s +%d", filepath.Base(filepath.Clean(in.Path)), len(in.More))
	}
	src.Path = strings.Join(paths, ", ")
	src.poolByName()
	return []*compared{src}, nil
}

// maxCyclictestBytes bounds a cyclictest file: -h 100000 with 64 threads
// is about 50 MB of histogram text.
const maxCyclictestBytes = 256 << 20

// loadInput reads one input: a results directory, or a cyclictest file,
// which is one source unless it is a log whose headings part its runs
// (splitLog).
func loadInput(in Input) ([]*compared, error) {
	c := &compared{Input: in}
	labelled := c.Label != ""
	if !labelled {
		c.Label = filepath.Base(filepath.Clean(in.Path))
	}
	fi, err := os.Stat(in.Path)
	if err != nil {
		return nil, badinput.Errorf("%w", err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(in.Path, rundata.RunFile)); err != nil {
			return nil, badinput.Errorf("%s: not a results directory (no %s)", in.Path, rundata.RunFile)
		}
		rd, err := load(in.Path)
		if err != nil {
			return nil, badinput.Errorf("%s: %v", in.Path, err)
		}
		c.run, c.phases, c.spikes = rd.run, rd.phases, rd.spikes
		if !labelled && rd.run.Label != "" {
			c.Label = rd.run.Label // run --label's
		}
		c.expandCPUs()
		c.poolRepeats()
		return []*compared{c}, nil
	}
	b, err := rundata.ReadFileLimited(in.Path, maxCyclictestBytes)
	if err != nil {
		return nil, badinput.Errorf("%w", err)
	}
	if err := c.parseCyclictest(b); err != nil {
		return nil, badinput.Errorf("%s: %v", in.Path, err)
	}
	return c.splitLog(labelled), nil
}

// splitLog makes a source of each heading of a cyclictest log whose runs
// come under several ("Before the patch:", "After the patch:"): pooled,
// two kernels' runs would be ranked as one kernel's spread. Each is
// labelled by its heading, after the input's label when the user gave
// one. Any other input is the one source it was.
func (c *compared) splitLog(labelled bool) []*compared {
	srcs := cyclictest.GroupByHeading(c.log)
	if len(srcs) < 2 {
		return []*compared{c}
	}
	out := make([]*compared, len(srcs))
	for i, s := range srcs {
		one := *c
		switch {
		case s.Heading == "":
			one.Label = c.Label + " (above the first heading)"
		case labelled:
			one.Label = c.Label + ": " + s.Heading
		default:
			one.Label = s.Heading
		}
		one.log, one.split = s.Runs, true
		one.phases = []*phaseData{logPhase(c.phases[0].Name, s.Runs)}
		out[i] = &one
	}
	return out
}

// parseCyclictest reads b, a cyclictest file in any of its formats, as
// c's one phase (named c.Phase).
func (c *compared) parseCyclictest(b []byte) error {
	name := c.Phase
	if name == "" {
		name = DefaultCyclictestPhase
	}
	if cyclictest.IsLog(b) {
		runs, err := cyclictest.ParseLog(bytes.NewReader(b))
		if err != nil {
			return err
		}
		c.log = runs
		c.phases = []*phaseData{logPhase(name, runs)}
		return nil
	}
	ct, err := cyclictest.Parse(b)
	if err != nil {
		return err
	}
	c.ct = ct
	c.phases = []*phaseData{ctPhase(name, ct)}
	return nil
}

type inputView struct {
	Label, Source, Kernel, Preempt, Host, Period, Notes string
	Color                                               template.CSS
}

type compareRow struct {
	Key, Label string
	Cells      []cell
}

type sectionView struct {
	ID, Name string
	Runs     []string
	Rows     []compareRow
	Hist     template.HTML
	Culprits *culpritCompare
}

type comparePage struct {
	Inputs   []inputView
	Ranking  []rankView
	Differs  []string // Ranking.Differs
	Sections []sectionView
}

func renderCompare(cs []*compared, rk Ranking, within float64) ([]byte, error) {
	pg := &comparePage{}
	for i, c := range cs {
		pg.Inputs = append(pg.Inputs, inputOf(c, paletteAt(i)))
	}
	var err error
	pg.Differs = rk.Differs
	if pg.Ranking, err = rankViews(rk); err != nil {
		return nil, err
	}
	// One section per phase name, in order of first appearance.
	names := phaseNames(cs)
	periodUS, bufferUS := commonPeriod(cs)
	pg.Sections = make([]sectionView, len(names))
	errs := make([]error, len(names))
	wg := newGroup()
	for si, name := range names {
		sv := &pg.Sections[si]
		sv.ID, sv.Name = "phase-"+strconv.Itoa(si+1), name
		hs := fillSection(sv, cs, name, within)
		if len(hs) == 0 {
			continue // the phase was skipped in every run
		}
		wg.Go(func() {
			sv.Hist, errs[si] = histFigure(name, hs, periodUS, bufferUS, colLatency)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "compare", pg); err != nil {
		return nil, fmt.Errorf("render compare page: %w", err)
	}
	return b.Bytes(), nil
}

// inputOf is the page's line on one input: what it is and what measured
// it, in its color.
func inputOf(c *compared, col color.NRGBA) inputView {
	iv := inputView{Label: c.Label, Source: c.Path,
		Color: template.CSS(fmt.Sprintf("color:#%02x%02x%02x", col.R, col.G, col.B))}
	switch {
	case c.run != nil:
		r := c.run
		iv.Kernel, iv.Preempt, iv.Host = r.System.KernelRelease, r.System.Preempt, r.System.Hostname
		iv.Period = fmt.Sprintf("%d frames × %d at %d Hz = %s ms", r.PeriodFrames, r.Periods, r.Rate, fmtNum(r.PeriodUS/1000))
		var notes []string
		notes = append(notes, "latencytest "+r.Driver+" driver")
		if r.Simulated {
			notes = append(notes, "xruns simulated")
		}
		if r.Interrupted {
			notes = append(notes, "interrupted")
		}
		if ctx := r.System.Context; ctx.Virtual != "" {
			notes = append(notes, "virtual machine ("+ctx.Virtual+")")
		}
		if ctx := r.System.Context; ctx.TaintFlags != "" {
			notes = append(notes, "kernel tainted "+ctx.TaintFlags)
		}
		if g := r.System.Context.Governors; len(g) > 0 {
			notes = append(notes, "cpufreq "+strings.Join(g, "/"))
		}
		iv.Notes = strings.Join(notes, ", ")
	case c.log != nil:
		iv.Kernel, iv.Preempt, iv.Host, iv.Period = "—", "—", "—", "—"
		threads, interval := 0, 0
		for _, r := range c.log {
			threads = max(threads, len(r.Threads))
			for _, t := range r.Threads {
				interval = t.IntervalUS
			}
		}
		if interval > 0 {
			iv.Period = fmt.Sprintf("interval %d µs", interval)
		}
		iv.Notes = fmt.Sprintf("cyclictest terminal log: %d runs, up to %d thread(s) each; a log holds no histogram, so percentiles are unknown", len(c.log), threads)
		if c.split {
			iv.Notes += fmt.Sprintf("; the runs under %q, from line %d", c.log[0].Heading, c.log[0].Line)
		}
	default:
		iv.Kernel, iv.Host = c.ct.Kernel, "—"
		if c.ct.Version != "" {
			iv.Preempt = c.ct.Version
		}
		if c.ct.Realtime {
			iv.Preempt = "PREEMPT_RT"
		}
		iv.Period = "—"
		if us := c.ct.IntervalUS(); us > 0 {
			iv.Period = fmt.Sprintf("interval %d µs", us)
		}
		iv.Notes = fmt.Sprintf("cyclictest, %d thread(s) merged, %d cycles", c.ct.Threads, c.ct.Cycles)
		if c.ct.Cmdline != "" {
			iv.Notes += ": " + c.ct.Cmdline
		}
	}
	return iv
}

// fillSection fills the table of phase name across the inputs into sv
// (a run that skipped it says why, the best figure of each row marked)
// and returns the histograms to overlay in its figure.
func fillSection(sv *sectionView, cs []*compared, name string, within float64) []histSeries {
	var ps []*phaseData // nil for a phase that was skipped
	var skipped []string
	var hs []histSeries
	for ci, c := range cs {
		for _, p := range c.phases {
			if p.Name != name {
				continue
			}
			sv.Runs = append(sv.Runs, c.Label)
			if p.Skipped != "" {
				ps = append(ps, nil)
				skipped = append(skipped, p.Skipped)
				break
			}
			ps = append(ps, p)
			skipped = append(skipped, "")
			if p.hist != nil && p.hist.Count > 0 {
				hs = append(hs, histSeries{label: c.Label, h: p.hist, color: paletteAt(ci)})
			}
			break
		}
	}
	byPhase := make([][]cell, len(ps))
	for i, p := range ps {
		if p != nil {
			byPhase[i] = row(p)
		}
	}
	markDecided(ps, byPhase, within)
	for mi, m := range metrics {
		if _, ok := sometimes[m.key]; ok && !measuredIn(compareCells(byPhase, mi), 0) {
			continue
		}
		cr := compareRow{Key: m.key, Label: m.label}
		for i := range ps {
			if ps[i] == nil {
				cr.Cells = append(cr.Cells, cell{Key: m.key, Text: "skipped: " + skipped[i]})
				continue
			}
			cr.Cells = append(cr.Cells, byPhase[i][mi])
		}
		sv.Rows = append(sv.Rows, cr)
	}
	sv.Rows = append(sv.Rows, loadRows(ps, within)...)
	sv.Culprits = compareCulprits(cs, name)
	return hs
}

// commonPeriod returns the period and buffer to mark on the histograms
// when every latencytest run shares them; 0 otherwise.
func commonPeriod(cs []*compared) (periodUS, bufferUS float64) {
	first := true
	for _, c := range cs {
		if c.run == nil {
			continue
		}
		if first {
			periodUS, bufferUS, first = c.run.PeriodUS, c.run.BufferUS, false
			continue
		}
		if c.run.PeriodUS != periodUS || c.run.BufferUS != bufferUS {
			return 0, 0
		}
	}
	return periodUS, bufferUS
}

// culpritCompare is a phase's culprit tables side by side: a row per
// cause that is among the first few of any traced run.
type culpritCompare struct {
	Runs []string
	Rows []culpritCompareRow
}

type culpritCompareRow struct {
	Kind, Label string
	Shares      []string
}

// culpritsShown is how many causes of each run the side-by-side table takes.
const culpritsShown = 6

// compareCulprits builds the side-by-side culprit table of phase name;
// nil when no run was traced.
func compareCulprits(cs []*compared, name string) *culpritCompare {
	var runs []string
	var tables [][]culpritRow
	for _, c := range cs {
		if c.run == nil || c.run.Trace == nil || !c.run.Trace.Enabled {
			continue
		}
		for i, p := range c.phases {
			if p.Name == name && p.Skipped == "" {
				runs = append(runs, c.Label)
				tables = append(tables, culpritRows(c.spikes[i]))
				break
			}
		}
	}
	if len(runs) == 0 {
		return nil
	}
	cc := &culpritCompare{Runs: runs}
	index := map[string]int{}
	for _, rows := range tables {
		for _, r := range rows[:min(culpritsShown, len(rows))] {
			if _, ok := index[r.Label]; !ok {
				index[r.Label] = len(cc.Rows)
				cc.Rows = append(cc.Rows, culpritCompareRow{Kind: r.Kind, Label: r.Label, Shares: make([]string, len(runs))})
			}
		}
	}
	for ti, rows := range tables {
		for _, r := range rows {
			if k, ok := index[r.Label]; ok {
				cc.Rows[k].Shares[ti] = r.Share
			}
		}
	}
	for _, r := range cc.Rows {
		for i := range r.Shares {
			if r.Shares[i] == "" {
				r.Shares[i] = "—"
			}
		}
	}
	return cc
}

// compareCells is column mi of a comparison's rows, each a row of one
// cell, for measuredIn.
func compareCells(byPhase [][]cell, mi int) []statsRow {
	rows := make([]statsRow, 0, len(byPhase))
	for _, cs := range byPhase {
		if cs != nil {
			rows = append(rows, statsRow{Cells: cs[mi : mi+1]})
		}
	}
	return rows
}
