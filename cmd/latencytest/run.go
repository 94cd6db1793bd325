package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/atomicfile"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"latencytest/internal/cpulist"
	"latencytest/internal/testhook"
	"latencytest/internal/threads"
	"latencytest/rundata"
	"latencytest/runner"
	"latencytest/sysinfo"
)

// classicSuite is the default --tests: the five stress tests of Benno
// Senoner's latencytest, after an idle reference, and the hackbench load
// that reproduced the aplay underrun regression.
const classicSuite = "idle,x11,proc,disk-write,disk-copy,disk-read,hackbench"

// runFlags are `run`'s settings as parsed, before validation.
type runFlags struct {
	driver, device, captureDevice, stream string
	access                                string
	rateGiven                             bool
	rate, channels, period, periods       int
	rtcRate                               int
	cpuLoad, prio                         int
	affinity                              string
	cpus                                  string // --cpus: all, a list, or "" for one thread
	noMlock, noDMALatency, liftRTBudget   bool
	tests                                 string
	sizes                                 periodList // --period, one size or a list
	repeat                                int
	duration                              time.Duration
	loops                                 int64         // 0: none
	breakAbove                            time.Duration // 0: off
	out, histfile                         string
	tone                                  float64
	loopback                              bool
	file                                  string
	verbose, quiet, noSamples, noReport   bool
	force                                 bool
	testStall, testGlitch                 string
	glitches                              []audio.GlitchAt // --test-glitch's, parsed by config
	stall                                 testhook.Stall   // --test-stall's, parsed by config
	trace                                 bool
	traceAbove                            time.Duration
	label                                 string
	failAbove                             time.Duration // 0: off
	maxXruns                              int           // -1: off
}

// badFlag is bad input (internal/badinput): printed as one line, exit 2.
func badFlag(format string, a ...any) error { return badinput.Errorf(format, a...) }

// runDoc is run's help besides its flags.
func runDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest run [flags]"},
		about: `Measures the wakeup latency of an audio thread, phase by phase under the --tests loads,
writes a results directory and renders its report.`,
		examples: []string{
			"latencytest run --tests idle,hackbench --duration 1m --fail-above 5ms",
			"latencytest run --device hw:1,0 --access rw --period-time 125000 --buffer-time 500000 --cpu-load 0 --tests hackbench --hackbench-groups 6",
			"latencytest run --period 32,64,128,256 --tests idle,hackbench",
		},
		groups: runGroups(),
	}
}

// runSettings are what run's flags set, once its flag set is parsed.
type runSettings struct {
	f     runFlags
	aplay *aplayFlags
	loads loadSet
	mf    *metricsFlags
}

// runFlagSet defines run's flags: the one definition its parsing, its
// -h, its man page and its completion are made from.
func runFlagSet() (*flag.FlagSet, *runSettings) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	s := &runSettings{}
	f := &s.f
	s.aplay = streamFlags(fs, f, "auto", 80)
	f.sizes = periodList{sizes: []int{64}}
	fs.Var(&f.sizes, "period", "period size, frames; a list such as 32,64,128 runs the phases once per size")
	fs.StringVar(&f.tests, "tests", classicSuite, "phases to run in order, comma-separated: idle and stressor names")
	fs.DurationVar(&f.duration, "duration", 30*time.Second, "length of each phase")
	fs.Int64Var(&f.loops, "loops", 0, "end each phase after this many periods, as cyclictest -l (without --duration: however long they take)")
	fs.DurationVar(&f.breakAbove, "break-above", 0, "end the run at the first wakeup later than this (e.g. 500us), as cyclictest -b; with --trace its window is explained (default: off)")
	fs.IntVar(&f.repeat, "repeat", 1, "run the phases that many times over, into one results directory (1-1000, and at most 128 phases in all)")
	fs.StringVar(&f.out, "out", "", "results directory (default results/HOST-KERNEL-YYYYMMDD-HHMMSS)")
	fs.StringVar(&f.label, "label", "", `a name for the run where it is compared, e.g. "with patch" (default: its directory's name)`)
	fs.BoolVar(&f.force, "force", false, "replace an earlier run's results directory at --out, whole (refused otherwise)")
	fs.StringVar(&f.histfile, "histfile", "", "also write the histograms in cyclictest's --histfile format, one column per phase (with --cpus, per CPU of each phase)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress display")
	fs.BoolVar(&f.noReport, "no-report", false, "do not render index.html at the end")
	fs.StringVar(&f.cpus, "cpus", "", "measure on every CPU listed at once, one thread pinned to each at the same priority and period, as cyclictest --smp: all, or a list such as 0,2-3 (with a card or the RTC, its stream on the first CPU listed, timer threads on the others)")
	fs.StringVar(&f.testStall, "test-stall", "", "testing hook: PERIOD:DURATION stalls the loop at that period of each phase; PERIOD:DURATION@CPU only that CPU's under --cpus")
	testGlitchFlag(fs, f)
	fs.DurationVar(&f.failAbove, "fail-above", 0, "exit 1 when a phase's worst wakeup was later than this (e.g. 1ms), for scripts and CI (default: off)")
	fs.IntVar(&f.maxXruns, "max-xruns", -1, "exit 1 when a phase had more xruns than this (0 or more), for scripts and CI (default: off)")
	s.loads = newLoads(fs)
	s.mf = newMetricsFlags(fs)
	return fs, s
}

func runMain(args []string, stdout, stderr io.Writer) int {
	fs, s := runFlagSet()
	if code, ok := parseFlags(fs, args, stdout, stderr, runDoc()); !ok {
		return code
	}
	f, aplay, loads, mf := &s.f, s.aplay, s.loads, s.mf
	f.period = f.sizes.sizes[0]
	if f.loops > 0 && !givenFlags(fs)["duration"] {
		f.duration = 0 // the phase lasts its --loops periods
	}
	if err := aplay.apply(fs, f); err != nil {
		fmt.Fprintf(stderr, "latencytest run: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "latencytest run: unexpected argument %q (flags only)\n", fs.Arg(0))
		return 2
	}
	cfg, err := f.config(&loads)
	if err != nil {
		fmt.Fprintf(stderr, "latencytest run: %v\n", err)
		return 2
	}
	if err := attach(&cfg, "run", args); err != nil {
		fmt.Fprintf(stderr, "latencytest run: %v\n", err)
		return 1
	}
	cfg.Stdout, cfg.Stderr = stdout, stderr
	cfg.Progress = runner.ProgressLines
	if f.quiet {
		cfg.Progress = runner.ProgressNone
	} else if isTerminal(stderr) {
		cfg.Progress = runner.ProgressBar
	}
	if !f.noReport {
		cfg.Render = render()
	}
	gate := rundata.Gate{MaxLatencyNS: -1, MaxXruns: f.maxXruns}
	switch {
	case f.failAbove < 0:
		fmt.Fprintf(stderr, "latencytest run: --fail-above %v: allowed a positive duration (0: off)\n", f.failAbove)
		return 2
	case f.maxXruns < 0 && givenFlags(fs)["max-xruns"]: // -1 is only the default's "off", never asked for
		fmt.Fprintf(stderr, "latencytest run: --max-xruns %d: allowed 0 or more (not given: off)\n", f.maxXruns)
		return 2
	case (f.failAbove > 0 || f.maxXruns >= 0) && len(f.sizes.sizes) > 1:
		fmt.Fprintf(stderr, "latencytest run: --fail-above and --max-xruns with a --period list: the floor answers for every size; give one size\n")
		return 2
	case f.failAbove > 0:
		gate.MaxLatencyNS = int64(f.failAbove)
	}
	if mf.on() && len(f.sizes.sizes) > 1 {
		fmt.Fprintf(stderr, "latencytest run: --listen and --metrics-file with a --period list: the metrics are of one period size; give one\n")
		return 2
	}
	_, stopMetrics, err := mf.start(&cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "latencytest run: %v\n", err)
		return 2
	}
	ctx, stop := interruptible(cfg.Children, stderr)
	defer stop()
	ctx = testhook.WithStall(ctx, f.stall)
	ctx = testhook.WithGlitches(ctx, f.glitches)
	var run *rundata.Run
	if sizes := f.sizes.sizes; len(sizes) > 1 {
		err = runner.RunSizes(ctx, cfg, sizes, func(n int) int64 {
			above, _ := f.traceThreshold(int64(n) * 1e9 / int64(cfg.Audio.Rate))
			return above
		}, stdout)
	} else {
		run, err = runner.Run(ctx, cfg)
	}
	if merr := stopMetrics(!badinput.Is(err)); merr != nil && err == nil {
		err = merr
	}
	code := measureExit("run", ctx, err, stderr)
	if code == 0 && run != nil {
		for _, l := range gate.Failures(run) {
			fmt.Fprintf(stderr, "latencytest run: failed: %s\n", l)
			code = 1
		}
	}
	return code
}

// attach gives a measurement what it needs besides its flags: this binary
// (the engine's and the loads'), its command line for run.json and the
// system check's findings.
func attach(cfg *runner.Config, cmd string, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Exe, cfg.Version = exe, version
	cfg.Command = append([]string{"latencytest", cmd}, args...)
	cfg.Checks, cfg.RTTasks = checks(cfg.RT)
	return nil
}

// streamFlags defines the flags `run` and `monitor` share: the driver and
// its stream (aplay's names too), the real-time setup, the samples files
// and the tracer; driver and cpuLoad are the command's defaults. --period is each
// command's own. --driver offers auto and the drivers built in, the ones
// that can run (--driver names the others only to say how to get them).
func streamFlags(fs *flag.FlagSet, f *runFlags, driver string, cpuLoad int) *aplayFlags {
	choiceVar(fs, &f.driver, "driver", driver, append([]string{"auto"}, driverNames()...), "audio driver: auto, timer, alsa, portaudio or jack (auto: a soundcard if there is one, else timer)")
	fs.StringVar(&f.device, "device", "", "device to open (ALSA: hw:CARD,DEV; PortAudio: HOSTAPI, HOSTAPI:NAME or an index; JACK: the server's name)")
	fs.StringVar(&f.captureDevice, "capture-device", "", "capture device for --stream duplex (default: --device)")
	choiceVar(fs, &f.stream, "stream", "playback", []string{"playback", "capture", "duplex"}, "playback, capture or duplex")
	choiceVar(fs, &f.access, "access", "mmap", []string{"mmap", "rw"}, "ALSA access: mmap (the mapped buffer, waiting in poll, as aplay -M) or rw (a blocking write, as plain aplay)")
	fs.IntVar(&f.rate, "rate", 48000, "sample rate, Hz")
	fs.IntVar(&f.channels, "channels", 2, "channels")
	fs.IntVar(&f.periods, "periods", 2, "periods in the buffer")
	fs.IntVar(&f.rtcRate, "rtc-rate", 2048, "with --driver rtc: periodic interrupts per second, a power of two from 2 to 8192 (one period each)")
	fs.IntVar(&f.cpuLoad, "cpu-load", cpuLoad, "simulated DSP load after each wakeup, percent of the period (0-100)")
	fs.IntVar(&f.prio, "prio", 80, "SCHED_FIFO priority of the audio thread (1-99; 0: SCHED_OTHER)")
	fs.StringVar(&f.affinity, "affinity", "", "CPUs the audio thread may run on, e.g. 1 or 0,2-3 (default: all)")
	fs.BoolVar(&f.noMlock, "no-mlock", false, "do not lock the engine's memory")
	fs.BoolVar(&f.noDMALatency, "no-dma-latency", false, "do not hold /dev/cpu_dma_latency at 0")
	fs.BoolVar(&f.liftRTBudget, "lift-rt-budget", false, "lift the kernel's real-time budget (sched_rt_runtime_us) for the run, as root; put back at its end, also if killed")
	fs.Float64Var(&f.tone, "tone", 0, "play a sine of this frequency, Hz (default: silence)")
	fs.BoolVar(&f.loopback, "loopback", false, "with --stream duplex through a loopback (a cable, snd-aloop): play a sine and an MLS, and find the round trip and the glitches in what comes back (ALSA); run hears each phase's capture at its end, monitor as it comes (with --listen or --metrics-file: latencytest_round_trip_seconds, latencytest_glitches_total)")
	fs.StringVar(&f.file, "file", "", "play this WAV file in a loop")
	fs.BoolVar(&f.verbose, "verbose", false, "let drivers' own diagnostics through")
	fs.BoolVar(&f.noSamples, "no-samples", false, "do not write the per-period samples files")
	fs.BoolVar(&f.trace, "trace", false, "record what made each spike late with the kernel's tracer (tracefs; root): spikes.json and the report's culprits")
	fs.DurationVar(&f.traceAbove, "trace-above", 0, "with --trace: a spike is a wakeup later than this, or any xrun (default: half a period)")
	return newAplayFlags(fs)
}

// config validates the flags into a runner configuration. Every error
// names the flag and what it allows, and nothing has been written yet.
// The measurement's own invariants are runner.Config.Validate's (and
// ValidateSizes' for a --period list), checked once the driver is
// resolved; what is checked here is the flags' forms, the files they name
// and what they resolve to. loads are the stressors run's flags
// configured; nil, only idle is a phase.
func (f *runFlags) config(loads *loadSet) (runner.Config, error) {
	policy := "SCHED_FIFO"
	if f.prio == 0 {
		policy = "SCHED_OTHER"
	}
	cfg := runner.Config{
		Audio: audio.Config{
			Device: f.device, CaptureDevice: f.captureDevice, Stream: f.stream, Access: f.access,
			Rate: f.rate, RateGiven: f.rateGiven, Channels: f.channels, PeriodFrames: f.period, Periods: f.periods,
			ToneHz: f.tone, File: f.file, Verbose: f.verbose, Loopback: f.loopback,
		},
		CPULoad:      f.cpuLoad,
		RT:           rundata.RTParams{Policy: policy, Priority: f.prio, Mlockall: !f.noMlock, DMALatency: !f.noDMALatency},
		Repeat:       f.repeat,
		LiftRTBudget: f.liftRTBudget,
		Duration:     f.duration,
		Loops:        f.loops,
		BreakAbove:   int64(f.breakAbove),
		HistFile:     f.histfile,
		NoSamples:    f.noSamples,
		Force:        f.force,
		Children:     &child.Set{},
		Trace:        f.trace,
		TraceDebug:   traceDebug(),
		Label:        f.label,
	}
	if loads != nil {
		cfg.StartLoad, cfg.Children = loads.start, loads.children
	}
	if f.file != "" {
		if st, err := os.Stat(f.file); err != nil || !st.Mode().IsRegular() {
			return cfg, badFlag("--file %s: not a readable WAV file", f.file)
		}
	}
	var err error
	if cfg.Driver, err = f.resolveDriver(); err != nil {
		return cfg, err
	}
	cfg.AutoDriver = f.driver == "auto"
	if err := cfg.ValidateSizes(f.sizes.sizes); err != nil {
		return cfg, err
	}
	if cfg.Audio.Rate, cfg.Audio.PeriodFrames, err = f.shape(cfg.Driver); err != nil {
		return cfg, err
	}
	if cfg.RT.Affinity, err = parseCPUList(f.affinity); err != nil {
		return cfg, err
	}
	if cfg.CPUs, err = f.perCPU(cfg.Driver); err != nil {
		return cfg, err
	}
	if cfg.Tests, err = parseTests(f.tests, loads); err != nil {
		return cfg, err
	}
	if err := cfg.ValidatePhases(); err != nil {
		return cfg, err
	}
	if cfg.TraceAbove, err = f.traceThreshold(int64(cfg.Audio.PeriodFrames) * 1e9 / int64(cfg.Audio.Rate)); err != nil {
		return cfg, err
	}
	if f.stall, err = parseStall(f.testStall); err != nil {
		return cfg, err
	}
	if f.glitches, err = parseGlitches(f.testGlitch); err != nil {
		return cfg, err
	}
	if cfg.Out, err = f.checkOut(cfg.Driver); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkOut is the results directory the flags name (default
// results/HOST-KERNEL-DATE), checked to be one this process may make,
// and the histogram file's: drv is the driver resolved.
func (f *runFlags) checkOut(drv string) (string, error) {
	out := f.out
	if out == "" {
		out = defaultOut()
	}
	if err := runner.CheckOut(out); err != nil {
		return "", err
	}
	if err := checkWritable("--out", out); err != nil {
		return "", err
	}
	if f.histfile != "" {
		if err := checkWritable("--histfile", filepath.Dir(f.histfile)); err != nil {
			return "", err
		}
		if err := atomicfile.Check("--histfile", f.histfile); err != nil {
			return "", err
		}
	}
	if len(f.sizes.sizes) > 1 {
		switch {
		case f.histfile != "":
			return "", badFlag("--histfile with a --period list: one histogram file per run; give one period size")
		case drv == "rtc":
			return "", badFlag("--period %s with --driver rtc: its period is one interrupt (--rtc-rate)", f.sizes.String())
		case f.force:
			return "", badFlag("--force with a --period list: give a new or an empty directory (it gets one results directory per period size)")
		}
		if err := runner.CheckSizesOut(out); err != nil {
			return "", err
		}
	}
	return out, nil
}

// traceDebug is where --trace writes the events of a spike its two
// accounts disagree on: standard error when LATENCYTEST_TRACE_DEBUG is
// set (the VM test of the osnoise agreement sets it), else nowhere.
func traceDebug() io.Writer {
	if os.Getenv("LATENCYTEST_TRACE_DEBUG") == "" {
		return nil
	}
	return os.Stderr
}

// traceThreshold is the latency above which --trace explains a wakeup.
func (f *runFlags) traceThreshold(periodNS int64) (int64, error) {
	switch {
	case f.traceAbove < 0:
		return 0, badFlag("--trace-above %v: allowed 0 (half a period) or more", f.traceAbove)
	case f.traceAbove > 0 && !f.trace:
		return 0, badFlag("--trace-above: only with --trace")
	case f.traceAbove == 0:
		return periodNS / 2, nil
	}
	return int64(f.traceAbove), nil
}

// shape is the stream's rate and period: the flags', or for the RTC
// driver, whose period is one interrupt, --rtc-rate interrupts a second.
func (f *runFlags) shape(drv string) (rate, period int, err error) {
	if drv != "rtc" {
		return f.rate, f.period, nil
	}
	if f.rtcRate < 2 || f.rtcRate > 8192 || f.rtcRate&(f.rtcRate-1) != 0 {
		return 0, 0, badFlag("--rtc-rate %d: allowed a power of two from 2 to 8192 Hz", f.rtcRate)
	}
	if f.duration != 0 && int64(f.duration)*int64(f.rtcRate) < 1e9 {
		return 0, 0, badFlag("--duration %v: shorter than one RTC period (1/%d s)", f.duration, f.rtcRate)
	}
	return f.rtcRate, 1, nil
}

func (f *runFlags) resolveDriver() (string, error) {
	if f.driver == "auto" {
		return autoDriver().name, nil
	}
	if _, ok := lookupDriver(f.driver); ok {
		return f.driver, nil
	}
	switch f.driver {
	case "portaudio":
		return "", badFlag("--driver portaudio: not built into this binary; build with -tags portaudio after apt-get install portaudio19-dev (make build-portaudio)")
	case "jack":
		return "", badFlag("--driver jack: not built into this binary; build with -tags jack after apt-get install libjack-jackd2-dev (make build builds it in where the headers are)")
	case "alsa":
		return "", badFlag("--driver alsa: not built into this binary")
	}
	return "", badFlag("--driver %q: allowed %s", f.driver, strings.Join(allDriverNames(), ", "))
}

// parseTests checks the phase list against idle and the stressors of
// loads (none when nil).
func parseTests(s string, loads *loadSet) ([]string, error) {
	allowed := []string{runner.IdlePhase}
	if loads != nil {
		allowed = append(allowed, loads.names()...)
	}
	var tests []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(allowed, t) {
			return nil, badFlag("--tests: unknown test %q; allowed: %s", t, strings.Join(allowed, ", "))
		}
		if t != runner.IdlePhase {
			if err := loads.loads.Check(t); err != nil {
				return nil, err
			}
		}
		tests = append(tests, t)
	}
	return tests, nil
}

// parseCPUList parses a CPU list as taskset -c takes it ("0,2-3").
func parseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	allowed, err := threads.Allowed()
	if err != nil {
		return nil, badFlag("--affinity %s: %v", s, err)
	}
	return cpuList("--affinity", "a CPU list such as 1 or 0,2-3", s, allowed, possibleCPUs())
}

// givenFlags is the set of fs's flags that were on the command line.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// testGlitchFlag defines --test-glitch, the test hook run and monitor
// share (hidden: isHidden): parsed by config into f.glitches, carried to
// the engine on the measurement's context (testhook.WithGlitches).
func testGlitchFlag(fs *flag.FlagSet, f *runFlags) {
	fs.StringVar(&f.testGlitch, "test-glitch", "", "testing hook: PERIOD:KIND[:FRAMES],... breaks the sound the ALSA driver writes after that period of each phase (of a monitor's one stream): silence (a period of it), skip:N or repeat:N frames of the content")
}

// parseStall is --test-stall's PERIOD:DURATION; "" is no stall.
func parseStall(s string) (testhook.Stall, error) {
	if s == "" {
		return testhook.Stall{}, nil
	}
	at, rest, ok := strings.Cut(s, ":")
	dur, cpu, onCPU := strings.Cut(rest, "@")
	i, err1 := strconv.ParseInt(at, 10, 64)
	d, err2 := time.ParseDuration(dur)
	c, err3 := -1, error(nil)
	if onCPU {
		c, err3 = strconv.Atoi(cpu)
	}
	if !ok || err1 != nil || err2 != nil || err3 != nil || i < 0 || d <= 0 || (onCPU && c < 0) {
		return testhook.Stall{}, badFlag("--test-stall %q: allowed PERIOD:DURATION or PERIOD:DURATION@CPU, e.g. 100:300ms", s)
	}
	return testhook.Stall{At: i, For: d, CPU: c}, nil
}

// parseGlitches is --test-glitch's PERIOD:KIND[:FRAMES],...: periods in
// increasing order, FRAMES (1 or more) for skip and repeat only; "" is
// none.
func parseGlitches(s string) ([]audio.GlitchAt, error) {
	if s == "" {
		return nil, nil
	}
	var gs []audio.GlitchAt
	for _, item := range strings.Split(s, ",") {
		parts := strings.Split(item, ":")
		at, err := strconv.ParseInt(parts[0], 10, 64)
		kind, ok := audio.GlitchKind(0), len(parts) >= 2
		if ok {
			kind, ok = audio.ParseGlitchKind(parts[1])
		}
		frames := 0
		switch {
		case !ok || err != nil || at < 0 || (len(gs) > 0 && at <= gs[len(gs)-1].At):
			ok = false
		case kind == audio.GlitchSilence:
			ok = len(parts) == 2
		default:
			frames, err = strconv.Atoi(parts[len(parts)-1])
			ok = len(parts) == 3 && err == nil && frames > 0
		}
		if !ok {
			return nil, badFlag("--test-glitch %q: allowed PERIOD:silence, PERIOD:skip:FRAMES or PERIOD:repeat:FRAMES, comma-separated, periods increasing, e.g. 300:silence,600:skip:17", s)
		}
		gs = append(gs, audio.GlitchAt{At: at, Glitch: audio.Glitch{Kind: kind, Frames: frames}})
	}
	return gs, nil
}

// perCPU is --cpus checked against the driver drv resolved and the CPUs
// this process may run on: nil without the flag.
func (f *runFlags) perCPU(drv string) ([]int, error) {
	if f.cpus == "" {
		return nil, nil
	}
	switch {
	case f.affinity != "":
		return nil, badFlag("--cpus with --affinity: --cpus pins a thread to each CPU it lists; give one of them")
	case drv == "portaudio" || drv == "jack":
		who := map[string]string{"portaudio": "PortAudio", "jack": "libjack"}[drv]
		return nil, badFlag("--cpus with --driver %s: %s calls back on a thread of its own, which cannot be pinned; give --driver alsa (the card's stream on the first CPU listed, timer threads on the others) or timer", drv, who)
	}
	allowed, err := threads.Allowed()
	if err != nil {
		return nil, badFlag("--cpus %s: %v", f.cpus, err)
	}
	return cpusOf(f.cpus, allowed, possibleCPUs())
}

// cpusOf is a --cpus value: all the allowed CPUs, or a list (cpuList).
func cpusOf(s string, allowed, possible []int) ([]int, error) {
	if s == "all" {
		return allowed, nil
	}
	return cpuList("--cpus", "all or a CPU list such as 0 or 0,2-3", s, allowed, possible)
}

// cpuList is the CPU list s given to the flag name (which takes what),
// each CPU of which must exist (be among possible, the kernel's; nil: not
// known) and be allowed by the process's affinity: CPUs are numbered as
// the kernel numbers them, which a process limited to some (taskset,
// a container's cpuset) does not renumber.
func cpuList(name, what, s string, allowed, possible []int) ([]int, error) {
	cpus, ok := cpulist.Parse(s)
	if !ok {
		return nil, badFlag("%s %q: allowed %s", name, s, what)
	}
	for _, c := range cpus {
		switch {
		case possible != nil && !slices.Contains(possible, c):
			return nil, badFlag("%s %s: no CPU %d on this machine (CPUs %s)", name, s, c, threads.Format(possible))
		case !slices.Contains(allowed, c):
			return nil, badFlag("%s %s: CPU %d is not allowed to this process (its affinity allows %s)", name, s, c, threads.Format(allowed))
		}
	}
	return cpus, nil
}

// possibleCPUs is the CPUs the kernel may ever bring online; nil when
// it does not say.
func possibleCPUs() []int {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return nil
	}
	cpus, ok := cpulist.Parse(strings.TrimSpace(string(b)))
	if !ok {
		return nil
	}
	return cpus
}

// checkWritable reports whether dir (or, when it does not exist yet, its
// nearest existing parent) is a directory this process may write in.
func checkWritable(flagName, dir string) error {
	p := dir
	for {
		st, err := os.Stat(p)
		if err == nil {
			if !st.IsDir() {
				return badFlag("%s %s: %s is not a directory", flagName, dir, p)
			}
			if unix.Access(p, unix.W_OK) != nil {
				return badFlag("%s %s: %s is not writable", flagName, dir, p)
			}
			return nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return badFlag("%s %s: no existing parent directory", flagName, dir)
		}
		p = parent
	}
}

func defaultOut() string {
	s := sysinfo.Read()
	host := strings.NewReplacer("/", "_", " ", "_").Replace(s.Hostname)
	kern := strings.NewReplacer("/", "_", " ", "_").Replace(s.KernelRelease)
	return filepath.Join("results", fmt.Sprintf("%s-%s-%s", host, kern, time.Now().Format("20060102-150405")))
}

// repeatWindow is how long after the first stop signal another is taken as
// the same stop. Supervisors deliver one stop as two signals: timeout(1)
// sends its signal to the command and then to its own process group, which
// the command is in; a closed terminal sends SIGHUP to the foreground
// group and the shell sends it again to its jobs. The two come
// microseconds to milliseconds apart (timeout's are two consecutive
// kill(2) calls; half a second covers one of them waiting for a CPU on a
// loaded machine), while a person's second Ctrl-C comes later.
const repeatWindow = 500 * time.Millisecond

// interruptible is the run's context: the first stop signal cancels it,
// and the run stops in order, keeping what was measured. The stop signals
// are SIGINT, SIGTERM (kill, timeout(1), systemd), SIGHUP (the terminal
// closed) and SIGPIPE (the output went into `| head`, which has exited:
// Go's default is to die of it at the next write to stdout or stderr,
// leaving run.json unfinished and no report). A second SIGINT
// or SIGTERM, coming repeatWindow or more after the first, is never
// swallowed: it kills every child (child.Set.KillAll, which also removes
// their temporary directories) and exits at once, 130. SIGHUP and SIGPIPE
// never do: they repeat with every write to a closed terminal or pipe,
// and nobody sends them to mean "at once".
func interruptible(children *child.Set, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		var first time.Time
		select {
		case <-sigs:
			first = time.Now()
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs:
				if !atOnce(sig, time.Since(first)) {
					continue
				}
				fmt.Fprintln(stderr, "latencytest run: interrupted again: stopping at once")
				children.KillAll()
				os.Exit(130)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// atOnce says whether sig, coming after since the first stop signal,
// asks to stop at once (see interruptible).
func atOnce(sig os.Signal, since time.Duration) bool {
	return (sig == os.Interrupt || sig == syscall.SIGTERM) && since >= repeatWindow
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// parseFlags parses args into fs. -h prints the command's help (doc and
// fs's flags) on stdout; a bad flag is one line on stderr naming it,
// exit 2. ok is false when the command should return code at once.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, doc cmdDoc) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		writeHelp(stdout, doc, fs)
		return 0, false
	}
	if err != nil {
		msg := strings.Replace(err.Error(), "flag provided but not defined: -", "unknown flag --", 1)
		msg = strings.Replace(msg, " for flag -", " for --", 1)
		msg = explainDuration(fs, msg)
		fmt.Fprintf(stderr, "latencytest %s: %s\n", fs.Name(), msg)
		return 2, false
	}
	return 0, true
}

// explainDuration says what a duration flag allows where the flag
// package's message ends in only "parse error".
func explainDuration(fs *flag.FlagSet, msg string) string {
	head, ok := strings.CutSuffix(msg, ": parse error")
	if !ok {
		return msg
	}
	i := strings.LastIndex(head, " for --")
	if i < 0 {
		return msg
	}
	f := fs.Lookup(head[i+len(" for --"):])
	if f == nil {
		return msg
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(time.Duration); ok {
			return head + ": allowed a number and a unit, such as 500us, 20ms or 1m30s"
		}
	}
	return msg
}

// measureExit is run's and monitor's exit code: 2 for bad input, 1 for a
// failure (each said in one line), 130 when interrupted, else 0.
func measureExit(cmd string, ctx context.Context, err error, stderr io.Writer) int {
	switch {
	case badinput.Is(err):
		fmt.Fprintf(stderr, "latencytest %s: %v\n", cmd, err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "latencytest %s: %v\n", cmd, err)
		return 1
	case ctx.Err() != nil:
		return 130
	}
	return 0
}
