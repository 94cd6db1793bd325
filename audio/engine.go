package audio

import (
	"fmt"
	"sync"
	"sync/atomic"

	"latencytest/rundata"
)

// Options are the engine's settings beyond the stream itself.
type Options struct {
	// CPULoad is the share of each period, in percent, burnt by the
	// simulated DSP work after every wakeup (the classic "cpu80").
	CPULoad int
	// Duration ends the run after this many ns of stream time; periods due
	// later are not measured. 0 runs until Stop.
	Duration int64
	// Loops ends the run once this many periods are measured, as
	// cyclictest's -l counts its loops; 0: no count.
	Loops int64
	// BreakAbove ends the run at the first period whose wakeup is later
	// than this many ns, that period measured, as cyclictest's -b does: the
	// spike that was being hunted is the last sample, and a tracer
	// recording beside the loop still holds its window. 0: never.
	BreakAbove int64
	// StallAt and StallFor are a test hook: at period StallAt the thread
	// sleeps StallFor ns right after waking, as if it had been woken that
	// much later. StallAt < 0 disables it.
	StallAt  int64
	StallFor int64
	// Glitches are a test hook too: at each one's period the driver, if
	// it is a Glitcher, breaks the sound of the period it writes next, in
	// the order of their periods.
	Glitches []GlitchAt
}

// Engine runs a driver's period loop. All of its per-period work is
// allocation-free; it is built and calibrated before the stream starts.
type Engine struct {
	d        Driver
	opt      Options
	periodNS int64
	ring     *Ring

	nominal int64   // nominal DSP duration, ns
	iters   uint64  // spin iterations that take nominal ns
	sink    uint64  // keeps the spin loop from being optimised away
	start   int64   // stream start instant
	end     int64   // last due instant that is measured (0: none)
	next    int64   // index of the next period
	sleep   Sleeper //
	glitch  int     // the next of opt.Glitches
	broke   int64   // index of the period that broke (BreakAbove), or -1
	brokeNS int64   // and its wakeup latency
	stop    atomic.Bool
	stopped chan struct{} // closed by Stop, for callback drivers
	once    sync.Once
}

// NewEngine returns an engine for driver d, which must already be open with
// periods of periodNS, pushing samples into ring.
func NewEngine(d Driver, periodNS int64, opt Options, ring *Ring) *Engine {
	return &Engine{d: d, opt: opt, periodNS: periodNS, ring: ring, nominal: periodNS * int64(opt.CPULoad) / 100, broke: -1, stopped: make(chan struct{})}
}

// Broke is the index of the period whose wakeup was later than
// Options.BreakAbove and ended the run, and its latency; ok is false when
// none did.
func (e *Engine) Broke() (index, latency int64, ok bool) { return e.broke, e.brokeNS, e.broke >= 0 }

// NominalDSP is the DSP work each period should take, ns.
func (e *Engine) NominalDSP() int64 { return e.nominal }

// Start is the instant the stream started (valid once Run has begun).
func (e *Engine) Start() int64 { return e.start }

// Periods is the number of periods measured so far.
func (e *Engine) Periods() int64 { return e.next }

// Stop asks the loop to end at the next period. It may be called from any
// goroutine or signal handler goroutine.
func (e *Engine) Stop() {
	e.stop.Store(true)
	e.once.Do(func() { close(e.stopped) })
}

// spin is the simulated DSP work: a dependent chain of multiply-adds that
// no CPU can shortcut, so its length scales with iterations only.
//
//go:noinline
func spin(n uint64) uint64 {
	x := n
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// Calibrate measures how many spin iterations take the nominal DSP time.
// Call it on the thread that will run the loop, after the real-time setup,
// so it is measured under the same scheduling. It takes the fastest of
// several trials: interruptions only ever make a trial slower.
func (e *Engine) Calibrate() {
	if e.nominal <= 0 {
		return
	}
	n := uint64(1 << 12)
	for {
		t0 := Now()
		e.sink += spin(n)
		if Now()-t0 > 2e6 || n > 1<<40 {
			break
		}
		n <<= 1
	}
	best := int64(1 << 62)
	for range 7 {
		t0 := Now()
		e.sink += spin(n)
		best = min(best, Now()-t0)
	}
	e.iters = uint64(float64(n) * float64(e.nominal) / float64(max(best, 1)))
}

// Run starts the stream and runs the period loop on the calling goroutine,
// which should be locked to its OS thread, until the duration has passed,
// Stop is called or the driver fails. For a blocking driver it first grows
// the goroutine's stack by LoopStack and blocks asynchronous signals on the
// thread until it returns (see blockSignals).
func (e *Engine) Run() error {
	if cd, ok := e.d.(CallbackDriver); ok {
		return cd.Run(e.Step, e.stopped)
	}
	// Before the stream starts: the stack the loop will use, and a
	// thread no signal handler will run on.
	e.sink += uint64(growStack())
	defer restoreSignals(blockSignals())
	start, err := e.d.Start()
	if err != nil {
		return fmt.Errorf("start stream: %w", err)
	}
	e.begin(start)
	if p, ok := e.d.(Pinnable); ok && p.PinnableLoop() {
		pin()
		defer unpin()
	}
	var s rundata.Sample
	for !e.stop.Load() {
		if done, err := e.period(&s); done || err != nil {
			return err
		}
	}
	return nil
}

// period runs one period of a blocking driver: wait, work, transfer,
// record. It reports done when the period fell after the end of the run.
func (e *Engine) period(s *rundata.Sample) (done bool, err error) {
	*s = rundata.Sample{}
	if err := e.d.Wait(s); err != nil {
		return true, fmt.Errorf("period %d: wait: %w", e.next, err)
	}
	if e.end != 0 && s.Due > e.end {
		return true, nil
	}
	s.Index = e.next
	e.work(s)
	if err := e.d.Transfer(s); err != nil {
		return true, fmt.Errorf("period %d: transfer: %w", e.next, err)
	}
	e.ring.Push(s)
	e.next++
	return e.enough(s), nil
}

// enough reports whether the period just measured, s, ends the run:
// the count of Options.Loops reached, or a wakeup above
// Options.BreakAbove (noted for Broke).
func (e *Engine) enough(s *rundata.Sample) bool {
	if e.opt.BreakAbove > 0 && s.Latency() > e.opt.BreakAbove {
		e.broke, e.brokeNS = s.Index, s.Latency()
		return true
	}
	return e.opt.Loops > 0 && e.next >= e.opt.Loops
}

func (e *Engine) begin(start int64) {
	e.start = start
	if e.opt.Duration > 0 {
		e.end = start + e.opt.Duration
	}
}

// Step is the per-period work for drivers that call back from their own
// thread: p arrives with Due, Woke, Avail (and any xrun) filled in. It
// returns false when the loop should end.
func (e *Engine) Step(p *rundata.Sample) bool {
	if e.stop.Load() {
		return false
	}
	if e.next == 0 && e.start == 0 {
		e.begin(p.Due - e.periodNS)
	}
	if e.end != 0 && p.Due > e.end {
		return false
	}
	p.Index = e.next
	e.work(p)
	e.ring.Push(p)
	e.next++
	return !e.enough(p)
}

// work applies the stall and glitch hooks and burns the DSP load, timing
// it.
func (e *Engine) work(p *rundata.Sample) {
	if p.Index == e.opt.StallAt && e.opt.StallFor > 0 {
		e.sleep.For(e.opt.StallFor)
		p.Woke = Now()
	}
	if g := e.opt.Glitches; e.glitch < len(g) && p.Index == g[e.glitch].At {
		if d, ok := e.d.(Glitcher); ok {
			d.Glitch(g[e.glitch].Glitch)
		}
		e.glitch++
	}
	if e.iters > 0 {
		t0 := Now()
		e.sink += spin(e.iters)
		p.DSP = Now() - t0
	}
}
