package audio_test

import (
	"runtime"
	"slices"
	"testing"

	"latencytest/audio"
	"latencytest/audio/timer"
	"latencytest/rundata"
)

func openTimer(t *testing.T, frames, periods int) (*timer.Driver, int64) {
	t.Helper()
	d := timer.New()
	cfg := audio.Config{Rate: 48000, Channels: 2, PeriodFrames: frames, Periods: periods}
	if _, err := d.Open(cfg); err != nil {
		t.Fatal(err)
	}
	return d, cfg.PeriodNS()
}

// runRT runs the engine's loop as the engine process does: on a locked OS
// thread with SCHED_FIFO 80 when the test may have it (root). A loop at
// normal priority on a busy machine measures the other processes (on
// this one's 2 cores, shared by several test runs, a period's write once
// came 814 ms after its wakeup). The thread ends with the goroutine, its
// priority with it.
func runRT(e *audio.Engine) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		audio.RTSetup(rundata.RTParams{Priority: 80})
		done <- e.Run()
	}()
	return <-done
}

func drain(r *audio.Ring) []rundata.Sample {
	var out []rundata.Sample
	var s rundata.Sample
	for r.Pop(&s) {
		out = append(out, s)
	}
	return out
}

// The per-period path must not allocate: an allocation can end in a
// runtime pause that the loop would then measure as latency.
func TestPeriodDoesNotAllocate(t *testing.T) {
	d, period := openTimer(t, 16, 2)
	ring := audio.NewRing(1 << 12)
	// The run controls' checks are on the path too (never met here).
	e := audio.NewEngine(d, period, audio.Options{CPULoad: 20, StallAt: -1, Loops: 1 << 40, BreakAbove: 1 << 40}, ring)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e.Calibrate()
	if _, err := d.Start(); err != nil {
		t.Fatal(err)
	}
	var s rundata.Sample
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := audio.PeriodForTest(e, &s); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per period, want 0", allocs)
	}
	if got := len(drain(ring)); got < 500 {
		t.Fatalf("ring holds %d samples, want ≥ 500", got)
	}
}

// Periods counted equal duration × rate / period, with consecutive indexes
// and due instants exactly one period apart.
func TestEngineCountsPeriods(t *testing.T) {
	// Eight periods of buffer: only a wakeup 70 ms late (a very noisy
	// machine) would be an xrun and restart the grid.
	d, period := openTimer(t, 480, 8) // 10 ms
	ring := audio.NewRing(1 << 10)
	e := audio.NewEngine(d, period, audio.Options{CPULoad: 0, Duration: 300 * 1e6, StallAt: -1}, ring)
	if err := runRT(e); err != nil {
		t.Fatal(err)
	}
	ss := drain(ring)
	if len(ss) != 30 {
		t.Fatalf("counted %d periods in 300 ms of 10 ms periods, want 30", len(ss))
	}
	for i, s := range ss {
		if s.Index != int64(i) {
			t.Fatalf("sample %d has index %d", i, s.Index)
		}
		if s.Xrun != 0 {
			t.Fatalf("period %d: xrun of %d ns with 70 ms of buffer", i, s.Xrun)
		}
		if want := e.Start() + int64(i+1)*period; s.Due != want {
			t.Fatalf("period %d due %d, want %d", i, s.Due, want)
		}
		if s.Woke < s.Due {
			t.Fatalf("period %d woke %d before due %d", i, s.Woke, s.Due)
		}
	}
}

// A stall injected into the loop reads back as a wakeup of that length at
// that period, and as exactly one xrun of the stall minus the buffer, after
// which the grid restarts instead of catching up.
func TestStallReadsBack(t *testing.T) {
	const stall int64 = 100e6
	d, period := openTimer(t, 480, 4) // 10 ms periods, 40 ms buffer: noise up to 30 ms is no xrun
	ring := audio.NewRing(1 << 10)
	e := audio.NewEngine(d, period, audio.Options{Duration: 400 * 1e6, StallAt: 5, StallFor: stall}, ring)
	if err := runRT(e); err != nil {
		t.Fatal(err)
	}
	ss := drain(ring)
	var xruns []rundata.Sample
	for _, s := range ss {
		if s.Xrun > 0 {
			xruns = append(xruns, s)
		}
	}
	s5 := ss[5]
	if lat := s5.Latency(); lat < stall || lat > stall+50e6 {
		t.Errorf("stalled period latency %.3f ms, want %d ms (+ at most 50 ms of scheduling)", float64(lat)/1e6, stall/1e6)
	}
	if len(xruns) != 1 || xruns[0].Index != 5 {
		t.Fatalf("xruns at %v, want exactly one at period 5", xruns)
	}
	want := stall - 3*period // the three queued periods played during the stall
	if x := xruns[0].Xrun; x < want || x > want+50e6 {
		t.Errorf("xrun %.3f ms, want %.3f ms", float64(x)/1e6, float64(want)/1e6)
	}
	// Grid restart: the period after the xrun is due one period after the
	// stalled period ended, not one period after its own due instant.
	if gap := ss[6].Due - ss[5].Due; gap < stall {
		t.Errorf("period 6 due %.3f ms after period 5: the grid caught up instead of restarting", float64(gap)/1e6)
	}
	// 400 ms of stream with ~110 ms lost to the stall: ~29 periods, far
	// fewer than the 40 a catch-up flood would produce.
	if n := len(ss); n < 25 || n > 32 {
		t.Errorf("%d periods, want about 29", n)
	}
}

// --loops: the loop ends after exactly that many periods, well before
// its duration, as cyclictest -l; none of them broke.
func TestEngineLoopsCountsExactly(t *testing.T) {
	d, period := openTimer(t, 48, 8) // 1 ms
	ring := audio.NewRing(1 << 10)
	e := audio.NewEngine(d, period, audio.Options{Duration: 10e9, Loops: 37, StallAt: -1}, ring)
	if err := runRT(e); err != nil {
		t.Fatal(err)
	}
	ss := drain(ring)
	if len(ss) != 37 || e.Periods() != 37 || ss[36].Index != 36 {
		t.Fatalf("%d samples, %d periods counted; want 37 with --loops 37", len(ss), e.Periods())
	}
	if i, _, ok := e.Broke(); ok {
		t.Errorf("broke at period %d without BreakAbove", i)
	}
}

// --break-above: the loop ends at the first wakeup later than the limit,
// that period measured and last, as cyclictest -b. The late wakeup is
// the stall hook's at period 7; the limit is far above what scheduling
// noise does to a SCHED_FIFO thread (and the test says so if it did).
func TestEngineBreaksAtFirstLateWakeup(t *testing.T) {
	const stall, limit int64 = 150e6, 60e6
	d, period := openTimer(t, 480, 32) // 10 ms periods, 320 ms buffer: no xrun
	ring := audio.NewRing(1 << 10)
	e := audio.NewEngine(d, period, audio.Options{Duration: 10e9, BreakAbove: limit, StallAt: 7, StallFor: stall}, ring)
	if err := runRT(e); err != nil {
		t.Fatal(err)
	}
	ss := drain(ring)
	i, lat, ok := e.Broke()
	if !ok {
		t.Fatalf("did not break; %d periods", len(ss))
	}
	for _, s := range ss[:len(ss)-1] {
		if s.Latency() > limit {
			t.Fatalf("period %d was %.1f ms late and did not break", s.Index, float64(s.Latency())/1e6)
		}
	}
	last := ss[len(ss)-1]
	if i != 7 || last.Index != 7 || last.Latency() < stall || lat != last.Latency() {
		t.Fatalf("broke at %d, last sample %d %.1f ms late; want period 7, ≥ %d ms (the stall)", i, last.Index, float64(last.Latency())/1e6, stall/1e6)
	}
}

func TestRingCountsLost(t *testing.T) {
	r := audio.NewRing(4)
	var s rundata.Sample
	for i := range 6 {
		s.Index = int64(i)
		r.Push(&s)
	}
	if r.Lost() != 2 {
		t.Fatalf("lost %d, want 2", r.Lost())
	}
	got := drain(r)
	if len(got) != 4 || got[0].Index != 0 || got[3].Index != 3 {
		t.Fatalf("ring kept %v", got)
	}
}

// glitchRecorder is the timer driver that notes the periods the engine
// asked it to glitch at (audio.Glitcher), and what.
type glitchRecorder struct {
	audio.Driver
	next *int64 // the period the engine is at: its samples' count so far
	got  []audio.GlitchAt
}

func (g *glitchRecorder) Glitch(gl audio.Glitch) {
	g.got = append(g.got, audio.GlitchAt{At: *g.next, Glitch: gl})
}

// The glitch hook: the engine hands each glitch to a Glitcher driver at
// its period, once, in order.
func TestEngineGlitchesAtTheirPeriods(t *testing.T) {
	d, period := openTimer(t, 48, 8) // 1 ms
	var n int64
	g := &glitchRecorder{Driver: d, next: &n}
	ring := audio.NewRing(1 << 10)
	want := []audio.GlitchAt{{At: 3, Glitch: audio.Glitch{Kind: audio.GlitchSilence}}, {At: 9, Glitch: audio.Glitch{Kind: audio.GlitchSkip, Frames: 17}}, {At: 20, Glitch: audio.Glitch{Kind: audio.GlitchRepeat, Frames: 29}}}
	e := audio.NewEngine(countingDriver{g, &n}, period, audio.Options{Loops: 30, Duration: 10e9, StallAt: -1, Glitches: want}, ring)
	if err := runRT(e); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.got, want) {
		t.Errorf("glitches %+v, want %+v", g.got, want)
	}
}

// countingDriver counts the periods its driver waited for, so that a
// Glitcher beneath it knows the period the engine is at.
type countingDriver struct {
	*glitchRecorder
	n *int64
}

func (c countingDriver) Transfer(p *rundata.Sample) error {
	err := c.glitchRecorder.Transfer(p)
	*c.n = p.Index + 1
	return err
}
