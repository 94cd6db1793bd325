package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/testhook"
	"latencytest/rundata"
)

func TestAccumulatorFill(t *testing.T) {
	var xr []int64
	a := newAccumulator(nil, rundata.NewSampleHeader(48000, 48, 2), 800_000, func(s *rundata.Sample) { xr = append(xr, s.Xrun) })
	lat := []int64{10_000, 50_000, 150_000, 2_000_000}
	dsp := []int64{800_000, 850_000, 950_000, 799_000}
	for i := range lat {
		s := rundata.Sample{Index: int64(i), Due: int64(i) * 1e6, DSP: dsp[i], Avail: 48, Grid: int64(i)*1e6 - 5_000}
		s.Woke = s.Due + lat[i]
		if i == 3 {
			s.Xrun = 1_000_000
		}
		a.sample(&s)
	}
	var ph rundata.Phase
	a.fill(&ph)
	if ph.Periods != 4 || ph.Xruns != 1 || ph.XrunMSTotal != 1 || len(xr) != 1 {
		t.Fatalf("periods %d xruns %d (%g ms), callbacks %v", ph.Periods, ph.Xruns, ph.XrunMSTotal, xr)
	}
	if ph.WithinUS100 != 50 || ph.WithinMS1 != 75 {
		t.Errorf("within 100 µs %g %%, within 1 ms %g %%; want 50 and 75", ph.WithinUS100, ph.WithinMS1)
	}
	// 800, 850, 799 µs are within 100 µs of 800 µs; 950 is not.
	if ph.CPULoop.Within100USPct != 75 || ph.CPULoop.NominalUS != 800 || ph.CPULoop.MaxUS != 950 {
		t.Errorf("cpu loop %+v", ph.CPULoop)
	}
	// The period ended on the card's clock 5 µs before its pointer update:
	// the headline counts those 5 µs, the split says where they went.
	if ph.Latency.Min != 15 || ph.Latency.Max != 2005 {
		t.Errorf("latency from the card's clock %+v, want 15 to 2005 µs", ph.Latency)
	}
	if u, w := ph.UpdateDelay, ph.AfterUpdate; u == nil || w == nil || u.Min != 5 || u.Max != 5 || w.Min != 10 || w.Max != 2000 {
		t.Errorf("update delay %+v, after update %+v", u, w)
	}
	// 48 of 96 frames queued at the worst wakeup without an xrun: 1 ms.
	if ph.HeadroomMinUS != 1000 {
		t.Errorf("headroom %g µs, want 1000", ph.HeadroomMinUS)
	}
}

// The terminal summary says when a percentile is only a lower bound: a
// rank beyond the histogram's range reads ">=100000", not the maximum.
func TestSummaryPercentileBeyondRange(t *testing.T) {
	h := rundata.NewHistogram(rundata.DefaultHistUS)
	for range 98 {
		h.Add(40_900)
	}
	h.Add(150_000_000)
	h.Add(250_000_000)
	run := &rundata.Run{PeriodUS: 1333, Phases: []rundata.Phase{{Name: "idle", Periods: 100}}}
	rundata.FillPhase(&run.Phases[0], h)
	var b strings.Builder
	summary(&b, run, map[int]float64{0: 40.9}, t.TempDir())
	want := "Min:     40 Act:   40 Avg: 4040 Max:  250000 p99: >=100000 p99.9: >=100000"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary %q lacks %q", b.String(), want)
	}
}

// A duplex phase gets each side's wakeup latency, the time between the
// two sides' dues and the poll wait; a phase of a driver that neither
// polls nor runs duplex gets none of them.
func TestAccumulatorDuplex(t *testing.T) {
	a := newAccumulator(nil, rundata.NewSampleHeader(48000, 48, 2), 0, nil)
	// capture 100 µs, 300 µs before playback, then playback 200 µs before capture
	apart := []int64{-100_000, -300_000, 200_000, -100_000}
	poll := []int64{900_000, 700_000, 0, 800_000}
	for i := range apart {
		due := int64(i+1) * 1e6
		s := rundata.Sample{Index: int64(i), Due: due, Woke: due + 50_000, PlaybackDue: due, CaptureDue: due + apart[i], PollNS: poll[i]}
		if apart[i] > 0 {
			s.PlaybackDue, s.CaptureDue = due-apart[i], due
		}
		a.sample(&s)
	}
	var ph rundata.Phase
	a.fill(&ph)
	if ph.CaptureLatency == nil || ph.PlaybackLatency == nil || ph.CapturePlaybackApart == nil || ph.PollWait == nil {
		t.Fatalf("capture %v playback %v apart %v poll %v", ph.CaptureLatency, ph.PlaybackLatency, ph.CapturePlaybackApart, ph.PollWait)
	}
	// woke − capture due: 150, 350, 50, 150 µs; woke − playback due: 50, 50, 250, 50.
	if c := ph.CaptureLatency; c.Min != 50 || c.Max != 350 || c.Avg != 175 {
		t.Errorf("capture latency %+v", c)
	}
	if p := ph.PlaybackLatency; p.Min != 50 || p.Max != 250 || p.Avg != 100 {
		t.Errorf("playback latency %+v", p)
	}
	if ap := ph.CapturePlaybackApart; ap.Min != -300 || ap.Max != 200 || ap.Avg != -75 {
		t.Errorf("apart %+v", ap)
	}
	if pw := ph.PollWait; pw.Min != 0 || pw.Max != 900 || pw.Avg != 600 || pw.P99 != 900 {
		t.Errorf("poll wait %+v", pw)
	}

	b := newAccumulator(nil, rundata.NewSampleHeader(48000, 48, 2), 0, nil)
	b.sample(&rundata.Sample{Due: 1e6, Woke: 1e6 + 10_000})
	var plain rundata.Phase
	b.fill(&plain)
	if plain.CaptureLatency != nil || plain.PlaybackLatency != nil || plain.CapturePlaybackApart != nil || plain.PollWait != nil {
		t.Errorf("a timer phase got duplex or poll figures: %+v", plain)
	}
}

// Each invariant Validate checks, broken alone, is bad input naming its
// flag; a measurement that keeps them all passes.
func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{Audio: audio.Config{Stream: "playback", Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2},
			CPULoad: 80, RT: rundata.RTParams{Priority: 80}, Repeat: 1, Duration: time.Second}
	}
	if c := good(); c.Validate() != nil {
		t.Fatalf("good config: %v", c.Validate())
	}
	for flag, bad := range map[string]func(*Config){
		"--channels": func(c *Config) { c.Audio.Channels = 65 },
		"--periods":  func(c *Config) { c.Audio.Periods = 1 },
		"--cpu-load": func(c *Config) { c.CPULoad = 101 },
		"--prio":     func(c *Config) { c.RT.Priority = -1 },
		"--duration": func(c *Config) { c.Duration = 0 },
		"--stream":   func(c *Config) { c.Audio.Stream = "both" },
		"--file":     func(c *Config) { c.Audio.File, c.Audio.ToneHz = "x.wav", 440 },
		"--repeat":   func(c *Config) { c.Repeat = 1001 },
		"--cpus": func(c *Config) {
			c.Tests, c.Repeat, c.CPUs = []string{"idle", "hackbench"}, 7, make([]int, rundata.MaxCPUPhases/14+1)
		},
	} {
		c := good()
		bad(&c)
		if err := c.Validate(); !badinput.Is(err) || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%s broken: %v, want bad input naming it", flag, err)
		}
	}
}

// The invariants cmd/latencytest's run once checked itself are
// Validate's too, with run's messages: the rate, the period size (each of
// a --period list's), the tone against the rate, a length of at least a
// period, what the driver resolved can play and access, and the label.
func TestConfigValidateRunFlags(t *testing.T) {
	good := func() Config {
		return Config{Audio: audio.Config{Stream: "playback", Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2, Access: "mmap"},
			CPULoad: 80, RT: rundata.RTParams{Priority: 80}, Repeat: 1, Duration: time.Second, Driver: "timer"}
	}
	if c := good(); c.Validate() != nil || c.ValidateSizes([]int{32, 64, 128}) != nil {
		t.Fatalf("good config: %v, %v", c.Validate(), c.ValidateSizes([]int{32, 64, 128}))
	}
	for want, bad := range map[string]func(*Config){
		"--rate 100: allowed 8000 to 768000 Hz":  func(c *Config) { c.Audio.Rate = 100 },
		"--period 8: allowed 16 to 65536 frames": func(c *Config) { c.Audio.PeriodFrames = 8 },
		"--tone 30000: allowed 0 (silence) to 24000 Hz (half the rate)": func(c *Config) {
			c.Audio.ToneHz, c.Driver = 30000, "alsa"
		},
		"--duration 1ms: shorter than one period (1.333333ms)": func(c *Config) { c.Duration = time.Millisecond },
		"--tone 440: the timer driver (--driver auto found no sound card) plays no sound; allowed with --driver alsa, portaudio or jack": func(c *Config) {
			c.Audio.ToneHz, c.AutoDriver = 440, true
		},
		"--file x.wav: the rtc driver plays no sound":                  func(c *Config) { c.Audio.File, c.Driver = "x.wav", "rtc" },
		`--access "direct": allowed mmap or rw`:                        func(c *Config) { c.Audio.Access = "direct" },
		"--access rw: only with the ALSA driver (the driver is timer)": func(c *Config) { c.Audio.Access = "rw" },
		"--loopback: only with the ALSA driver (the driver is timer)": func(c *Config) {
			c.Audio.Loopback, c.Audio.Stream = true, "duplex"
		},
		"--label: one line of up to 200 bytes": func(c *Config) { c.Label = "a\nb" },
	} {
		c := good()
		bad(&c)
		if err := c.Validate(); !badinput.Is(err) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want bad input saying it", want, err)
		}
	}
	// Without a driver resolved yet, what depends on it is not checked.
	c := good()
	c.Driver, c.Audio.Access = "", "rw"
	if err := c.Validate(); err != nil {
		t.Errorf("no driver yet: %v", err)
	}
	// A --period list: the first size out of range, and the length
	// against the largest.
	c = good()
	if err := c.ValidateSizes([]int{32, 100000, 8}); err == nil || !strings.HasPrefix(err.Error(), "--period 100000: allowed 16 to 65536 frames") {
		t.Errorf("sizes 32,100000,8: %v", err)
	}
	c.Duration = 2 * time.Millisecond
	if err := c.ValidateSizes([]int{64, 256, 128}); !badinput.Is(err) || !strings.HasPrefix(err.Error(), "--duration 2ms: shorter than one period (5.333333ms)") {
		t.Errorf("2ms with sizes 64,256,128: %v", err)
	}
}

// The engine is asked to stall only when a test put a stall on the run's
// context (internal/testhook); otherwise StallAt is -1, none.
func TestEngineRequestStall(t *testing.T) {
	cfg := Config{Driver: "timer", CPULoad: 20, Duration: time.Second}
	if req := engineRequestOf(context.Background(), cfg); req.StallAt != -1 || req.StallForNS != 0 {
		t.Errorf("no stall asked: StallAt %d, StallForNS %d; want -1, 0", req.StallAt, req.StallForNS)
	}
	ctx := testhook.WithStall(context.Background(), testhook.Stall{At: 100, For: 300 * time.Millisecond})
	req := engineRequestOf(ctx, cfg)
	if req.StallAt != 100 || req.StallForNS != int64(300*time.Millisecond) {
		t.Errorf("stall 100:300ms: StallAt %d, StallForNS %d", req.StallAt, req.StallForNS)
	}
	if req.Driver != "timer" || req.CPULoad != 20 || req.DurationNS != int64(time.Second) {
		t.Errorf("request %+v: not the config's", req)
	}
}
