//go:build jack

// Package jack is the native JACK driver: a client of a JACK server whose
// period is the server's cycle. It is built only with -tags jack (cgo,
// libjack; headers in libjack-jackd2-dev), so that the default build stays
// pure Go and static.
//
// libjack calls the client's process callback once per server cycle on a
// real-time thread it makes, so the driver is an audio.CallbackDriver.
// Each period's Due is the start of the cycle as the server's clock has it
// (jack_get_cycle_times' current_usecs), its Woke the callback's wakeup on
// CLOCK_MONOTONIC, the same clock: see docs/jack.md.
package jack

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/jackserver"
	"latencytest/rundata"
)

// Driver is the JACK driver. Its zero value is not usable; call New.
type Driver struct {
	cfg      audio.Config
	c        *client
	server   string // the server's name
	playback bool
	capture  bool
	period   int     // frames per cycle, as granted
	rate     int     // as granted
	periodNS float64 // nominal
	dead     bool    // the client could not be closed in time: left alone
	rawClock bool    // jack_get_time is CLOCK_MONOTONIC_RAW (else CLOCK_MONOTONIC)

	// Set up by Open, used by the callback: nothing below is allocated
	// after Open.
	sample   rundata.Sample
	step     func(p *rundata.Sample) bool
	done     chan struct{} // receives once when step asks to stop
	stopped  atomic.Bool   // no step running: callbacks only play silence
	inStep   atomic.Bool   // a callback is running
	lastCall atomic.Int64  // when the last callback began
	// The buffer size or rate the server changed to mid-run (0: none).
	newPeriod atomic.Int64
	newRate   atomic.Int64
	started   bool // a period has been measured
	index     int64
	frames    uint32 // jack_get_cycle_times' frames of the previous period
	due       int64  // the previous period's cycle start, on jack_get_time's clock
	xruns     uint32 // the server's xrun count at the previous period
	late      int64  // the last period's wakeup after its cycle's start, on jack_get_time's clock
	cycle     cycleSeen
	// The client's own xruns not yet matched with the notice the server
	// sends of them, and until when a notice may still be theirs.
	ownPending int
	ownUntil   int64
	phase      float64
	dphase     float64

	// Counts for the tests, read once Run has returned.
	stats struct {
		notices   int    // xruns the server reported
		own       int    // the client's own: cycles it missed
		other     int    // notices that were not the client's own
		sameCycle int    // callbacks in a cycle already measured
		clamped   int    // periods whose current_usecs was outside the frame of the cycle's start
		missed    int64  // cycles missed
		first     uint32 // the first period's frames
	}
}

// New returns a JACK driver.
func New() *Driver { return &Driver{} }

// The engine and `latencytest devices` find these methods by type
// assertion, and a driver without them runs the blocking loop or lists
// nothing: a method lost or renamed should fail the build instead.
var (
	_ audio.CallbackDriver = (*Driver)(nil)
	_ audio.Devices        = (*Driver)(nil)
)

// Present reports whether the JACK server a client would connect to is
// up, for --driver auto.
func Present() bool { return jackserver.Running() }

// Devices lists the JACK server a client would connect to by default, for
// `latencytest devices`: its rate, its period (the buffer size) and its
// physical ports; nothing when none is running.
func (d *Driver) Devices() ([]audio.DeviceInfo, error) {
	if !jackserver.Running() {
		return nil, nil
	}
	quiet()
	c, _, err := openClient("latencytest-devices", "")
	if err != nil {
		return nil, fmt.Errorf("jack: asking server %q: %w", jackserver.Name(), err)
	}
	defer c.close()
	out, in := c.physical()
	info := audio.DeviceInfo{
		Name:        jackserver.Name(),
		Description: "JACK server (--device names it)",
		Rates:       fmt.Sprint(c.rate()),
		Formats:     []string{"float32"},
		Channels:    fmt.Sprintf("%d physical playback, %d capture ports", out, in),
		PeriodSize:  fmt.Sprintf("%d (the server's; jack_bufsize changes it)", c.bufferSize()),
		BufferSize:  "2 periods: a client's deadline is the next cycle",
		Driver:      schedOf(c.rtPriority()),
	}
	if out > 0 {
		info.Streams = append(info.Streams, "playback")
	}
	if in > 0 {
		info.Streams = append(info.Streams, "capture")
	}
	return []audio.DeviceInfo{info}, nil
}

// Open opens a client of the JACK server --device names (""
// JACK_DEFAULT_SERVER, else "default"), with a port per channel, connected
// to the server's physical ports, and activates it: from here the server
// calls it back every cycle, and it plays silence until Run.
func (d *Driver) Open(cfg audio.Config) (audio.Granted, error) {
	if cfg.Channels <= 0 || cfg.Channels > maxPorts {
		return audio.Granted{}, badinput.Errorf("--channels %d: the jack driver takes 1 to %d", cfg.Channels, maxPorts)
	}
	switch cfg.Stream {
	case "", "playback":
		d.playback = true
	case "capture":
		d.capture = true
	case "duplex":
		d.playback, d.capture = true, true
	default:
		return audio.Granted{}, badinput.Errorf("--stream %q: allowed: playback, capture, duplex", cfg.Stream)
	}
	if cfg.CaptureDevice != "" && cfg.CaptureDevice != cfg.Device {
		return audio.Granted{}, badinput.Errorf("--capture-device %q: a JACK client's ports are all on one server (--device)", cfg.CaptureDevice)
	}
	d.cfg = cfg
	d.server = cfg.Device
	if d.server == "" {
		d.server = jackserver.Name()
	}
	if !cfg.Verbose {
		quiet()
	}
	c, status, err := openClient("latencytest", cfg.Device)
	if err != nil {
		if status&statusServerFailed != 0 {
			return audio.Granted{}, badinput.Errorf("--driver jack: no JACK server named %q is running (start one, e.g. jackd -d alsa, or name it with --device)", d.server)
		}
		return audio.Granted{}, fmt.Errorf("jack: opening a client of server %q: %w", d.server, err)
	}
	d.c = c
	g, err := d.open()
	if err != nil {
		d.c.close()
		d.c = nil
		return audio.Granted{}, err
	}
	return g, nil
}

func (d *Driver) open() (audio.Granted, error) {
	cfg := d.cfg
	c := d.c
	// jack_get_cycle_times' usecs are jack_get_time()'s, the server's
	// clock, which the client library takes from the server (jack2's
	// JackLibClient::Open: SetClockSource(the engine's fClockSource)). On
	// Linux its default, the system clock, is jack_get_microseconds_
	// from_system (jack2, linux/JackLinuxTime.c): clock_gettime(
	// CLOCK_MONOTONIC_RAW) in whole µs since jack2 1.9.13 (commit
	// a24777a1, 2019; Debian 12's 1.9.21 is one), CLOCK_MONOTONIC
	// before, and HPET's counter under jackd -c h. The wakeups are
	// CLOCK_MONOTONIC, as every time the engine and the tracer keep, and
	// CLOCK_MONOTONIC_RAW is not slewed by NTP, so the two drift apart
	// (205 ms after 3 h on the VM this was written on). So the callback
	// reads both clocks at its wakeup, and the cycle's start is carried
	// over to CLOCK_MONOTONIC by its distance from the wakeup on
	// jack_get_time's own clock (see process). Which clock that is, is
	// found here: between two readings of it.
	raw, ok, skew := jackClock()
	if !ok {
		return audio.Granted{}, badinput.Errorf("--driver jack: the JACK server's clock is neither CLOCK_MONOTONIC_RAW nor CLOCK_MONOTONIC (%d µs off CLOCK_MONOTONIC; jackd -c h?): its cycle times cannot be set against the wakeups; run jackd with the system clock (-c s, its default)", skew)
	}
	d.rawClock = raw
	rate, period := c.rate(), c.bufferSize()
	if cfg.RateGiven && rate != cfg.Rate {
		return audio.Granted{}, badinput.Errorf("--rate %d: the JACK server runs at %d Hz (use --rate %d, or restart jackd with -r %d)", cfg.Rate, rate, rate, cfg.Rate)
	}
	d.rate, d.period = rate, period
	d.periodNS = float64(period) * 1e9 / float64(rate)
	nout, nin := 0, 0
	if d.playback {
		nout = cfg.Channels
	}
	if d.capture {
		nin = cfg.Channels
	}
	if err := c.setup(nout, nin, d); err != nil {
		return audio.Granted{}, fmt.Errorf("jack: %w", err)
	}
	d.stopped.Store(true)
	d.done = make(chan struct{}, 1)
	// Activated, the client is called back every cycle; idle (the C
	// callback plays silence) until Run.
	d.dphase = 2 * math.Pi * cfg.ToneHz / float64(rate)
	if err := c.activate(); err != nil {
		return audio.Granted{}, fmt.Errorf("jack: %w", err)
	}
	connected := c.connect()

	g := audio.Granted{
		Device:       fmt.Sprintf("JACK server %q, client %s", d.server, c.name()),
		Format:       "float32",
		Rate:         rate,
		Channels:     cfg.Channels,
		PeriodFrames: period,
		// A client must be done when the next cycle begins, one period
		// after its own: the deadline of a 2-period buffer, whatever
		// --periods says, and what headroom is measured against.
		Periods: 2,
	}
	if period != cfg.PeriodFrames {
		g.Notes = append(g.Notes, fmt.Sprintf("--period %d: the JACK server runs %d-frame cycles, measured at %d (jack_bufsize, or jackd -p, sets it)", cfg.PeriodFrames, period, period))
	}
	g.Notes = append(g.Notes,
		fmt.Sprintf("the period is the JACK server's cycle (%d frames at %d Hz); --periods does not apply: a client must be done when the next cycle begins, the deadline of a 2-period buffer", period, rate),
		"each period is due at the cycle's start as the server reports it (jack_get_cycle_times' estimate, held within the frame jack_frames_since_cycle_start places the start in, carried from jack's clock to CLOCK_MONOTONIC) and woke when the client's callback ran: the lateness of the server's graph in waking this client, not the kernel's wakeup after the card's interrupt, and nothing of the server's own buffering",
		"xruns are the server cycles this client missed, and every other xrun the server reports (its own late cycles, other clients', this client running past the next cycle's start), each of one period; jackd's log has each",
		fmt.Sprintf("the period's work runs on JACK's client thread, %s; --prio does not apply to it", schedOf(c.rtPriority())))
	if connected == 0 {
		g.Notes = append(g.Notes, "the client's ports are connected to no physical port (the server has none free)")
	} else {
		g.Notes = append(g.Notes, fmt.Sprintf("%d ports connected to the server's physical ports (%s)", connected, d.connections()))
	}
	if cfg.File != "" {
		g.Notes = append(g.Notes, "the jack driver plays silence or --tone, not --file")
	}
	return g, nil
}

func schedOf(prio int) string {
	if prio < 0 {
		return "SCHED_OTHER (the server runs without real-time scheduling)"
	}
	return fmt.Sprintf("SCHED_FIFO %d", prio)
}

// connections lists where the ports go: "out_1→system:playback_1, …".
func (d *Driver) connections() string {
	var s []string
	for i := 0; i < d.cfg.Channels; i++ {
		if d.playback {
			if to := d.c.portConnections(i, true); to != "" {
				s = append(s, fmt.Sprintf("out_%d→%s", i+1, to))
			}
		}
		if d.capture {
			if from := d.c.portConnections(i, false); from != "" {
				s = append(s, fmt.Sprintf("%s→in_%d", from, i+1))
			}
		}
	}
	return strings.Join(s, ", ")
}

// Start, Wait and Transfer are the blocking Driver's; a CallbackDriver is
// driven through Run.
func (d *Driver) Start() (int64, error) {
	return 0, errors.New("jack: the driver is callback-driven; call Run")
}

// Wait is unused; see Start.
func (d *Driver) Wait(*rundata.Sample) error { return errors.New("jack: use Run") }

// Transfer is unused; see Start.
func (d *Driver) Transfer(*rundata.Sample) error { return errors.New("jack: use Run") }

// stallLimit is how long Run waits for a callback before it gives up on
// the server (at least 20 periods).
const stallLimit = 2 * time.Second

// closeWait is how long Close and Run's deactivation wait for libjack,
// which asks the server and waits for its answer.
const closeWait = 10 * time.Second

// Run calls step from JACK's process thread once per server cycle until
// step returns false or stop is closed; then it deactivates the client,
// after which no callback runs.
func (d *Driver) Run(step func(p *rundata.Sample) bool, stop <-chan struct{}) error {
	if d.c == nil {
		return errors.New("jack: Run before Open")
	}
	d.step = step
	d.started, d.ownPending = false, 0
	d.lastCall.Store(audio.Now())
	d.stopped.Store(false)
	d.c.setIdle(false, 0)
	limit := max(int64(stallLimit), 20*int64(d.periodNS))
	tick := time.NewTicker(stallLimit / 8)
	defer tick.Stop()
	var runErr error
wait:
	for {
		select {
		case <-d.done:
			if n := d.newPeriod.Load(); n != 0 {
				runErr = fmt.Errorf("jack: the JACK server's buffer size changed from %d to %d frames mid-run; the run stops here rather than mix two period sizes", d.period, n)
			} else if r := d.newRate.Load(); r != 0 {
				runErr = fmt.Errorf("jack: the JACK server's rate changed from %d to %d Hz mid-run; the run stops here rather than mix two rates", d.rate, r)
			}
			break wait
		case <-stop:
			break wait
		case <-tick.C:
			if d.c.shutDown() {
				runErr = errors.New("jack: the JACK server shut the client down (did jackd exit?)")
				break wait
			}
			if !d.inStep.Load() && audio.Now()-d.lastCall.Load() > limit {
				runErr = fmt.Errorf("jack: no cycle for %.1f s: the JACK server stopped running the client", float64(limit)/1e9)
				break wait
			}
		}
	}
	d.stopped.Store(true)
	// No callback enters Go from here: libjack may cancel its thread.
	if !d.c.setIdle(true, closeWait) {
		d.dead = true
		return errors.Join(runErr, fmt.Errorf("jack: a process callback still running after %v: the client is abandoned", closeWait))
	}
	if runErr != nil {
		return runErr
	}
	// Deactivated, the client is called back no more.
	if err := d.answered(d.c.deactivate); err != nil {
		return fmt.Errorf("jack: %w", err)
	}
	return nil
}

// answered runs op, a libjack call that waits for the server, giving up
// after closeWait: a server that stopped answering would otherwise hold
// the engine. The client is then left alone (Close does nothing).
func (d *Driver) answered(op func() error) error {
	ok, err := audio.Answered(closeWait, op)
	if !ok {
		d.dead = true
		return fmt.Errorf("no answer from the JACK server in %v: the client is abandoned", closeWait)
	}
	return err
}

// Close closes the client.
func (d *Driver) Close() error {
	if d.c == nil || d.dead {
		return nil
	}
	c := d.c
	if !c.setIdle(true, closeWait) {
		d.dead = true
		return fmt.Errorf("jack: closing the client: a process callback still running after %v: the client is abandoned", closeWait)
	}
	err := d.answered(func() error { c.close(); return nil })
	d.c = nil
	if err != nil {
		return fmt.Errorf("jack: closing the client: %w", err)
	}
	return nil
}

// process is one server cycle, on JACK's process thread (see processor).
// It must not allocate.
func (d *Driver) process(woke, raw int64, nframes int, ok bool, frames uint32, usecs, t1 uint64, since uint32, t2 uint64, xruns, bufsize, rate uint32) {
	if d.stopped.Load() {
		d.silence(nframes)
		return
	}
	d.inStep.Store(true)
	defer d.inStep.Store(false)
	d.lastCall.Store(woke)
	if nframes != d.period || bufsize != 0 && int(bufsize) != d.period || rate != 0 && int(rate) != d.rate {
		// The server changed its buffer size (jack_bufsize) or rate:
		// periods of two shapes would be mixed in one run. Run says
		// which.
		switch {
		case nframes != d.period:
			d.newPeriod.Store(int64(nframes))
		case bufsize != 0 && int(bufsize) != d.period:
			d.newPeriod.Store(int64(bufsize))
		default:
			d.newRate.Store(int64(rate))
		}
		d.finish()
		d.silence(nframes)
		return
	}
	if !ok {
		// No cycle times: the server has not run its timer yet.
		d.silence(nframes)
		return
	}
	if d.started && frames == d.frames {
		// A second activation in a cycle already measured: after
		// missed cycles libjack may run the client twice in one (the
		// leftover activation, then the current one). Not a period.
		d.stats.sameCycle++
		d.silence(nframes)
		return
	}
	// The cycle's start, on jack_get_time's clock: jack_get_cycle_times'
	// current_usecs, jack2's estimate of it (its DLL, JackFrameTimer,
	// fed with the instants its driver began each cycle), kept within
	// the frame where jack_frames_since_cycle_start places the instant
	// itself. In a steady cycle the estimate is well within that frame
	// and is taken as it is; after the server restarts its cycles (an
	// xrun of its own) the DLL lags the new schedule by the slip and
	// catches up over a second or so, overshooting, during which it put
	// the start up to a period early and a few hundred µs late (after
	// the wakeup) on the dummy backend: there the frame counts.
	jackWoke := woke
	if d.rawClock {
		jackWoke = raw
	}
	frame := 1e9 / float64(d.rate)
	lo := int64(t1)*1000 - int64(float64(since+1)*frame) - 1000
	hi := min(int64(t2)*1000-int64(float64(since)*frame)+1000, jackWoke)
	due := int64(usecs) * 1000
	d.cycle = cycleSeen{usecs: usecs, lo: lo, hi: hi}
	if due < lo || due > hi {
		d.stats.clamped++
		due = min(max(due, lo), hi)
	}
	// The start on CLOCK_MONOTONIC: the wakeup less the time since the
	// start on jack_get_time's clock. CLOCK_MONOTONIC_RAW and
	// CLOCK_MONOTONIC run within NTP's slew (at most 500 ppm) of each
	// other, so over a wakeup 10 ms late the two lengths differ by 5 µs
	// at most, and by well under a µs as NTP keeps a clock.
	d.late = jackWoke - due
	p := &d.sample
	*p = rundata.Sample{Index: d.index, Woke: woke, Due: woke - d.late}
	notices := xruns - d.xruns
	if !d.started {
		notices = 0 // the server's xruns before the run are not the run's
	}
	// This client's own xruns: the cycles it missed, as the frame
	// counter of jack_get_cycle_times moved by more than one cycle since
	// the previous period.
	var own, missed int64
	if d.started {
		if missed = int64((frames-d.frames)/uint32(d.period)) - 1; missed > 0 {
			// As long as the cycles missed, or the time between the
			// two cycles' starts less a period where that is longer:
			// a server that restarts its schedule after a late cycle
			// (jackd's dummy driver, starved: its JackTimedDriver)
			// does not count the time it lost in its frame counter,
			// and a 50 ms stall read 46.7 ms by the frames where the
			// starts were 49.3 ms apart. With a card that time is
			// lost sound too.
			own = max(int64(float64(missed)*d.periodNS), due-d.due-int64(d.periodNS))
		}
	}
	if own > 0 {
		// The server notices a client that had not finished when a
		// cycle began and reports it as an xrun, through libjack's
		// notification thread, for as many of the cycles it missed as
		// it checks (jackd 1.9.21 reported 23 for 37 missed): those
		// notices are this xrun, not others.
		d.stats.own++
		d.stats.missed += missed
		d.ownPending += int(missed) + 1
		d.ownUntil = woke + absorbWindow
	}
	if notices > 0 {
		d.stats.notices += int(notices)
		if woke > d.ownUntil {
			d.ownPending = 0
		}
		mine := min(int(notices), d.ownPending)
		d.ownPending -= mine
		if other := int(notices) - mine; other > 0 {
			// The server's own late cycles (its schedule restarts),
			// this client still running when the next cycle began
			// without missing it, other clients' lateness: the sound
			// was broken all the same. Each counts as a cycle lost.
			d.stats.other += other
			own += int64(float64(other) * d.periodNS)
		}
	}
	if own > 0 {
		p.Xrun = own
		if !d.playback {
			p.Flags |= rundata.FlagCapture
		}
	}
	if !d.started {
		d.stats.first = frames
	}
	d.started = true
	d.frames, d.xruns, d.due = frames, xruns, due
	d.index++
	// One period to fill, plus the frames the lateness used up of the
	// deadline, the next cycle's start: a punctual callback has a period
	// of headroom, a late one less.
	late := max(woke-p.Due, 0)
	p.Avail = int32(min(int64(d.period)+int64(float64(late)*float64(d.rate)/1e9), 2*int64(d.period)))
	d.fill(nframes)
	if !d.step(p) {
		d.finish()
	}
}

// cycleSeen is what the last period read of its cycle's start, on
// jack_get_time's clock: current_usecs, and the frame where
// jack_frames_since_cycle_start put the start (ns), for the tests.
type cycleSeen struct {
	usecs  uint64
	lo, hi int64
}

// absorbWindow is how long after a client's own xrun the server's notice
// of it may come (libjack's notification thread): 100 ms.
const absorbWindow = 100e6

// finish stops the steps and tells Run.
func (d *Driver) finish() {
	d.stopped.Store(true)
	select {
	case d.done <- struct{}{}:
	default:
	}
}

// silence clears the output ports.
func (d *Driver) silence(n int) {
	if !d.playback {
		return
	}
	for i := 0; i < d.cfg.Channels; i++ {
		clear(d.c.out(i, n))
	}
}

// fill writes the period's output: silence, or a sine of Config.ToneHz
// on every port.
func (d *Driver) fill(n int) {
	if !d.playback {
		return
	}
	if d.dphase == 0 {
		d.silence(n)
		return
	}
	first := d.c.out(0, n)
	for k := range first {
		first[k] = float32(0.25 * math.Sin(d.phase))
		d.phase += d.dphase
		if d.phase > 2*math.Pi {
			d.phase -= 2 * math.Pi
		}
	}
	for i := 1; i < d.cfg.Channels; i++ {
		copy(d.c.out(i, n), first)
	}
}
