package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"latencytest/audio"
	"latencytest/rundata"
	"latencytest/sysinfo"
)

// Load is a phase's stressor while it runs.
type Load interface {
	// Stop ends the load and returns its throughput figures.
	Stop() (map[string]any, error)
}

// IdlePhase is the phase without a load.
const IdlePhase = "idle"

// Config is one measurement.
type Config struct {
	Exe     string   // this binary, run as the engine process
	Command []string // the command line, for run.json
	Version string

	Driver  string // resolved driver name
	Audio   audio.Config
	CPULoad int
	RT      rundata.RTParams

	Tests    []string // phases in order
	Duration time.Duration
	Out      string // results directory, created by Run
	HistFile string // cyclictest-style histogram file ("" : none)
	// NoSamples skips writing the per-period samples files (for the
	// benchmark that checks writing them costs nothing).
	NoSamples bool

	// StallAt/StallFor inject a stall into the loop at that period of
	// every phase (a test hook; StallFor 0 disables it).
	StallAt  int64
	StallFor time.Duration

	// StartLoad starts the named stressor; its error is the reason the
	// phase is skipped.
	StartLoad func(name string) (Load, error)
	// Checks returns the system check findings stored in run.json.
	Checks func() []rundata.Finding
	// Render renders the report of the results directory.
	Render func(dir string) error

	Stdout   io.Writer // summary
	Stderr   io.Writer // progress and xrun lines
	Progress ProgressMode
}

// Run measures every phase and writes the results directory. Cancelling
// ctx stops the run within a period: what was measured is kept, run.json
// says interrupted, and no process is left. A *BadInputError means the
// driver refused the device or its settings; the results directory is then
// removed, as nothing was measured.
func Run(ctx context.Context, cfg Config) (*rundata.Run, error) {
	created, err := makeOut(cfg.Out)
	if err != nil {
		return nil, err
	}
	pr := newPrinter(cfg.Stderr, cfg.Progress)
	run := &rundata.Run{
		Schema:       rundata.SchemaVersion,
		Tool:         cfg.Version,
		Command:      cfg.Command,
		Start:        nowWall(),
		System:       sysinfo.Read(),
		Driver:       cfg.Driver,
		Device:       cfg.Audio.Device,
		Stream:       cfg.Audio.Stream,
		Rate:         cfg.Audio.Rate,
		Channels:     cfg.Audio.Channels,
		PeriodFrames: cfg.Audio.PeriodFrames,
		Periods:      cfg.Audio.Periods,
		CPULoad:      cfg.CPULoad,
		RT:           rundata.RTSetup{Asked: cfg.RT},
		Phases:       []rundata.Phase{},
	}
	setShape(run)
	if cfg.Checks != nil {
		run.Checks = cfg.Checks()
	}
	var hists []*rundata.Histogram
	acts := map[int]float64{} // phase index -> last latency, µs
	opened := false
	for i, name := range cfg.Tests {
		if ctx.Err() != nil {
			break
		}
		ph := rundata.Phase{Name: name}
		var load Load
		if name != IdlePhase {
			ph.Stressor = name
			pr.linef("[%s] starting the %s load", name, name)
			load, err = cfg.StartLoad(name)
			if err != nil {
				ph.Skipped = err.Error()
				pr.linef("[%s] skipped: %s", name, ph.Skipped)
				run.Phases = append(run.Phases, ph)
				if err := rundata.WriteRun(cfg.Out, run); err != nil {
					return run, err
				}
				continue
			}
		}
		acc, err := runPhase(ctx, cfg, i, &ph, run, pr, &opened)
		if load != nil {
			stats, serr := load.Stop()
			ph.StressorStats = stats
			if serr != nil {
				pr.linef("[%s] stopping the load: %v", name, serr)
				if ph.StressorStats == nil {
					ph.StressorStats = map[string]any{}
				}
				ph.StressorStats["error"] = serr.Error()
			}
		}
		var bad *BadInputError
		if errors.As(err, &bad) && !opened {
			if created {
				os.RemoveAll(cfg.Out)
			}
			return nil, err
		}
		if acc != nil {
			acts[len(run.Phases)] = float64(acc.lastLat) / 1000
			run.Phases = append(run.Phases, ph)
			hists = append(hists, acc.hist)
		}
		if err != nil {
			run.End = nowWall()
			run.Interrupted = true
			rundata.WriteRun(cfg.Out, run)
			return run, fmt.Errorf("phase %s: %w", name, err)
		}
		if err := rundata.WriteRun(cfg.Out, run); err != nil {
			return run, err
		}
	}
	run.End = nowWall()
	run.Interrupted = ctx.Err() != nil
	if err := rundata.WriteRun(cfg.Out, run); err != nil {
		return run, err
	}
	if cfg.HistFile != "" {
		if err := rundata.WriteFileAtomic(cfg.HistFile, histFile(hists)); err != nil {
			return run, err
		}
	}
	if cfg.Render != nil {
		if err := cfg.Render(cfg.Out); err != nil {
			pr.linef("report: %v", err)
		}
	}
	summary(cfg.Stdout, run, acts, cfg.Out)
	return run, nil
}

// makeOut creates the results directory and its samples folder, saying
// whether it created the directory itself (and may remove it again).
func makeOut(dir string) (created bool, err error) {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		created = true
	}
	if err := os.MkdirAll(filepath.Join(dir, "samples"), 0o755); err != nil {
		return false, &BadInputError{Msg: fmt.Sprintf("--out %s: %v", dir, err)}
	}
	return created, nil
}

// setShape derives the period and buffer lengths from the stream's shape.
func setShape(run *rundata.Run) {
	if run.Rate > 0 {
		run.PeriodUS = float64(run.PeriodFrames) * 1e6 / float64(run.Rate)
		run.BufferUS = run.PeriodUS * float64(run.Periods)
	}
}

// runPhase runs the engine for one phase and fills ph. opened reports
// whether any engine has opened its stream in this run.
func runPhase(ctx context.Context, cfg Config, i int, ph *rundata.Phase, run *rundata.Run, pr *printer, opened *bool) (*accumulator, error) {
	req := engineRequest{
		Driver:     cfg.Driver,
		Config:     cfg.Audio,
		CPULoad:    cfg.CPULoad,
		DurationNS: int64(cfg.Duration),
		StallAt:    -1,
		RT:         cfg.RT,
	}
	if cfg.StallFor > 0 {
		req.StallAt, req.StallForNS = cfg.StallAt, int64(cfg.StallFor)
	}
	var (
		file *os.File
		acc  *accumulator
		name = ph.Name
	)
	onXrun := func(s *rundata.Sample) {
		if s.Xrun == 0 {
			pr.linef("[%s] pointer jump at period %d: the hardware pointer fell a buffer or more behind the card's clock (a period interrupt more than a buffer late; the kernel reported no xrun, and it is not counted as one)", name, s.Index)
			return
		}
		kind := "underrun"
		if s.Flags&rundata.FlagCapture != 0 {
			kind = "overrun"
		}
		sim := ""
		switch {
		case s.Flags&rundata.FlagSimulated != 0:
			sim = " (simulated)"
		}
		pr.linef("[%s] %s!!! (at least %.3f ms long)%s", name, kind, float64(s.Xrun)/1e6, sim)
	}
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	ph.StartWall = nowWall()
	stopProgress := func() {}
	res, err := runEngine(ctx, cfg.Exe, req, func(s *rundata.Sample) { acc.sample(s) }, func(h engineHello) error {
		*opened = true
		g := h.Granted
		shape := audioShape{Rate: g.Rate, PeriodFrames: g.PeriodFrames, Periods: g.Periods}
		if !cfg.NoSamples {
			rel := filepath.Join("samples", fmt.Sprintf("%02d-%s.bin", i+1, name))
			f, err := os.Create(filepath.Join(cfg.Out, rel))
			if err != nil {
				return fmt.Errorf("samples file: %w", err)
			}
			file = f
			ph.SamplesFile = rel
			acc = newAccumulator(rundata.NewSampleWriter(f, rundata.NewSampleHeader(g.Rate, g.PeriodFrames, g.Periods)), shape, onXrun)
		} else {
			acc = newAccumulator(nil, shape, onXrun)
		}
		acc.nominalDSP = h.NominalDSP
		if run.RT.Obtained.Policy == "" { // first phase: what the driver and kernel granted
			run.RT = h.RT
			run.Device, run.Format = g.Device, g.Format
			run.Rate, run.Channels, run.PeriodFrames, run.Periods = g.Rate, g.Channels, g.PeriodFrames, g.Periods
			run.Simulated = g.Simulated
			run.DriverNotes = g.Notes
			setShape(run)
			for _, n := range g.Notes {
				pr.linef("%s: %s", run.Driver, n)
			}
			for _, r := range h.RT.Refused {
				pr.linef("not obtained: %s", r)
			}
		}
		stopProgress = pr.progress(name, cfg.Duration, acc)
		return nil
	})
	stopProgress()
	ph.EndWall = nowWall()
	if acc == nil {
		return nil, err
	}
	if res != nil {
		ph.StartMonoNS = res.bye.Start
		ph.Lost = int64(res.bye.Lost)
	}
	acc.mu.Lock()
	ph.EndMonoNS = acc.lastDue
	if acc.writer != nil {
		if ferr := acc.writer.Flush(); ferr != nil && acc.writeErr == nil {
			acc.writeErr = ferr
		}
		if acc.writeErr != nil && err == nil {
			err = fmt.Errorf("samples file: %w", acc.writeErr)
		}
	}
	acc.mu.Unlock()
	acc.fill(ph)
	if err == nil && file != nil {
		err = file.Close()
		file = nil
	}
	return acc, err
}

// histFile renders the phases' histograms in cyclictest's --histfile
// format, one column per phase, so tools made for cyclictest read it.
func histFile(hists []*rundata.Histogram) []byte {
	var b strings.Builder
	rows := 0
	for _, h := range hists {
		if h.Count > 0 {
			rows = max(rows, int(min(h.MaxNS/1000+1, int64(len(h.Bins)))))
		}
	}
	b.WriteString("# Histogram\n")
	for i := range rows {
		fmt.Fprintf(&b, "%06d ", i)
		for j, h := range hists {
			if j > 0 {
				b.WriteByte('\t')
			}
			fmt.Fprintf(&b, "%06d", h.Bins[i])
		}
		b.WriteByte('\n')
	}
	line := func(name string, f func(h *rundata.Histogram) string) {
		b.WriteString("# " + name + ":")
		for _, h := range hists {
			b.WriteString(" " + f(h))
		}
		b.WriteByte('\n')
	}
	line("Total", func(h *rundata.Histogram) string { return fmt.Sprintf("%09d", h.Count-h.Overflow) })
	line("Min Latencies", func(h *rundata.Histogram) string {
		if h.Count == 0 {
			return "00000"
		}
		return fmt.Sprintf("%05d", h.MinNS/1000)
	})
	line("Avg Latencies", func(h *rundata.Histogram) string {
		if h.Count == 0 {
			return "00000"
		}
		return fmt.Sprintf("%05d", int64(h.SumNS/float64(h.Count)/1000))
	})
	line("Max Latencies", func(h *rundata.Histogram) string { return fmt.Sprintf("%05d", h.MaxNS/1000) })
	line("Histogram Overflows", func(h *rundata.Histogram) string { return fmt.Sprintf("%05d", h.Overflow) })
	b.WriteString("# Histogram Overflow at cycle number:\n")
	for j := range hists {
		fmt.Fprintf(&b, "# Thread %d:\n", j)
	}
	return []byte(b.String())
}

// summary prints one line per phase in cyclictest's style, with
// percentiles and xruns added, and where the results are.
func summary(w io.Writer, run *rundata.Run, acts map[int]float64, dir string) {
	for i, ph := range run.Phases {
		if ph.Skipped != "" {
			fmt.Fprintf(w, "T: %-10s skipped: %s\n", ph.Name, ph.Skipped)
			continue
		}
		l := ph.Latency
		fmt.Fprintf(w, "T: %-10s P:%d I:%d C:%8d Min:%7d Act:%5d Avg:%5d Max:%8d p99: %d p99.9: %d xruns: %d\n",
			ph.Name, run.RT.Obtained.Priority, int64(run.PeriodUS), ph.Periods,
			int64(l.Min), int64(acts[i]), int64(l.Avg), int64(l.Max), int64(l.P99), int64(l.P999), ph.Xruns)
		if ph.PointerJumps > 0 {
			fmt.Fprintf(w, "   %-10s pointer jumps: %d (the hardware pointer lost whole buffers against the card's clock without an xrun from the kernel; not xruns)\n", ph.Name, ph.PointerJumps)
		}
	}
	if run.Interrupted {
		fmt.Fprintln(w, "interrupted: the results hold what was measured until then")
	}
	report := filepath.Join(dir, "index.html")
	if _, err := os.Stat(report); err == nil {
		fmt.Fprintf(w, "report: %s\n", report)
	} else {
		fmt.Fprintf(w, "results: %s\n", filepath.Join(dir, rundata.RunFile))
	}
}
