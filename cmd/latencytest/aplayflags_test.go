package main

import (
	bin "encoding/binary"
	"flag"
	"io"
	"os"
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
	fs.IntVar(&f.channels, "channels", 2, "")
	fs.StringVar(&f.file, "file", "", "")
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

// wavFile writes a WAV of 16-bit silence at rate with channels.
func wavFile(t *testing.T, rate, channels int) string {
	t.Helper()
	data := make([]byte, 4*channels*100)
	h := make([]byte, 44)
	copy(h, "RIFF")
	bin.LittleEndian.PutUint32(h[4:], uint32(36+len(data)))
	copy(h[8:], "WAVEfmt ")
	bin.LittleEndian.PutUint32(h[16:], 16)
	bin.LittleEndian.PutUint16(h[20:], 1)
	bin.LittleEndian.PutUint16(h[22:], uint16(channels))
	bin.LittleEndian.PutUint32(h[24:], uint32(rate))
	bin.LittleEndian.PutUint32(h[28:], uint32(rate*channels*2))
	bin.LittleEndian.PutUint16(h[32:], uint16(channels*2))
	bin.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	bin.LittleEndian.PutUint32(h[40:], uint32(len(data)))
	p := filepath.Join(t.TempDir(), "x.wav")
	if err := os.WriteFile(p, append(h, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --file is played as aplay plays it: the stream takes its rate and
// channels, and a --rate or --channels that disagrees is refused, since
// latencytest never resamples.
func TestFileShape(t *testing.T) {
	mono := wavFile(t, 44100, 1)
	f, err := applyAplay("--file", mono)
	if err != nil || f.rate != 44100 || f.channels != 1 {
		t.Errorf("--file of 44100 Hz mono: %d Hz %d ch (%v)", f.rate, f.channels, err)
	}
	if f, err := applyAplay("--file", mono, "--rate", "44100", "--channels", "1"); err != nil || f.rate != 44100 {
		t.Errorf("agreeing flags: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--file", mono, "--rate", "48000"}, "--rate 48000 and --file " + mono + " (44100 Hz): latencytest never resamples"},
		{[]string{"--file", mono, "--channels", "2"}, "--channels 2 and --file " + mono + " (1 channels)"},
		{[]string{"--file", "/dev/null"}, "--file /dev/null: "},
	} {
		if _, err := applyAplay(c.args...); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
