// Package report renders a results directory (run.json and the samples
// files) into a self-contained HTML page and a CSV of per-phase statistics,
// and puts several runs, or cyclictest's files, side by side.
//
// The page needs no network and no JavaScript: graphs are inline SVG drawn
// with gonum/plot by small plotters that draw one stroke per canvas column,
// so an hour of periods costs no more to draw than a minute.
package report

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"html/template"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"latencytest/internal/atomicfile"
	"latencytest/rundata"
)

// Output files written into a results directory.
const (
	IndexFile = "index.html"
	StatsFile = "stats.csv"
)

//go:embed page.tmpl
var pageTmpl string

var tmpl = template.Must(template.New("page").Parse(pageTmpl))

// Render reads dir/run.json and each phase's samples file and writes
// dir/index.html and dir/stats.csv. Both are built in memory and written
// atomically, so a failure leaves the previous versions untouched.
func Render(dir string) error { return RenderGated(dir, nil) }

// RenderGated is Render whose writes pass g (nil: none), so that the
// caller can stop it at any instant without a file half-written.
func RenderGated(dir string, g *Gate) error {
	rd, err := load(dir)
	if err != nil {
		return err
	}
	html, err := renderIndex(rd)
	if err != nil {
		return err
	}
	var csvBuf bytes.Buffer
	if err := writeStats(&csvBuf, rd.phases); err != nil {
		return err
	}
	return g.commit(func() error {
		if err := atomicfile.WriteFile(filepath.Join(dir, StatsFile), csvBuf.Bytes()); err != nil {
			return err
		}
		return atomicfile.WriteFile(filepath.Join(dir, IndexFile), html)
	})
}

// A Gate lets a command stop a rendering at any instant, e.g. on Ctrl-C:
// reading and drawing write nothing, so they may simply be abandoned, and
// all the writes of one rendering (each whole, atomicfile) pass the gate
// together, so that either all of them are done or none is.
type Gate struct {
	mu     sync.Mutex
	closed bool
}

// ErrStopped is what a rendering returns when its gate was closed before
// it wrote anything.
var ErrStopped = errors.New("stopped before anything was written")

// Close waits for writes in progress to end and lets none start after.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// commit runs write, all of a rendering's writes, unless g is closed; a
// nil Gate always runs it.
func (g *Gate) commit(write func() error) error {
	if g == nil {
		return write()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrStopped
	}
	return write()
}

type kv struct {
	K, V string
	Mono bool
}

type rtRow struct{ K, A, V string }

// statsTable is the data of the "stats" template.
type statsTable struct {
	ID, First, Extra string
	Head             []string
	Rows             []statsRow
}

type statsRow struct {
	Name, Link, Skipped, Extra string
	Cells                      []cell
}

type phaseView struct {
	ID, Name, Stressor, Skipped, Note string
	Table                             statsTable
	Time, CPU, Hist                   template.HTML
	// Sides is a duplex phase's playback- and capture-side latency
	// histograms, overlaid; Apart and Poll the lines of figures under the
	// table (empty when not duplex; for a driver without a poll).
	Sides                            template.HTML
	Apart, Poll                      string
	TimeCaption, PerColumn, Nominal  string
	Xruns, PointerJumps, RTThrottled int
	RTThrottledMS                    string
	Overflow                         uint64
	Lost                             int64
	Update, AfterUpdate              string
	Heard                            string // what a loopback heard (heardLine)
	HeardMarks                       bool   // its breaks are marked on the time figure
	TripLine                         bool   // its round trip per second is a line on it
	// PerCPU are, under run --cpus, each CPU's figures; Hist then
	// overlays their histograms.
	PerCPU []cpuView
	// What made it late (run --trace): the culprits across the phase's
	// spikes and a timeline of the worst.
	Series []string // the load's per-round figures, listed on demand
	Traced bool
	Spikes int
	// SpikesLost counts the spikes whose window lost trace events.
	SpikesLost int
	// SpikesHeard counts the spikes a glitch heard through the loopback
	// fell in (rundata.Spike.Heard).
	SpikesHeard int
	Culprits    []culpritRow
	Strips      template.HTML
	// Server is the sound server's account of the late cycles (--driver
	// jack through PipeWire or jackd); nil otherwise.
	Server *rundata.Server
}

// cpuView is one CPU's figures in a phase of run --cpus.
type cpuView struct {
	Name, Note, PerColumn string
	Time, Hist            template.HTML
}

type indexPage struct {
	Title, Started, Duration string
	Verdict                  string // the buffer verdict (rundata.VerdictText)
	CPUs                     string // the best and worst CPU of run --cpus (rundata.CPUsText)
	Run                      *rundata.Run
	Banners                  []string
	Overview                 statsTable
	Spread                   []statsTable  // a repeated run's run-to-run tables
	SpreadFig                template.HTML // and their maxima per run
	Overlay                  template.HTML
	Config, System           []kv
	RT                       []rtRow
	Phases                   []phaseView
}

func metricHeads() []string {
	h := make([]string, len(metrics))
	for i, m := range metrics {
		h[i] = m.label
	}
	return h
}

// runBanners are the notes atop the page on the run as a whole: what it
// could not record, and whether it ended as it should.
func runBanners(rd *runData) []string {
	var bs []string
	r := rd.run
	if rd.spikesNote != "" {
		bs = append(bs, "The causes of spikes could not be read: "+rd.spikesNote)
	}
	if tr := r.Trace; tr != nil && !tr.Enabled && tr.Note != "" {
		bs = append(bs, "The causes of spikes were not recorded: "+tr.Note)
	}
	if r.Interrupted {
		bs = append(bs, "This run was interrupted: the figures cover what was measured until then, and phases after it did not run.")
	}
	if r.Incomplete {
		bs = append(bs, "This run never finished (it was killed, or the machine stopped): the figures cover what was written until then, and phases after it did not run.")
	}
	return bs
}

// newPhaseView is a phase's section before its figures are drawn: its
// figures in words and its row of the table (sr, without the overview's
// link).
func newPhaseView(id string, pd *phaseData, sr statsRow) phaseView {
	pv := phaseView{ID: id, Name: pd.Label(), Stressor: pd.Stressor, Skipped: pd.Skipped, Note: pd.note, Series: stressorSeries(pd.StressorStats),
		Xruns: pd.Xruns, PointerJumps: pd.PointerJumps, RTThrottled: pd.RTThrottled, RTThrottledMS: fmtNum(float64(pd.RTThrottledNS) / 1e6), Overflow: pd.Overflow, Lost: pd.Lost, Server: pd.Server, Nominal: fmtNum(pd.CPULoop.NominalUS / 1000)}
	if u, w := pd.UpdateDelay, pd.AfterUpdate; u != nil && w != nil {
		pv.Update, pv.AfterUpdate = statsLine(u), statsLine(w)
	}
	pv.Apart, pv.Poll = sidesLines(&pd.Phase)
	pv.Heard, pv.HeardMarks = heardLine(pd.Sound, pd.CardReported), len(pd.heardAt) > 0
	pv.TripLine = len(roundTripPerSecond(pd)) > 0
	sr.Link, sr.Cells = "", slices.Clone(sr.Cells) // the overview's row keeps its own
	pv.Table = statsTable{First: "phase", Extra: "stressor throughput", Head: metricHeads(), Rows: []statsRow{sr}}
	pv.Table.dropUnmeasured()
	return pv
}

// renderIndex renders rd as the report page, its figures drawn in
// parallel.
func renderIndex(rd *runData) ([]byte, error) {
	r := rd.run
	pg := &indexPage{Run: r, Title: "latencytest report: " + r.System.Hostname, Verdict: rundata.VerdictText(r), CPUs: rundata.CPUsText(r),
		Started: r.Start.UTC().Format("2006-01-02 15:04:05 UTC")}
	if !r.End.IsZero() {
		pg.Duration = r.End.Sub(r.Start).Round(time.Second).String()
	}
	pg.Banners = runBanners(rd)
	pg.Overview = statsTable{ID: "overview-table", First: "phase", Extra: "stressor throughput", Head: metricHeads()}
	pg.Spread = spreadTables(rd.phases)
	spreadFig, err := spreadFigure(rd.phases)
	if err != nil {
		return nil, err
	}
	pg.SpreadFig = spreadFig
	var overlay []histSeries
	pg.Phases = make([]phaseView, len(rd.phases))
	wg := newGroup()
	errs := make([]error, len(rd.phases))
	spikeErrs := make([]error, len(rd.phases))
	for i, pd := range rd.phases {
		id := "phase-" + strconv.Itoa(i+1)
		sr := statsRow{Name: pd.Label(), Link: id, Skipped: pd.Skipped, Extra: stressorSummary(pd.StressorStats)}
		if pd.Skipped != "" {
			pg.Banners = append(pg.Banners, fmt.Sprintf("Phase %q was skipped: %s", pd.Name, pd.Skipped))
		} else {
			if pd.Incomplete {
				pg.Banners = append(pg.Banners, fmt.Sprintf("Phase %q is incomplete: it never ended, and its figures (%d periods) are recovered from its samples file.", pd.Name, pd.Periods))
			}
			sr.Cells = row(pd)
		}
		pg.Overview.Rows = append(pg.Overview.Rows, sr)
		if pd.hist != nil && pd.hist.Count > 0 {
			overlay = append(overlay, histSeries{label: pd.Name, h: pd.hist})
		}
		pv := &pg.Phases[i]
		*pv = newPhaseView(id, pd, sr)
		if pd.Skipped != "" {
			continue
		}
		if tr := r.Trace; tr != nil && tr.Enabled {
			ss := rd.spikes[i]
			pv.Traced, pv.Spikes, pv.Culprits = true, len(ss), culpritRows(ss)
			pv.SpikesLost, pv.SpikesHeard = spikesLost(ss), spikesHeard(ss)
			wg.Go(func() {
				var err error
				pv.Strips, err = spikeFigure(ss, worstShown)
				spikeErrs[i] = err
			})
		}
		if len(pd.cpus) > 0 {
			for _, c := range pd.cpus {
				pv.Table.Rows = append(pv.Table.Rows, statsRow{Name: c.Label(), Cells: row(c)})
			}
			wg.Go(func() { errs[i] = drawCPUs(pv, pd, r) })
			continue
		}
		if pd.env == nil || pd.hist == nil {
			if pv.Note == "" {
				pv.Note = "no samples were recorded"
			}
			continue
		}
		wg.Go(func() { errs[i] = drawPhase(pv, pd, r) })
	}
	pg.Overview.dropUnmeasured()
	var overlayErr error
	wg.Go(func() {
		pg.Overlay, overlayErr = histFigure("latency histograms, all phases", overlay, r.PeriodUS, r.BufferUS, colLatency)
	})
	wg.Wait()
	for _, err := range append(append(errs, spikeErrs...), overlayErr) {
		if err != nil {
			return nil, err
		}
	}
	pg.Config = configKV(r)
	pg.RT = rtRows(r)
	pg.System = systemKV(&r.System)
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "index", pg); err != nil {
		return nil, fmt.Errorf("render %s: %w", IndexFile, err)
	}
	return b.Bytes(), nil
}

// worstShown is how many spikes a phase's timeline shows.
const worstShown = 8

// drawPhase draws the three figures of one phase.
func drawPhase(pv *phaseView, pd *phaseData, r *rundata.Run) error {
	var err error
	periodMS, bufferMS := r.PeriodUS/1000, r.BufferUS/1000
	if pv.Time, pv.TimeCaption, err = timeFigure(pd, periodMS, bufferMS); err != nil {
		return err
	}
	if pv.CPU, err = cpuFigure(pd, periodMS); err != nil {
		return err
	}
	pv.PerColumn = fmt.Sprintf("at least %d periods each", pd.env.per)
	pv.Hist, err = histFigure("latency histogram", []histSeries{{label: pd.Name, h: pd.hist}}, r.PeriodUS, r.BufferUS, colLatency)
	if err != nil || pd.sides == nil || pd.sides.Capture.Count == 0 {
		return err
	}
	pv.Sides, err = histFigure("wakeup latency by side", []histSeries{
		{label: "after the playback side's due", h: pd.sides.Playback},
		{label: "after the capture side's due", h: pd.sides.Capture},
	}, r.PeriodUS, r.BufferUS, colLatency)
	return err
}

// drawCPUs draws the figures of a phase of run --cpus: its CPUs'
// histograms overlaid, and each CPU's latency over time and histogram,
// drawn as a phase's.
func drawCPUs(pv *phaseView, pd *phaseData, r *rundata.Run) error {
	var all []histSeries
	pv.PerCPU = make([]cpuView, len(pd.cpus))
	for k, c := range pd.cpus {
		cv := &pv.PerCPU[k]
		cv.Name, cv.Note = c.Label(), c.note
		if c.env == nil || c.hist == nil {
			continue
		}
		all = append(all, histSeries{label: c.Label(), h: c.hist})
		var err error
		if cv.Time, _, err = timeFigure(c, r.PeriodUS/1000, r.BufferUS/1000); err != nil {
			return err
		}
		cv.PerColumn = fmt.Sprintf("at least %d periods each", c.env.per)
		if cv.Hist, err = histFigure("latency histogram, "+c.Label(), []histSeries{{label: c.Label(), h: c.hist}}, r.PeriodUS, r.BufferUS, colLatency); err != nil {
			return err
		}
	}
	if len(all) == 0 {
		return nil
	}
	var err error
	pv.Hist, err = histFigure("latency histograms, one per CPU", all, r.PeriodUS, r.BufferUS, colLatency)
	return err
}

// sidesLines says, under a phase's table, how far apart a duplex stream's
// two sides became due and each side's wakeup latency, and how long the
// periods waited in poll; each empty when the phase has no such figures.
func sidesLines(p *rundata.Phase) (apart, poll string) {
	if a, pl, cl := p.CapturePlaybackApart, p.PlaybackLatency, p.CaptureLatency; a != nil && pl != nil && cl != nil {
		apart = fmt.Sprintf("capture due − playback due: min %s, avg %s, p99 %s, max %s µs; wakeup after the playback side's due: %s; after the capture side's: %s",
			fmtUS(a.Min), fmtUS(a.Avg), fmtPercentile(*a, a.P99), fmtUS(a.Max), brief(*pl), brief(*cl))
	}
	if w := p.PollWait; w != nil {
		poll = fmt.Sprintf("min %s, avg %s, p99 %s, max %s µs", fmtUS(w.Min), fmtUS(w.Avg), fmtPercentile(*w, w.P99), fmtUS(w.Max))
	}
	return apart, poll
}

// brief is a latency distribution in a few figures, in µs.
func brief(s rundata.LatencyStats) string {
	return fmt.Sprintf("min %s, p50 %s, p99 %s, max %s µs", fmtUS(s.Min), fmtPercentile(s, s.P50), fmtPercentile(s, s.P99), fmtUS(s.Max))
}

// captureSideText names a duplex run's capture side, whose format,
// channels and card may differ from the playback's above ("" for a run
// of one side, or one recorded before the sides could differ).
func captureSideText(r *rundata.Run) string {
	if r.CaptureChannels == 0 {
		return ""
	}
	v := fmt.Sprintf("%s, %d channels", r.CaptureFormat, r.CaptureChannels)
	if c := r.CaptureCard; c != nil {
		v += fmt.Sprintf(", card %d [%s]", c.Index, c.ID)
	}
	return v
}

func configKV(r *rundata.Run) []kv {
	yes := map[bool]string{true: "yes", false: "no"}
	kvs := []kv{
		{K: "driver", V: r.Driver},
		{K: "device", V: r.Device},
	}
	if r.Stream != "" {
		kvs = append(kvs, kv{K: "stream", V: r.Stream})
	}
	if r.Format != "" {
		kvs = append(kvs, kv{K: "format", V: r.Format})
	}
	kvs = append(kvs,
		kv{K: "rate", V: fmt.Sprintf("%d Hz, %d channels", r.Rate, r.Channels)},
		kv{K: "period", V: fmt.Sprintf("%d frames = %s ms", r.PeriodFrames, fmtNum(r.PeriodUS/1000))},
		kv{K: "buffer", V: fmt.Sprintf("%d periods = %s ms", r.Periods, fmtNum(r.BufferUS/1000))},
		kv{K: "CPU load", V: fmt.Sprintf("%d %% of each period", r.CPULoad)},
		kv{K: "xruns simulated", V: yes[r.Simulated]},
	)
	if v := captureSideText(r); v != "" {
		kvs = append(kvs, kv{K: "capture side", V: v})
	}
	if b := r.RTBudget; b != nil {
		v := "lifted for the run (sched_rt_runtime_us was " + b.Was + ")"
		if !b.Lifted {
			v = "not lifted: " + b.Note
		}
		kvs = append(kvs, kv{K: "real-time budget", V: v})
	}
	for _, n := range r.DriverNotes {
		kvs = append(kvs, kv{K: "driver note", V: n})
	}
	kvs = append(kvs,
		kv{K: "command", V: strings.Join(r.Command, " "), Mono: true},
		kv{K: "start", V: r.Start.UTC().Format(time.RFC3339)},
		kv{K: "end", V: r.End.UTC().Format(time.RFC3339)},
		kv{K: "latencytest", V: r.Tool},
	)
	return kvs
}

// pinned is, under run --cpus, the CPUs whose thread the kernel pinned
// there, as the first phase that measured says (each thread's obtained
// affinity): the run's CPUs less those whose pinning was refused.
func pinned(r *rundata.Run) []int {
	for _, ph := range r.Phases {
		if len(ph.CPUs) == 0 || ph.CPUs[0].TID == 0 {
			continue
		}
		var cpus []int
		for _, c := range ph.CPUs {
			if slices.Equal(c.RT.Obtained.Affinity, []int{c.CPU}) {
				cpus = append(cpus, c.CPU)
			}
		}
		return cpus
	}
	return nil
}

// rtRows are the real-time set-up's rows, asked and obtained; under run
// --cpus the affinity row says a thread was pinned to each CPU (each
// thread's own is in its phase's row).
func rtRows(r *rundata.Run) []rtRow {
	rt := &r.RT
	aff := func(c []int) string {
		if len(c) == 0 {
			return "all CPUs"
		}
		s := make([]string, len(c))
		for i, v := range c {
			s[i] = strconv.Itoa(v)
		}
		return strings.Join(s, ",")
	}
	yes := map[bool]string{true: "yes", false: "no"}
	a, o := &rt.Asked, &rt.Obtained
	affinity := rtRow{"CPU affinity", aff(a.Affinity), aff(o.Affinity)}
	if len(r.CPUs) > 0 {
		affinity = rtRow{"CPU affinity", "a thread pinned to each of CPUs " + aff(r.CPUs), "a thread pinned to each of CPUs " + aff(pinned(r))}
	}
	return []rtRow{
		{"scheduling policy", a.Policy, o.Policy},
		{"priority", strconv.Itoa(a.Priority), strconv.Itoa(o.Priority)},
		{"mlockall", yes[a.Mlockall], yes[o.Mlockall]},
		affinity,
		{"cpu_dma_latency 0", yes[a.DMALatency], yes[o.DMALatency]},
	}
}

func systemKV(s *rundata.System) []kv {
	return []kv{
		{K: "hostname", V: s.Hostname},
		{K: "kernel", V: s.KernelRelease},
		{K: "kernel version", V: s.KernelVersion},
		{K: "preemption model", V: s.Preempt},
		{K: "kernel command line", V: s.Cmdline, Mono: true},
		{K: "CPU", V: fmt.Sprintf("%s × %d", s.CPUModel, s.CPUs)},
		{K: "machine", V: orNone(s.Context.Virtual, "bare metal (no hypervisor reported)")},
		{K: "CPU frequency governors", V: orNone(strings.Join(s.Context.Governors, ", "), "none (no cpufreq)")},
		{K: "kernel taint", V: taintText(s.Context)},
		{K: "uptime", V: (time.Duration(s.Context.UptimeS) * time.Second).String()},
	}
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// taintText says what taints the kernel, in the oops' letters; a
// proprietary or out-of-tree module's latency is not the kernel's.
func taintText(c rundata.Context) string {
	if c.Tainted == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%s: P a proprietary module, O out-of-tree, E unsigned; see the kernel's tainted-kernels.rst)", c.Tainted, c.TaintFlags)
}

// statsRecord is one phase's row of stats.csv. Text that comes from the
// run (names, reasons, stressor figures) is neutralised against formula
// injection; numbers are written by strconv and never start with = + @.
func statsRecord(p *phaseData) []string {
	rec := []string{csvText(p.Name), csvText(p.Stressor), csvText(p.Skipped)}
	for _, m := range metrics {
		if p.Skipped != "" {
			rec = append(rec, "")
			continue
		}
		rec = append(rec, m.csv(p))
	}
	num := func(v float64) string {
		if p.Skipped != "" {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	rec = append(rec, num(p.CPULoop.NominalUS), num(p.CPULoop.MaxUS), num(float64(p.Overflow)), num(float64(p.Underflow)))
	if g := p.AfterUpdate; g != nil && p.Skipped == "" {
		pct := func(v float64) string {
			if g.Beyond(v) {
				return ">=" + num(v)
			}
			return num(v)
		}
		rec = append(rec, pct(g.P50), pct(g.P99), pct(g.P9999), num(g.Max))
	} else {
		rec = append(rec, "", "", "", "")
	}
	return append(rec, csvText(stressorSummary(p.StressorStats)))
}

// csvText keeps a spreadsheet from running a cell as a formula: a cell
// that starts with = + - @ (or a tab or carriage return, which some
// programs skip before looking) gets a leading apostrophe, as OWASP
// advises.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// writeStats writes stats.csv: one row per phase, the columns of metrics
// plus the phase's identity and throughput. docs/report.md documents it.
func writeStats(w *bytes.Buffer, phases []*phaseData) error {
	cw := csv.NewWriter(w)
	head := []string{"phase", "stressor", "skipped"}
	for _, m := range metrics {
		head = append(head, m.key)
	}
	head = append(head, "cpu_loop_nominal_us", "cpu_loop_max_us", "histogram_overflow", "histogram_underflow",
		"after_update_p50_us", "after_update_p99_us", "after_update_p9999_us", "after_update_max_us", "stressor_stats")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, p := range phases {
		if err := cw.Write(statsRecord(p)); err != nil {
			return err
		}
		for _, c := range p.cpus { // run --cpus: a row per CPU after the phase's, "idle CPU 0" as compare names it
			one := *c
			one.Name = p.Name + " " + c.Name
			if err := cw.Write(statsRecord(&one)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write %s: %w", StatsFile, err)
	}
	return nil
}

// statsLine is a distribution in one line of text.
func statsLine(g *rundata.LatencyStats) string {
	return fmt.Sprintf("min %s, p50 %s, p99 %s, p99.9 %s, p99.99 %s, max %s µs",
		fmtUS(g.Min), fmtPercentile(*g, g.P50), fmtPercentile(*g, g.P99), fmtPercentile(*g, g.P999), fmtPercentile(*g, g.P9999), fmtUS(g.Max))
}
