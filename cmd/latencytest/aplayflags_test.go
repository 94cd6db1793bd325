package main

import (
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func applyAplay(args ...string) (runFlags, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := runFlags{}
	fs.IntVar(&f.rate, "rate", 48000, "")
	fs.IntVar(&f.period, "period", 64, "")
	fs.IntVar(&f.periods, "periods", 2, "")
	a := newAplayFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	return f, a.apply(fs, &f)
}

func TestAplayFlags(t *testing.T) {
	for _, c := range []struct {
		args            []string
		period, periods int
		err             string
	}{
		{[]string{"--period-size", "128", "--buffer-size", "512"}, 128, 4, ""},
		{[]string{"--buffer-size", "1024"}, 256, 4, ""}, // aplay: a quarter of the buffer
		{[]string{"--period-time", "2500", "--buffer-time", "10000"}, 120, 4, ""},
		{[]string{"--period", "96", "--buffer-time", "6000"}, 96, 3, ""}, // 288 frames: 3 periods
		{[]string{"--rate", "44100", "--period-time", "1000"}, 44, 2, ""},
		{[]string{"--period-size", "128", "--buffer-size", "500"}, 0, 0, "--buffer-size 500: allowed a multiple of the period (128 frames)"},
		{[]string{"--period", "64", "--period-size", "128"}, 0, 0, "--period and --period-size: give one of them"},
		{[]string{"--periods", "3", "--buffer-size", "512"}, 0, 0, "--periods and --buffer-size: give one of them"},
		{[]string{"--buffer-size", "0"}, 0, 0, "--buffer-size 0: allowed a whole number above 0"},
	} {
		f, err := applyAplay(c.args...)
		switch {
		case c.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%v: %v, want %q", c.args, err, c.err)
			}
		case err != nil || f.period != c.period || f.periods != c.periods:
			t.Errorf("%v: period %d × %d (%v), want %d × %d", c.args, f.period, f.periods, err, c.period, c.periods)
		}
	}
}

// An aplay command line's shape reaches the driver and run.json.
func TestRunAplayShape(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "300ms", "--cpu-load", "0",
		"--period-size", "128", "--buffer-size", "512", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if run := readRun(t, out); run.PeriodFrames != 128 || run.Periods != 4 {
		t.Errorf("run.json: %d × %d frames, want 128 × 4", run.PeriodFrames, run.Periods)
	}
	oneLine(t, latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--period-size", "128", "--buffer-size", "500", "--out", filepath.Join(t.TempDir(), "x")), "run --buffer-size 500")
}
