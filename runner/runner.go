package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"latencytest/audio"
	"latencytest/cyclictest"
	"latencytest/internal/atomicfile"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"latencytest/internal/cpulist"
	"latencytest/internal/mono"
	"latencytest/internal/nice"
	"latencytest/internal/testhook"
	"latencytest/ktrace"
	"latencytest/rundata"
	"latencytest/sysinfo"
)

// Load is a phase's stressor while it runs.
type Load interface {
	// Stop ends the load and returns its throughput figures.
	Stop() (map[string]any, error)
}

// Liner is a load that has lines of its own for the terminal as it runs
// (hackbench's "Time: 3.728" per round): NewLines returns those that came
// since the last call.
type Liner interface {
	NewLines() []string
}

// IdlePhase is the phase without a load.
const IdlePhase = "idle"

// Config is one measurement.
type Config struct {
	Exe     string   // this binary, run as the engine process
	Command []string // the command line, for run.json
	Label   string   // run --label: the run's name where it is compared
	Version string

	Driver string // resolved driver name
	// AutoDriver says the driver was chosen by --driver auto (the first
	// present; timer when there is no sound card): said on the first line.
	AutoDriver bool
	Audio      audio.Config
	CPULoad    int
	RT         rundata.RTParams

	Tests []string // phases in order
	// LiftRTBudget lifts the kernel's real-time budget for the run
	// (internal/rtbudget).
	LiftRTBudget bool
	// Repeat runs the whole list of phases that many times, 1 to 1000
	// (Run takes 0 as once), each phase recording its repetition.
	Repeat int
	// Duration is each phase's length; 0 with Loops: as long as its
	// periods take.
	Duration time.Duration
	// Loops ends each phase after that many periods (run --loops, as
	// cyclictest -l); 0: none.
	Loops int64
	// CPUs runs one measuring thread per CPU listed (run --cpus, as
	// cyclictest --smp), each pinned to its CPU at RT's policy and
	// priority; empty: one thread, where RT.Affinity says.
	CPUs []int
	// BreakAbove ends the run at the first wakeup later than that many
	// ns (run --break-above, as cyclictest -b): its phase ends with it,
	// and no phase runs after; 0: never.
	BreakAbove int64
	Out        string // results directory, created by Run
	// Force lets Run replace an earlier run's results directory at Out,
	// whole (it is refused otherwise).
	Force    bool
	HistFile string // cyclictest-style histogram file ("" : none)
	// NoSamples skips writing the per-period samples files (for the
	// benchmark that checks writing them costs nothing).
	NoSamples bool

	// StartLoad starts the named stressor on cpus (empty: anywhere the
	// parent may run); its error is the reason the phase is skipped.
	// Cancelling ctx calls the start off.
	StartLoad func(ctx context.Context, name string, cpus []int) (Load, error)
	// Children, if not nil, holds the engine while it runs, for
	// child.Set.KillAll (a second Ctrl-C).
	Children *child.Set
	// Checks returns the system check findings stored in run.json.
	Checks func() []rundata.Finding
	// RTTasks returns the real-time threads stored in run.json.
	RTTasks func() []rundata.RTTask
	// Trace explains every wakeup later than TraceAbove ns, and every
	// xrun, with the kernel's tracer (spikes.json).
	Trace      bool
	TraceAbove int64
	// TraceDebug, if not nil, gets the events of every spike whose two
	// accounts disagree (ktrace.Options.Debug).
	TraceDebug io.Writer
	// Render renders the report of the results directory.
	Render func(dir string) error
	// OnSample, if not nil, sees every period's sample as it is
	// accounted into the results directory (the metrics, package
	// metrics): both count the same periods. It runs on the goroutine
	// that reads the engine's samples and must be quick.
	OnSample func(*rundata.Sample)
	// OnSpike, if not nil, sees every spike the tracer explains.
	OnSpike func(rundata.Spike)
	// OnRoundTrip and OnGlitch, if not nil, see a loopback's round trip
	// (s: a monitor's newest second's median, as it is heard; run's last
	// second's, at each phase's end) and each glitch heard, by what came
	// with it ("xrun", "pointer_jump", "alone").
	OnRoundTrip func(seconds float64)
	OnGlitch    func(kind string)

	// Rotate, for a run of one phase (latencytest monitor), hands the
	// phase over to a new results directory every Rotate of stream time
	// while one engine measures on (rotate.go); 0: never. Duration 0
	// then runs until ctx ends.
	Rotate time.Duration
	// NextOut names the results directory of the rotation that starts
	// at start (it must not exist).
	NextOut func(start time.Time) (string, error)
	// MakeRoom, if not nil, is called when a rotation's hand-over found
	// no space left on the disk, with the directory being written; it
	// removes an old one and says whether it did (the hand-over is then
	// tried again).
	MakeRoom func(current string) bool
	// Rotated, if not nil, is called with each results directory a
	// rotation completed (not the last, which Run completes and
	// returns), on the goroutine that reads the samples.
	Rotated func(dir string)

	Stdout   io.Writer // summary
	Stderr   io.Writer // progress and xrun lines
	Progress ProgressMode
}

// streams are the directions a stream may take (audio.Config.Stream).
var streams = []string{"playback", "capture", "duplex"}

// maxLoops bounds --loops: that many of the longest periods (65536
// frames at 8 kHz) still count in int64 nanoseconds, and at the shortest
// they last days.
const maxLoops int64 = 1e9

// Validate checks the invariants of a measurement that hold however it
// was asked for: the stream's rate, period, shape and direction, the
// sound it plays, the simulated load, the real-time priority, the
// repetitions and the length, what the driver can do (once Driver is
// resolved) and the label. It checks the measurement as asked, before an
// RTC driver's period (one interrupt) replaces the rate and period. Each
// error is bad input naming run's flag and what it allows, so that run
// and monitor refuse a measurement alike; the flags' own forms, the files
// they name and the device are the caller's and the engine's to check.
func (c *Config) Validate() error {
	if err := c.validateShape(); err != nil {
		return err
	}
	a := c.Audio
	switch {
	case a.Channels < 1 || a.Channels > 64:
		return badinput.Errorf("--channels %d: allowed 1 to 64", a.Channels)
	case a.Periods < 2 || a.Periods > 64:
		return badinput.Errorf("--periods %d: allowed 2 to 64", a.Periods)
	case c.CPULoad < 0 || c.CPULoad > 100:
		return badinput.Errorf("--cpu-load %d: allowed 0 to 100 (percent of a period)", c.CPULoad)
	case c.RT.Priority < 0 || c.RT.Priority > 99:
		return badinput.Errorf("--prio %d: allowed 0 (SCHED_OTHER) or 1 to 99 (SCHED_FIFO)", c.RT.Priority)
	case c.Loops < 0 || c.Loops > maxLoops:
		return badinput.Errorf("--loops %d: allowed 1 to %d (0: none)", c.Loops, maxLoops)
	case c.BreakAbove < 0:
		return badinput.Errorf("--break-above %v: allowed a positive duration (0: off)", time.Duration(c.BreakAbove))
	case (c.Duration <= 0 && !(c.Duration == 0 && c.Loops > 0)) || c.Duration > 7*24*time.Hour:
		return badinput.Errorf("--duration %v: allowed more than 0 and up to 168h (a Go duration such as 30s or 5m)", c.Duration)
	case !slices.Contains(streams, a.Stream):
		return badinput.Errorf("--stream %q: allowed playback, capture or duplex", a.Stream)
	case a.File != "" && a.ToneHz != 0:
		return badinput.Errorf("--file and --tone: choose one")
	case a.Loopback && (a.Stream != "duplex" || a.File != "" || a.ToneHz != 0 || a.Channels < 2):
		return badinput.Errorf("--loopback: wants --stream duplex and 2 channels or more, without --tone or --file (it plays its own sine and MLS)")
	case c.Repeat < 1 || c.Repeat > 1000:
		return badinput.Errorf("--repeat %d: allowed 1 to 1000", c.Repeat)
	case a.ToneHz > float64(a.Rate)/2:
		return badinput.Errorf("--tone %g: allowed 0 (silence) to %d Hz (half the rate)", a.ToneHz, a.Rate/2)
	}
	if periodNS := int64(a.PeriodFrames) * 1e9 / int64(a.Rate); c.Duration != 0 && int64(c.Duration) < periodNS {
		return badinput.Errorf("--duration %v: shorter than one period (%v)", c.Duration, time.Duration(periodNS))
	}
	if err := c.validateDriver(); err != nil {
		return err
	}
	if strings.ContainsAny(c.Label, "\n\r") || len(c.Label) > 200 {
		return badinput.Errorf("--label: one line of up to 200 bytes")
	}
	return c.ValidatePhases()
}

// validateShape checks the stream's rate and period size: the ranges a
// card and the histogram's period arithmetic are sure of.
func (c *Config) validateShape() error {
	switch a := c.Audio; {
	case a.Rate < 8000 || a.Rate > 768000:
		return badinput.Errorf("--rate %d: allowed 8000 to 768000 Hz", a.Rate)
	case a.PeriodFrames < 16 || a.PeriodFrames > 65536:
		return badinput.Errorf("--period %d: allowed 16 to 65536 frames", a.PeriodFrames)
	}
	return nil
}

// validateDriver checks what the stream asks of the driver resolved (none
// yet when Driver is ""): the timer and the RTC play no sound, and only
// ALSA has an access mode other than mmap or a loopback.
func (c *Config) validateDriver() error {
	a := c.Audio
	if c.Driver == "" {
		return nil
	}
	switch {
	case (a.File != "" || a.ToneHz != 0) && (c.Driver == "timer" || c.Driver == "rtc"):
		what := "--file " + a.File
		if a.File == "" {
			what = fmt.Sprintf("--tone %g", a.ToneHz)
		}
		why := ""
		if c.AutoDriver {
			why = " (--driver auto found no sound card)"
		}
		return badinput.Errorf("%s: the %s driver%s plays no sound; allowed with --driver alsa, portaudio or jack", what, c.Driver, why)
	case a.Access != "mmap" && a.Access != "rw":
		return badinput.Errorf("--access %q: allowed mmap or rw", a.Access)
	case a.Access == "rw" && c.Driver != "alsa":
		return badinput.Errorf("--access rw: only with the ALSA driver (the driver is %s)", c.Driver)
	case a.Loopback && c.Driver != "alsa":
		return badinput.Errorf("--loopback: only with the ALSA driver (the driver is %s)", c.Driver)
	}
	return nil
}

// ValidateSizes is Validate for the period sizes of a --period list, run
// once per size, beside the Config's own period: each in range, the first
// out of it named, and the measurement valid at the largest (a length
// shorter than its period measures nothing).
func (c *Config) ValidateSizes(sizes []int) error {
	for _, n := range sizes {
		one := *c
		one.Audio.PeriodFrames = n
		if err := one.validateShape(); err != nil {
			return err
		}
	}
	if err := c.validateShape(); err != nil {
		return err
	}
	one := *c
	if len(sizes) > 0 {
		one.Audio.PeriodFrames = max(c.Audio.PeriodFrames, slices.Max(sizes))
	}
	return one.Validate()
}

// ValidatePhases checks the phases the tests and repetitions make, once
// the tests are known: no more than a results directory holds, as report
// and compare read it. Validate calls it too.
func (c *Config) ValidatePhases() error {
	switch n := len(c.Tests) * c.Repeat; {
	case n > rundata.MaxPhases:
		return badinput.Errorf("--repeat %d: %d tests × %d repetitions are %d phases; a results directory holds at most %d (report and compare read no more)",
			c.Repeat, len(c.Tests), c.Repeat, n, rundata.MaxPhases)
	case len(c.CPUs)*n > rundata.MaxCPUPhases:
		return badinput.Errorf("--cpus: %d CPUs × %d phases: run.json holds at most %d such records; give fewer CPUs, tests or repetitions",
			len(c.CPUs), n, rundata.MaxCPUPhases)
	}
	return nil
}

// Run measures every phase and writes the results directory. Cancelling
// ctx stops the run within a period (or, while a load starts, within a
// second): what was measured is kept, run.json says interrupted, no phase
// runs afterwards and no process is left. A kill keeps what was measured
// too (see results.go). Bad input (internal/badinput) means --out cannot
// be a results directory, or the engine's driver refused the device or its
// settings before any stream opened; the results directory is then left
// as it was, as nothing was measured. With cfg.Rotate, what Run returns
// is the last results directory's run.
func Run(ctx context.Context, cfg Config) (*rundata.Run, error) {
	if cfg.Rotate > 0 && (len(cfg.Tests) != 1 || cfg.Repeat > 1 || cfg.NextOut == nil) {
		return nil, errors.New("runner: Rotate needs one phase and NextOut")
	}
	run := newRun(cfg)
	res, err := openResults(cfg.Out, run, cfg.Force)
	if err != nil {
		return nil, err
	}
	nice.SetAll(parentNice) // best effort: needs CAP_SYS_NICE
	s := &session{cfg: cfg, pr: newPrinter(cfg.Stderr, cfg.Progress), run: run, res: res, acts: map[int]float64{},
		names: repeated(cfg.Tests, cfg.Repeat)}
	// monitor (Rotate) keeps no server block: one profile over its whole
	// life would grow without end and be charged to its last directory.
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil && cfg.Rotate == 0 {
		s.server = detectServer(cfg.Driver, string(maps))
	}
	defer func() { s.res.close() }() // a rotation replaces s.res
	defer s.separate()()
	defer s.liftBudget(ctx)()
	if cfg.Trace {
		if cfg.BreakAbove > 0 { // the wakeup that breaks is explained, its window kept
			s.cfg.TraceAbove = min(cfg.TraceAbove, cfg.BreakAbove)
		}
		s.trace = s.startTrace(ctx)
		defer s.trace.stop()
	}
	for i, name := range s.names {
		if ctx.Err() != nil {
			break
		}
		if cfg.Repeat > 1 && i%len(cfg.Tests) == 0 {
			s.pr.linef("repetition %d of %d", i/len(cfg.Tests)+1, cfg.Repeat)
		}
		err := s.phase(ctx, i, name)
		if badinput.Is(err) && !s.opened {
			s.res.discard()
			return nil, err
		}
		if err != nil {
			s.run.End = nowWall()
			s.run.Interrupted, s.run.Incomplete = true, false
			s.res.writeRun(s.run)
			return s.run, fmt.Errorf("phase %s: %w", name, err)
		}
		if err := s.res.writeRun(s.run); err != nil {
			return s.run, err
		}
		if s.run.Broke() {
			break
		}
	}
	return s.run, s.finish(ctx)
}

// session is a run in progress. run, res, hists and acts are the
// current results directory's (a rotation replaces them).
type session struct {
	cfg    Config
	pr     *printer
	run    *rundata.Run
	res    *results
	trace  *spikeTrace // nil without --trace
	hists  []*rundata.Histogram
	acts   map[int]float64 // phase index -> last latency, µs
	opened bool            // an engine has opened its stream
	// loadCPUs is where the stressors run: every CPU the run may use
	// (nil: inherited).
	loadCPUs []int
	// names is every phase to run, in order: the tests, repeated.
	names []string
	// server is the sound server the run goes through (--driver jack),
	// whose account of each phase's late cycles run.json keeps.
	server serverKind
}

// repeated is tests n times over (at least once).
func repeated(tests []string, n int) []string {
	var all []string
	for range max(n, 1) {
		all = append(all, tests...)
	}
	return all
}

// newRun is run.json before the first phase: the configuration asked for
// and the system.
func newRun(cfg Config) *rundata.Run {
	run := &rundata.Run{
		Schema:       rundata.SchemaVersion,
		Tool:         cfg.Version,
		Command:      cfg.Command,
		Label:        cfg.Label,
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
		Repeat:       repeatOrZero(cfg.Repeat),
		Loops:        cfg.Loops,
		BreakAboveNS: cfg.BreakAbove,
		RT:           rundata.RTSetup{Asked: cfg.RT},
		CPUs:         cfg.CPUs,
		Phases:       []rundata.Phase{},
		Incomplete:   true,
	}
	setShape(run)
	if cfg.Checks != nil {
		run.Checks = cfg.Checks()
	}
	if cfg.RTTasks != nil {
		run.RTTasks = cfg.RTTasks()
	}
	return run
}

// phase runs phase i: starts its load, measures, stops the load and adds
// the phase to run.json. A load that cannot start skips the phase; ctx
// ending before the stream opened adds nothing.
func (s *session) phase(ctx context.Context, i int, name string) error {
	ph := rundata.Phase{Name: name}
	if s.cfg.Repeat > 1 {
		ph.Repeat = i/len(s.cfg.Tests) + 1
	}
	var load Load
	if name != IdlePhase {
		ph.Stressor = name
		s.pr.linef("[%s] starting the %s load", name, name)
		var err error
		if load, err = s.cfg.StartLoad(ctx, name, s.loadCPUs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			ph.Skipped = err.Error()
			s.pr.linef("[%s] skipped: %s", name, ph.Skipped)
			s.run.Phases = append(s.run.Phases, ph)
			return s.res.writeRun(s.run)
		}
	}
	stopLines := func() {}
	if l, ok := load.(Liner); ok {
		stopLines = s.pr.follow(name, l.NewLines)
	}
	var prof *profiler
	var server *rundata.Server
	if s.server.name == rundata.ServerPipeWire {
		prof, server = s.startProfiler(ctx, name)
	}
	t0 := sysinfo.ReadCPUTimes(os.DirFS("/"))
	ph.LoadAvg = t0.Load1 // before the phase: a killed run's record has it
	acc, err := runPhase(ctx, s.cfg, i, &ph, s, len(s.run.Phases))
	if prof != nil {
		server = prof.stop()
		server.DetectedBy = s.server.how
	}
	ph.StealPct = math.Round(100*sysinfo.StealPct(t0, sysinfo.ReadCPUTimes(os.DirFS("/")))) / 100
	stopLines()
	if load != nil {
		s.stopLoad(load, &ph)
		if l, ok := load.(Liner); ok {
			s.pr.lines(name, l.NewLines()) // the last rounds, from its final figures
		}
	}
	if acc == nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ph.CutShort = ctx.Err() != nil
	phaseServer(s.run, &ph, s.server, server)
	s.phaseEnded(&ph, acc)
	return err
}

// phaseEnded adds the phase measured into acc to the results directory's
// run, with its spikes.
func (s *session) phaseEnded(ph *rundata.Phase, acc *accumulator) {
	s.acts[len(s.run.Phases)] = float64(acc.LastLatency()) / 1000
	s.run.Phases = append(s.run.Phases, *ph)
	if len(acc.perCPU) > 0 {
		s.hists = append(s.hists, acc.perCPU...)
	} else {
		s.hists = append(s.hists, acc.Hist)
	}
	if s.trace != nil {
		if terr := s.trace.write(s.res, &s.run.Phases[len(s.run.Phases)-1]); terr != nil {
			s.pr.linef("trace: %v", terr)
		}
	}
}

// stopLoad stops the phase's load and keeps its figures, and its error
// among them.
func (s *session) stopLoad(load Load, ph *rundata.Phase) {
	stats, err := load.Stop()
	ph.StressorStats = stats
	if err != nil {
		s.pr.linef("[%s] stopping the load: %v", ph.Name, err)
		if ph.StressorStats == nil {
			ph.StressorStats = map[string]any{}
		}
		ph.StressorStats["error"] = err.Error()
	}
}

// finish writes the final run.json, the histogram file and the report,
// and prints the summary.
func (s *session) finish(ctx context.Context) error {
	s.run.End = nowWall()
	var trace *rundata.Trace
	if s.trace != nil {
		trace = s.trace.stop()
	}
	return s.complete(ctx.Err() != nil, trace)
}

// complete ends the current results directory, whose run's End is set:
// its final run.json with trace (nil without one), the histogram file
// and the report, and the summary.
func (s *session) complete(interrupted bool, trace *rundata.Trace) error {
	s.run.Interrupted, s.run.Incomplete = interrupted, false
	if c := s.run.Card; c != nil {
		c.Timestamp = s.run.CardTimestamp()
	}
	if trace != nil {
		s.run.Trace = trace
		if trace.Enabled && trace.Note != "" { // a trace that did not start said so then
			s.pr.linef("trace: %s", trace.Note)
		}
	}
	if err := s.res.writeRun(s.run); err != nil {
		return err
	}
	if s.cfg.HistFile != "" {
		if err := atomicfile.WriteFile(s.cfg.HistFile, cyclictest.EncodeHistFile(s.hists)); err != nil {
			return err
		}
	}
	if s.cfg.Render != nil {
		if err := s.cfg.Render(s.res.path); err != nil {
			s.pr.linef("report: %v", err)
		}
	}
	summary(s.cfg.Stdout, s.run, s.acts, s.res.path)
	return nil
}

// setShape derives the period and buffer lengths from the stream's shape.
func setShape(run *rundata.Run) {
	if run.Rate > 0 {
		run.PeriodUS = float64(run.PeriodFrames) * 1e6 / float64(run.Rate)
		run.BufferUS = run.PeriodUS * float64(run.Periods)
	}
}

// runPhase runs the engine for one phase and fills ph. With cfg.Rotate
// the phase is handed over to a new results directory at every rotation
// (rotate.go): ph is then the last directory's.
func runPhase(ctx context.Context, cfg Config, i int, ph *rundata.Phase, s *session, index int) (*accumulator, error) {
	r := &phaseRun{cfg: cfg, i: i, index: index, ph: ph, s: s, stopProgress: func() {}, stopSync: func() error { return nil }}
	defer r.closeFile()
	ph.StartWall = nowWall()
	// The phase is listed in run.json, with its samples file (each CPU's
	// under --cpus), before its engine starts: a kill from now on leaves
	// it there, incomplete.
	var err error
	if len(cfg.CPUs) > 0 {
		if r.cpus, err = s.res.cpusStarting(ph, i, cfg.CPUs, cfg.NoSamples); err != nil {
			return nil, err
		}
	}
	if r.file, err = s.res.phaseStarting(s.run, ph, i, cfg.NoSamples || len(cfg.CPUs) > 0); err != nil {
		s.res.dropCPUs(r.cpus)
		return nil, err
	}
	if s.trace != nil {
		s.trace.wakeups()
	}
	ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	req := engineRequestOf(ctx, cfg)
	var stream io.Writer
	if req.Config.StreamCapture {
		r.stream = &captureStream{}
		stream = r.stream
	}
	res, err := runEngine(ctx, cfg, req, stream, r.sample, r.hello)
	if r.stream != nil {
		if serr := r.stream.failed(); serr != nil {
			s.pr.linef("[%s] %v: not heard", ph.Name, serr)
		}
	}
	if err == nil {
		err = r.rot.err
	}
	r.endProgress()
	syncErr := errors.Join(r.stopSync(), r.stopCPUs())
	ph.EndWall = nowWall()
	ph.Incomplete = false
	if r.acc == nil {
		s.res.dropSamples(ph, r.file)
		s.res.dropCPUs(r.cpus)
		r.file = nil
		return nil, err
	}
	var bye *engineBye
	if res != nil {
		bye = &res.bye
		ph.StartMonoNS = res.bye.Start
		ph.Lost = int64(res.bye.Lost) - r.rot.lostBefore
		r.broke(res.bye.Broke)
		if res.killed {
			s.pr.linef("[%s] the engine did not stop within %v of SIGTERM: killed", ph.Name, engineGrace)
		}
	}
	if r.rot.start != 0 { // a rotating phase's directory starts at its boundary
		ph.StartMonoNS = r.rot.start
	}
	if res != nil {
		ph.CardReported = res.bye.Reported
		r.acc.cardDelay(rundata.CardAhead(ph.CardReported, s.run.Stream))
		err = errors.Join(err, r.keepCapture(res.capture.Bytes()))
	}
	err = r.finish(err, syncErr)
	if r.cpus != nil {
		err = r.finishCPUs(bye, err)
	}
	return r.acc, err
}

// engineRequestOf is what the engine is asked to do in every phase: with
// the stall and the glitches a test put on ctx (internal/testhook), if
// any.
func engineRequestOf(ctx context.Context, cfg Config) engineRequest {
	req := engineRequest{
		Driver:     cfg.Driver,
		Config:     cfg.Audio,
		CPULoad:    cfg.CPULoad,
		DurationNS: int64(cfg.Duration), // 0: until stopped
		Loops:      cfg.Loops,
		BreakAbove: cfg.BreakAbove,
		StallAt:    -1,
		StallCPU:   -1,
		RT:         cfg.RT,
		CPUs:       cfg.CPUs,
	}
	if st, ok := testhook.StallOf(ctx); ok {
		req.StallAt, req.StallForNS, req.StallCPU = st.At, int64(st.For), st.CPU
	}
	req.Glitches = testhook.GlitchesOf(ctx)
	switch {
	case cfg.Audio.Loopback && cfg.Rotate > 0:
		// A monitor's capture never ends: heard as it comes (hearing).
		req.Config.StreamCapture = true
	case cfg.Audio.Loopback:
		req.Config.KeepFrames = keepFrames(cfg)
	}
	return req
}

// phaseRun is one phase while its engine runs.
type phaseRun struct {
	cfg          Config
	i            int
	ph           *rundata.Phase
	s            *session
	index        int      // the phase's index in run.json
	file         *os.File // the samples file (nil with NoSamples)
	acc          *accumulator
	shape        rundata.SampleHeader // the stream's, as its samples file's header says it
	opened       engineHello          // what the engine opened
	stopProgress func()
	stopSync     func() error       // ends the samples file's periodic flush and sync
	cancel       func()             // stops the engine
	rot          rotation           // with cfg.Rotate
	lines        *xrunLines         // the xruns' lines on the terminal
	cpus         []*cpuStream       // each CPU's thread under cfg.CPUs; nil otherwise
	heard        rundata.CaptureMap // a loopback's capture against the samples
	stream       *captureStream     // a monitor's loopback capture, as it comes
	hearing      *hearing           // what hears it
}

// hello sets the phase up once the engine has opened its stream: what
// the driver and kernel granted (in the first phase), the accounting of
// its periods, the tracer's audio thread.
func (r *phaseRun) hello(h engineHello) error {
	r.s.opened = true
	r.opened = h
	if r.stream != nil {
		if err := r.startHearing(h.Granted); err != nil {
			return err
		}
	}
	if r.s.run.RT.Obtained.Policy == "" {
		r.granted(h)
	}
	start := mono.Now()
	if r.cpus != nil {
		if err := r.threadsOpened(h.Threads, start); err != nil {
			return err
		}
	}
	if err := r.open(start); err != nil {
		return err
	}
	if r.cpus != nil {
		if err := r.openCPUs(start); err != nil {
			return err
		}
	}
	if r.s.trace != nil {
		audio := []ktrace.Thread{{TID: h.TID, Comm: h.Comm}}
		if r.cpus != nil {
			audio = audio[:0]
			for _, th := range h.Threads {
				audio = append(audio, ktrace.Thread{TID: th.TID})
			}
		}
		r.s.trace.phase(r.index, audio, r.ph.Stressor)
	}
	return nil
}

// open starts accounting the phase's periods into its results directory,
// the phase beginning at start (CLOCK_MONOTONIC ns): the samples file's
// writer, the accumulator, the progress display.
func (r *phaseRun) open(start int64) error {
	g := r.opened.Granted
	r.shape = rundata.NewSampleHeader(g.Rate, g.PeriodFrames, g.Periods)
	var w *rundata.SampleWriter
	if r.file != nil {
		w = rundata.NewSampleWriter(r.file, r.shape)
	}
	r.lines = newXrunLines(r.ph.Name, r.s.pr.linef)
	onXrun := r.lines.add
	if r.cpus != nil {
		onXrun = nil // each CPU's thread has its lines
	}
	r.acc = newAccumulator(w, r.shape, r.opened.NominalDSP, onXrun)
	stop, err := r.s.res.phaseOpened(r.s.run, r.ph, start, r.opened.NominalDSP, r.acc, r.file)
	if err != nil {
		return err
	}
	r.stopSync = stop
	length := r.cfg.Duration
	if r.cfg.Loops > 0 && (length == 0 || r.cfg.Loops*r.shape.PeriodNS < int64(length)) {
		length = time.Duration(r.cfg.Loops * r.shape.PeriodNS) // the nominal time of --loops periods
	}
	var left runLeft // monitor's rotations run for ever: no run left to show
	if r.cfg.Rotate == 0 {
		left = runLeft{phase: r.i + 1, phases: len(r.s.names)}
		left.after = time.Duration(left.phases-left.phase) * length
	}
	r.stopProgress = r.s.pr.progress(r.ph.Name, length, left, r.acc)
	return nil
}

// sample takes a period's sample from the engine.
func (r *phaseRun) sample(s *rundata.Sample) {
	if r.cfg.Rotate > 0 {
		r.rotation(s)
	}
	if r.cpus != nil {
		r.cpuSample(s)
	}
	r.acc.sample(s)
	if s.Loop == 0 { // under --cpus the stream's thread: the others are timers
		if r.hearing != nil {
			r.hearing.sample(s)
		} else {
			r.heard.Add(s)
		}
	}
	if r.cfg.OnSample != nil {
		r.cfg.OnSample(s)
	}
	if r.s.trace != nil {
		r.s.trace.offer(s)
	}
}

// broke records, and says, the wakeup later than --break-above that ended
// the phase and the run (nil: none did).
func (r *phaseRun) broke(b *rundata.Break) {
	if b == nil {
		return
	}
	r.ph.Break = b
	r.s.pr.linef("[%s] break: period %d woke %d µs late, above --break-above %d µs: the run stops here (as cyclictest -b)",
		r.ph.Name, b.Period, b.LatencyNS/1000, r.cfg.BreakAbove/1000)
}

// granted records, in the first phase, what the driver and kernel
// granted.
func (r *phaseRun) granted(h engineHello) {
	run, g := r.s.run, h.Granted
	run.RT = h.RT
	run.Device, run.Format, run.Access, run.Card = g.Device, g.Format, g.Access, g.Card
	run.CaptureCard, run.CaptureChannels, run.CaptureFormat = g.CaptureCard, g.CaptureChannels, g.CaptureFormat
	run.Rate, run.Channels, run.PeriodFrames, run.Periods = g.Rate, g.Channels, g.PeriodFrames, g.Periods
	run.Simulated = g.Simulated
	run.DriverNotes = g.Notes
	setShape(run)
	r.s.pr.linef("%s", streamLine(run, r.cfg.AutoDriver))
	for _, n := range g.Notes {
		r.s.pr.linef("%s: %s", run.Driver, n)
	}
	for _, ref := range h.RT.Refused {
		r.s.pr.linef("not obtained: %s", ref)
	}
}

// streamLine is a run's first line: what is measured, as granted, e.g.
// "alsa hw:0,0 (HDA Intel PCH): 64 frames × 2 (2.7 ms) at 48000 Hz, mmap,
// SCHED_FIFO 80, audio thread on CPU 1"; what was asked and not obtained
// follows it on lines of its own.
func streamLine(run *rundata.Run, auto bool) string {
	what := run.Device
	if !strings.HasPrefix(what, run.Driver) {
		what = run.Driver + " " + what
	}
	line := fmt.Sprintf("%s: %d frames × %d (%.1f ms) at %d Hz", what, run.PeriodFrames, run.Periods, run.BufferUS/1000, run.Rate)
	if run.Access != "" {
		line += ", " + run.Access
	}
	o := run.RT.Obtained
	line += ", " + o.Policy
	if o.Policy == "SCHED_FIFO" || o.Policy == "SCHED_RR" {
		line += fmt.Sprintf(" %d", o.Priority)
	}
	switch {
	case len(run.CPUs) == 2 && run.Driver != "timer":
		line += fmt.Sprintf(", the stream's thread on CPU %d, a timer thread on CPU %d", run.CPUs[0], run.CPUs[1])
	case len(run.CPUs) > 2 && run.Driver != "timer":
		line += fmt.Sprintf(", the stream's thread on CPU %d, a timer thread on each of CPUs %s", run.CPUs[0], cpulist.Format(run.CPUs[1:]))
	case len(run.CPUs) > 0:
		line += ", a thread pinned to each of CPUs " + cpulist.Format(run.CPUs)
	case len(o.Affinity) > 0:
		line += ", audio thread on CPU " + cpulist.Format(o.Affinity)
	}
	switch {
	case auto && run.Simulated:
		line += " (--driver auto: no sound card found; the timer stands in for one, its xruns simulated)"
	case auto:
		line += " (--driver auto)"
	}
	return line
}

// finish flushes the samples file and fills the phase's statistics; err
// is the engine's, which it returns unless the file failed first, and
// syncErr the periodic sync's.
func (r *phaseRun) finish(err, syncErr error) error {
	acc := r.acc
	acc.mu.Lock()
	if acc.writer != nil {
		if ferr := acc.writer.Flush(); ferr != nil && acc.writeErr == nil {
			acc.writeErr = ferr
		}
		if acc.writeErr == nil {
			acc.writeErr = syncErr
		}
		if acc.writeErr != nil && err == nil {
			err = fmt.Errorf("samples file: %w", acc.writeErr)
		}
	}
	acc.mu.Unlock()
	acc.fill(r.ph) // without a start from the engine's bye (killed before it), the first period's due
	if err == nil && r.file != nil {
		err = closeSamples(r.file)
		r.file = nil
	}
	return err
}

// endProgress ends the phase's terminal lines, the samples all read: the
// sum of the last second's xrun lines, then the progress display and its
// "done" line.
func (r *phaseRun) endProgress() {
	if r.lines != nil {
		r.lines.flush()
	}
	r.stopProgress()
}

func (r *phaseRun) closeFile() {
	if r.file != nil {
		r.file.Close()
	}
	r.closeCPUFiles()
}

// summary prints the run's closing block (rundata.WriteSummary) and where
// the results are.
func summary(w io.Writer, run *rundata.Run, acts map[int]float64, dir string) {
	spikes, _ := rundata.ReadSpikes(dir) // none without --trace
	rundata.WriteSummary(w, run, acts, spikes)
	report := filepath.Join(dir, "index.html")
	if _, err := os.Stat(report); err == nil {
		fmt.Fprintf(w, "report: %s\n", report)
	} else {
		fmt.Fprintf(w, "results: %s\n", filepath.Join(dir, rundata.RunFile))
	}
}

// repeatOrZero is run.json's repeat: 0 for a run that ran its phases once.
func repeatOrZero(n int) int {
	if n > 1 {
		return n
	}
	return 0
}
