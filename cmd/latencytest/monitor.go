package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"latencytest/internal/badinput"
	"latencytest/internal/testhook"
	"latencytest/runner"
	"latencytest/sysinfo"
)

// monitorFlags are monitor's own settings, besides the stream's (runFlags).
type monitorFlags struct {
	rotate time.Duration
	keep   int
}

// monitorDoc is monitor's help besides its flags.
func monitorDoc() cmdDoc {
	return cmdDoc{
		synopsis: []string{"latencytest monitor [flags]"},
		about: `Measures without end, with no load, until stopped (Ctrl-C, SIGTERM), for
machines watched for days. Every --rotate it completes a results directory,
DIR/YYYYMMDD-HHMMSS (a run of one idle phase, which report and compare
read), and removes the oldest past --keep. --listen serves the measurement
as Prometheus metrics, --metrics-file writes them for node_exporter's
textfile collector (docs/monitor.md). With --loopback (ALSA, --stream
duplex through a cable or snd-aloop) it hears what comes back as it runs:
the round trip and the glitches are metrics too.`,
		examples: []string{
			"latencytest monitor --listen 0.0.0.0:9611",
			"latencytest monitor --rotate 10m --keep 144 --out /var/lib/latencytest",
			"latencytest monitor --metrics-file /var/lib/prometheus/node-exporter/latencytest.prom",
		},
	}
}

// monitorSettings are what monitor's flags set, once its flag set is
// parsed.
type monitorSettings struct {
	f     runFlags
	m     monitorFlags
	aplay *aplayFlags
	mf    *metricsFlags
}

// monitorFlagSet defines monitor's flags: the one definition its
// parsing, its -h, its man page and its completion are made from.
func monitorFlagSet() (*flag.FlagSet, *monitorSettings) {
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	s := &monitorSettings{}
	s.aplay = streamFlags(fs, &s.f, "timer", 0)
	s.f.sizes = periodList{sizes: []int{256}}
	fs.Var(&s.f.sizes, "period", "period size, frames")
	fs.DurationVar(&s.m.rotate, "rotate", time.Hour, "length of each results directory (1s to 168h)")
	fs.IntVar(&s.m.keep, "keep", 168, "results directories to keep, the newest (0: keep all)")
	fs.StringVar(&s.f.out, "out", "", "directory of the results directories (default results/monitor-HOST)")
	s.mf = newMetricsFlags(fs)
	// The loopback's VM test breaks the sound on purpose, as run's does
	// (audio/alsa's TestVMMonitorLoopback).
	testGlitchFlag(fs, &s.f)
	return fs, s
}

func monitorMain(args []string, stdout, stderr io.Writer) int {
	fs, s := monitorFlagSet()
	if code, ok := parseFlags(fs, args, stdout, stderr, monitorDoc()); !ok {
		return code
	}
	f, m, aplay, mf := &s.f, &s.m, s.aplay, s.mf
	cfg, err := m.config(fs, f, aplay, args)
	cfg.Stdout, cfg.Stderr = stdout, stderr
	if err != nil {
		fmt.Fprintf(stderr, "latencytest monitor: %v\n", err)
		return 2
	}
	set, stopMetrics, err := mf.start(&cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "latencytest monitor: %v\n", err)
		return 2
	}
	ctx, stop := interruptible(cfg.Children, stderr)
	defer stop()
	ctx = testhook.WithGlitches(ctx, f.glitches)
	err = runner.RunRotating(ctx, cfg, m.keep, func() {
		if set != nil {
			set.Rotated()
		}
	})
	if merr := stopMetrics(!badinput.Is(err)); merr != nil && err == nil {
		err = merr
	}
	return measureExit("monitor", ctx, err, stderr)
}

// config validates the flags into the runner configuration of one
// rotation (its Out is the base directory). Nothing is written yet.
func (m *monitorFlags) config(fs *flag.FlagSet, f *runFlags, aplay *aplayFlags, args []string) (runner.Config, error) {
	f.period = f.sizes.sizes[0]
	switch {
	case fs.NArg() > 0:
		return runner.Config{}, badFlag("unexpected argument %q (flags only)", fs.Arg(0))
	case len(f.sizes.sizes) > 1:
		return runner.Config{}, badFlag("--period %s: one period size (monitor watches one stream)", f.sizes.String())
	case m.rotate < time.Second || m.rotate > 7*24*time.Hour:
		return runner.Config{}, badFlag("--rotate %v: allowed 1s to 168h (a Go duration such as 1h or 30m)", m.rotate)
	case m.keep < 0:
		return runner.Config{}, badFlag("--keep %d: allowed 0 (keep all) or more", m.keep)
	}
	if err := aplay.apply(fs, f); err != nil {
		return runner.Config{}, err
	}
	if periodNS := int64(f.period) * 1e9 / int64(max(f.rate, 1)); int64(m.rotate) < periodNS {
		return runner.Config{}, badFlag("--rotate %v: shorter than one period (%v)", m.rotate, time.Duration(periodNS))
	}
	f.tests, f.repeat, f.duration = runner.IdlePhase, 1, m.rotate
	if f.out == "" {
		host := strings.NewReplacer("/", "_", " ", "_").Replace(sysinfo.Read().Hostname)
		f.out = filepath.Join("results", "monitor-"+host)
	}
	cfg, err := f.config(nil)
	if err != nil {
		return cfg, err
	}
	if err := runner.CheckMonitorOut(cfg.Out); err != nil {
		return cfg, err
	}
	if err := attach(&cfg, "monitor", args); err != nil {
		return cfg, err
	}
	cfg.Progress = runner.ProgressNone
	cfg.Duration, cfg.Rotate = 0, m.rotate // one engine, until stopped
	return cfg, nil
}
