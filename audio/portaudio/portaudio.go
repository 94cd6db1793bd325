//go:build portaudio

// Package portaudio is the driver for everything PortAudio reaches that the
// direct ALSA driver does not: a JACK server, the ALSA plugins of
// PulseAudio and PipeWire, OSS. It is built only with -tags portaudio
// (cgo, libportaudio2; headers in portaudio19-dev) so that the default
// build stays pure Go and static.
//
// PortAudio calls back from its own thread (JACK's process thread under
// JACK), so the driver is an audio.CallbackDriver: Run starts the stream
// and hands each callback to the engine's step. See docs/portaudio.md for
// how lateness and xruns are measured.
package portaudio

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// Driver is the PortAudio driver. Its zero value is not usable; call New.
type Driver struct {
	cfg      audio.Config
	stream   *paStream
	inited   bool
	dead     bool          // the stream stopped calling back: PortAudio is left alone
	jack     bool          // the host API is JACK: one callback per server cycle, no backlog
	capture  bool          // the stream has input
	playback bool          // the stream has output
	buffer   int64         // frames the host buffers (JACK: the deadline of 2 periods): the xrun threshold
	hostWait time.Duration // see answered

	// Set up by Open, used by the callback: nothing below is allocated
	// after Open.
	grid     *grid
	sample   rundata.Sample
	step     func(p *rundata.Sample) bool
	done     chan struct{} // receives once when step asks to stop
	stopped  atomic.Bool   // the engine has stopped: callbacks only play silence
	inStep   atomic.Bool   // a callback is running
	lastCall atomic.Int64  // when the last callback began
	index    int64
	prevDue  int64 // grid instant of the previous callback
	prevEnd  int64 // when the previous callback's step returned
	// An overrun of a callback past the next cycle's start, waiting for
	// JACK's xrun flag to confirm it, and for how many callbacks.
	overrun    int64
	overrunAge int
	phase      float64
	dphase     float64
}

// New returns a PortAudio driver.
func New() *Driver { return &Driver{hostWait: hostWait} }

// The engine and `latencytest devices` find these methods by type
// assertion, and a driver without them runs the blocking loop or lists
// nothing: a method lost or renamed should fail the build instead.
var (
	_ audio.CallbackDriver = (*Driver)(nil)
	_ audio.Devices        = (*Driver)(nil)
)

// init initialises PortAudio with its probing noise hidden. PortAudio's
// JACK host API activates a client at initialisation; on a busy machine
// that has been seen to fail as an "unanticipated host error" (a server
// too slow to answer, presumably), so that error is tried three times.
func (d *Driver) init() error {
	var err error
	for try := 0; try < 3; try++ {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		restore := quietStderr(d.cfg.Verbose)
		err = paInitialize()
		restore()
		if !errors.Is(err, paUnanticipatedHostError) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("portaudio: initialising: %w", err)
	}
	d.inited = true
	return nil
}

func (d *Driver) terminate() {
	if d.inited {
		restore := quietStderr(d.cfg.Verbose)
		paTerminate()
		restore()
		d.inited = false
	}
}

// Open opens a callback stream of cfg.PeriodFrames frames per callback on
// the device cfg.Device names (see resolve).
func (d *Driver) Open(cfg audio.Config) (audio.Granted, error) {
	if cfg.Rate <= 0 || cfg.PeriodFrames <= 0 || cfg.Channels <= 0 {
		return audio.Granted{}, badinput.Errorf("portaudio: rate %d, period %d, channels %d: all must be > 0", cfg.Rate, cfg.PeriodFrames, cfg.Channels)
	}
	d.cfg = cfg
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
	if err := d.init(); err != nil {
		return audio.Granted{}, err
	}
	g, err := d.open()
	if err != nil {
		d.terminate()
		return audio.Granted{}, err
	}
	return g, nil
}

func (d *Driver) open() (audio.Granted, error) {
	cfg := d.cfg
	hosts, devs, err := paDevices()
	if err != nil {
		return audio.Granted{}, fmt.Errorf("portaudio: listing devices: %w", err)
	}
	// The buffer PortAudio is asked for: --periods periods.
	latency := time.Duration(int64(cfg.PeriodFrames*max(cfg.Periods, 1)) * 1e9 / int64(cfg.Rate))
	var in, out streamParams
	var dev *device
	var srv jackServer
	if d.playback {
		if dev, err = resolve(hosts, devs, cfg.Device, false); err != nil {
			return audio.Granted{}, err
		}
		if srv, err = checkShape(dev, cfg, cfg.Device); err != nil {
			return audio.Granted{}, err
		}
		out = streamParams{dev: dev, channels: cfg.Channels, latency: latency}
	}
	if d.capture {
		spec := cfg.CaptureDevice
		if spec == "" {
			spec = cfg.Device
		}
		cdev, err := resolve(hosts, devs, spec, true)
		if err != nil {
			return audio.Granted{}, err
		}
		if srv, err = checkShape(cdev, cfg, spec); err != nil {
			return audio.Granted{}, err
		}
		in = streamParams{dev: cdev, channels: cfg.Channels, latency: latency}
		if dev == nil {
			dev = cdev
		}
	}
	d.jack = dev.host.typ == typeJACK

	restore := quietStderr(cfg.Verbose)
	s, err := paOpen(in, out, float64(cfg.Rate), cfg.PeriodFrames, d)
	restore()
	if err != nil {
		return audio.Granted{}, openError(err, dev, cfg)
	}
	d.stream = s

	granted := audio.Granted{
		Device:       fmt.Sprintf("%s (%s, device %d)", deviceName(dev), dev.host.name, dev.index),
		Format:       "float32",
		Rate:         int(math.Round(s.rate)),
		Channels:     cfg.Channels,
		PeriodFrames: cfg.PeriodFrames,
		Periods:      cfg.Periods,
	}
	if d.jack {
		// JACK hands each client one period per cycle and keeps no
		// backlog for it: a callback has until the next cycle begins,
		// one period after its own, to deliver. That is the deadline of
		// a 2-period buffer (one period queued at a punctual wakeup),
		// whatever --periods says, and what headroom is measured
		// against.
		granted.Periods = 2
		granted.Notes = append(granted.Notes,
			fmt.Sprintf("JACK runs the period and rate of its server (%d frames, %d Hz); --periods does not apply: a callback must be done when the next cycle begins, the deadline of a 2-period buffer", cfg.PeriodFrames, cfg.Rate),
			"xruns are the server cycles this stream missed, and callbacks still running when the next cycle began (as JACK confirms); JACK's xrun flag alone covers the whole graph and is not counted",
			fmt.Sprintf("the period's work runs on JACK's client thread, %s, which JACK sets from the server's priority; --prio does not apply to it", srv.sched))
	} else {
		lat := s.outLat
		if !d.playback {
			lat = s.inLat
		}
		if frames := int(math.Round(lat.Seconds() * s.rate)); frames >= cfg.PeriodFrames {
			granted.Periods = frames / cfg.PeriodFrames
		}
		granted.Notes = append(granted.Notes, fmt.Sprintf("%s grants a latency of %.1f ms (%d periods); headroom is that buffer less the lateness against the grid, an estimate", dev.host.name, lat.Seconds()*1e3, granted.Periods))
	}
	granted.Notes = append(granted.Notes, jitterNote(d.jack))
	if cfg.File != "" {
		granted.Notes = append(granted.Notes, "the portaudio driver plays silence or --tone, not --file")
	}
	d.buffer = int64(max(granted.Periods, 1) * cfg.PeriodFrames)
	d.grid = newGrid(cfg.Rate, cfg.PeriodFrames, d.jack)
	d.done = make(chan struct{}, 1)
	d.dphase = 2 * math.Pi * cfg.ToneHz / float64(cfg.Rate)
	return granted, nil
}

// jitterNote says what a PortAudio latency is. PortAudio shows no
// hardware-pointer instant, so each callback is measured against a grid
// fitted to the callbacks themselves (see grid): lateness is jitter
// against their earliest, and a delay every callback shares is invisible.
func jitterNote(jack bool) string {
	n := "latency here is jitter: PortAudio shows no hardware-pointer instant, so each callback is measured against a grid fitted to the callbacks themselves (their earliest, drift-corrected), and a delay that every callback has (buffering, a thread always late by the same amount) does not show"
	if jack {
		n += "; under JACK a callback is counted against the latest server cycle that has begun, so its latency stays below one period, and anything later shows as missed cycles, counted as xruns"
	}
	return n
}

// checkShape refuses what the device cannot run before PortAudio is asked:
// PortAudio's own errors do not say what the device would accept.
func checkShape(dev *device, cfg audio.Config, spec string) (jackServer, error) {
	if dev.host.typ != typeJACK {
		return jackServer{}, nil
	}
	if int(dev.rate) != cfg.Rate {
		return jackServer{}, badinput.Errorf("--rate %d: the JACK server runs at %d Hz (use --rate %d, or restart jackd with -r %d)", cfg.Rate, int(dev.rate), int(dev.rate), cfg.Rate)
	}
	srv, err := probeJack(dev)
	if err != nil {
		return srv, err
	}
	if p := srv.period; p != cfg.PeriodFrames {
		return srv, badinput.Errorf("--period %d: the JACK server runs with %d-frame periods (use --period %d, or restart jackd with -p %d)", cfg.PeriodFrames, p, p, cfg.PeriodFrames)
	}
	return srv, nil
}

// jackServer is what a JACK server runs with that PortAudio does not
// report: its period in frames, and the scheduling of the client thread
// it calls back on.
type jackServer struct {
	period int
	sched  string // e.g. "SCHED_FIFO 65"
}

// probeJack measures both. The period matters because a stream of another
// size would be re-blocked by PortAudio, several callbacks per server cycle
// or one every few cycles, which is no longer the server's timing. A
// stream that leaves the size to the host is called back with one server
// period, on the thread the driver's stream will get.
func probeJack(dev *device) (jackServer, error) {
	var p periodProbe
	one := streamParams{dev: dev, channels: 1}
	var in, out streamParams
	if dev.maxOut > 0 {
		out = one
	} else {
		in = one
	}
	s, err := paOpen(in, out, dev.rate, 0, &p)
	if err != nil {
		return jackServer{}, fmt.Errorf("portaudio: probing the JACK server: %w", err)
	}
	defer s.close()
	if err := s.start(); err != nil {
		return jackServer{}, fmt.Errorf("portaudio: probing the JACK server: %w", err)
	}
	defer s.stop()
	for deadline := time.Now().Add(2 * time.Second); p.frames.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return jackServer{}, errors.New("portaudio: probing the JACK server: it ran no cycle in 2 s")
		}
	}
	return jackServer{period: int(p.frames.Load()), sched: p.sched}, nil
}

// periodProbe notes the frames and the thread's scheduling at the first
// callback, and plays silence.
type periodProbe struct {
	sched  string
	frames atomic.Int64 // set last: publishes sched
}

func (p *periodProbe) period(_ int64, _, out unsafe.Pointer, frames int, _ float64, _ uint) {
	if p.frames.Load() == 0 {
		p.sched = "of unknown scheduling"
		if a, err := unix.SchedGetAttr(0, 0); err == nil {
			switch a.Policy {
			case unix.SCHED_FIFO:
				p.sched = fmt.Sprintf("SCHED_FIFO %d", a.Priority)
			case unix.SCHED_RR:
				p.sched = fmt.Sprintf("SCHED_RR %d", a.Priority)
			default:
				p.sched = "SCHED_OTHER (JACK runs without real-time scheduling)"
			}
		}
		p.frames.Store(int64(frames))
	}
	if out != nil {
		clear(unsafe.Slice((*float32)(out), frames))
	}
}

// openError turns PortAudio's refusals that are the user's to fix into
// bad input (internal/badinput).
func openError(err error, dev *device, cfg audio.Config) error {
	var pe paError
	if errors.As(err, &pe) {
		switch pe {
		case paDeviceUnavailable:
			return badinput.Errorf("--device %q: %s is busy (another program has it open)", cfg.Device, deviceName(dev))
		case paInvalidSampleRate:
			return badinput.Errorf("--rate %d: %s does not run at this rate (its default is %d Hz)", cfg.Rate, deviceName(dev), int(dev.rate))
		case paInvalidChannelCount:
			return badinput.Errorf("--channels %d: %s has %d playback and %d capture channels", cfg.Channels, deviceName(dev), dev.maxOut, dev.maxIn)
		case paInvalidDevice, paBadIODeviceCombination, paSampleFormatNotSupp:
			return badinput.Errorf("--device %q: %s refuses this stream: %v", cfg.Device, deviceName(dev), err)
		}
	}
	return fmt.Errorf("portaudio: opening %s: %w", deviceName(dev), err)
}

// Start, Wait and Transfer are the blocking Driver's; a CallbackDriver is
// driven through Run.
func (d *Driver) Start() (int64, error) {
	return 0, errors.New("portaudio: the driver is callback-driven; call Run")
}

// Wait is unused; see Start.
func (d *Driver) Wait(*rundata.Sample) error { return errors.New("portaudio: use Run") }

// Transfer is unused; see Start.
func (d *Driver) Transfer(*rundata.Sample) error { return errors.New("portaudio: use Run") }

// Run starts the stream and calls step from PortAudio's callback thread
// once per period until step returns false or stop is closed; then it
// stops the stream.
func (d *Driver) Run(step func(p *rundata.Sample) bool, stop <-chan struct{}) error {
	if d.stream == nil {
		return errors.New("portaudio: Run before Open")
	}
	d.step = step
	d.stopped.Store(false)
	if err := d.stream.start(); err != nil {
		return fmt.Errorf("portaudio: starting the stream: %w", err)
	}
	// A stream whose callbacks stop coming (the JACK server exited, the
	// device vanished) would otherwise keep the engine waiting for ever.
	limit := max(int64(stallLimit), 20*int64(d.cfg.PeriodFrames)*1e9/int64(d.cfg.Rate))
	tick := time.NewTicker(stallLimit / 8)
	defer tick.Stop()
	d.lastCall.Store(audio.Now())
	var runErr error
wait:
	for {
		select {
		case <-d.done:
			break wait
		case <-stop:
			break wait
		case <-tick.C:
			if !d.inStep.Load() && audio.Now()-d.lastCall.Load() > limit {
				runErr = fmt.Errorf("portaudio: no callback for %.1f s: the stream stopped (did the JACK server exit?)", float64(limit)/1e9)
				break wait
			}
		}
	}
	d.stopped.Store(true)
	if runErr != nil {
		// PortAudio's JACK host API stops, closes and terminates by
		// asking its process callback to act, so with the server gone
		// every one of those calls would wait for ever. The stream is
		// abandoned instead; the engine process exits after the run.
		d.dead = true
		return runErr
	}
	if err := d.answered(d.stream.stop); err != nil {
		return fmt.Errorf("portaudio: stopping the stream: %w", err)
	}
	return nil
}

// answered runs op, a PortAudio call that waits for the host API's
// process thread to act on it: under JACK, stopping and closing a stream
// are requests its process callback carries out, waited for up to ten
// minutes (pa_jack.c's WaitCondition). A client the server stopped
// calling back would hold the engine that long, so after d.hostWait the
// stream is abandoned as a dead one is (see Run); the call stays blocked
// on its own thread until the engine process exits.
func (d *Driver) answered(op func() error) error {
	ok, err := audio.Answered(d.hostWait, op)
	if !ok {
		d.dead = true
		return fmt.Errorf("no answer from the host API's process thread in %v: the stream is abandoned", d.hostWait)
	}
	return err
}

// hostWait is how long a stop or a close may wait for the host API's
// process thread, which acts within a cycle or two when it runs at all.
const hostWait = 10 * time.Second

// stallLimit is how long Run waits for a callback before it gives up on
// the stream (at least 20 periods).
const stallLimit = 2 * time.Second

// Close closes the stream and releases PortAudio.
func (d *Driver) Close() error {
	if d.dead {
		return nil
	}
	var err error
	if d.stream != nil {
		restore := quietStderr(d.cfg.Verbose)
		err = d.answered(d.stream.close)
		restore()
		d.stream = nil
	}
	if d.dead {
		return fmt.Errorf("portaudio: closing the stream: %w", err)
	}
	d.terminate()
	if err != nil {
		return fmt.Errorf("portaudio: closing the stream: %w", err)
	}
	return nil
}

// period is PortAudio's callback (see target).
func (d *Driver) period(woke int64, in, out unsafe.Pointer, frames int, _ float64, flags uint) {
	var inb, outb []float32
	if in != nil && d.capture {
		inb = unsafe.Slice((*float32)(in), frames*d.cfg.Channels)
	}
	if out != nil && d.playback {
		outb = unsafe.Slice((*float32)(out), frames*d.cfg.Channels)
	}
	d.callback(woke, inb, outb, flags)
}

// callback is one period, on PortAudio's thread. It must not allocate.
// woke was read in C, first thing in PortAudio's callback.
func (d *Driver) callback(woke int64, in, out []float32, fl uint) {
	if d.stopped.Load() {
		clear(out)
		return
	}
	d.inStep.Store(true)
	defer d.inStep.Store(false)
	d.lastCall.Store(woke)
	p := &d.sample
	*p = rundata.Sample{Index: d.index, Woke: woke}
	d.index++
	due, missed := d.grid.next(woke)
	nsFrame := d.grid.nsPerFrame()
	periodNS := nsFrame * float64(d.cfg.PeriodFrames)
	xrun := fl&(outputUnderflow|inputOverflow) != 0
	if xrun && !d.jack {
		// A buffered host API found its buffer ran dry (or over) and
		// restarted the stream. The buffer held d.buffer frames from
		// the previous period's due instant, so it ran dry then plus
		// the buffer's length; the xrun lasted from then to now, and
		// at least one period.
		dry := d.prevDue + int64(float64(d.buffer)*nsFrame)
		p.Xrun = max(woke-dry, int64(periodNS))
		if fl&inputOverflow != 0 && (fl&outputUnderflow == 0 || !d.playback) {
			p.Flags |= rundata.FlagCapture
		}
	}
	if xrun {
		// The stream restarted (buffered host APIs), or the JACK server
		// had an xrun, its own or a client's, and restarted its cycle
		// schedule: either way the periods run on a new grid from here.
		d.grid.restart(woke)
		due = woke
		p.Flags |= rundata.FlagRestart
	}
	if d.jack && d.index > 1 {
		// This stream's xruns on JACK: the cycles it missed (the server
		// got no output from it then), and a callback that was still
		// running when the next cycle began. JACK's xrun flag covers the
		// whole graph (the server's own late cycles too), so an overrun
		// counts only when JACK flags an xrun within the next two
		// callbacks (the flag comes through a notification thread).
		if late := d.prevEnd - (d.prevDue + int64(periodNS)); late > 0 {
			d.overrun, d.overrunAge = late, 0
		}
		x := int64(float64(missed) * periodNS)
		if d.overrun > 0 {
			if xrun {
				x = max(x, d.overrun)
				d.overrun = 0
			} else if d.overrunAge++; d.overrunAge > 1 {
				d.overrun = 0
			}
		}
		if x > 0 {
			p.Xrun = x
			if !d.playback {
				p.Flags |= rundata.FlagCapture
			}
		}
	}
	// PortAudio shows no hardware-pointer instant: the due instant is
	// the grid's.
	p.Due, p.Grid = due, due
	late := max(woke-due, 0)
	// PortAudio hands over one period per callback; lateness frees (or
	// fills) more of the host's buffer, up to all of it. Under JACK the
	// buffer is the cycle's deadline (see open): a punctual callback has
	// one period of headroom, a late one that period less its lateness.
	// PortAudio's own times cannot say this: under JACK its
	// outputBufferDacTime is currentTime (jack_frame_time, now) plus the
	// playback port's latency, a constant whenever the callback runs.
	p.Avail = int32(min(int64(d.cfg.PeriodFrames)+int64(float64(late)/nsFrame), max(d.buffer, int64(d.cfg.PeriodFrames))))
	d.fill(out)
	ok := d.step(p)
	d.prevDue = due
	d.prevEnd = audio.Now()
	if !ok {
		d.stopped.Store(true)
		select {
		case d.done <- struct{}{}:
		default:
		}
	}
}

// fill writes the period's output: silence, or a sine of Config.ToneHz
// on every channel.
func (d *Driver) fill(out []float32) {
	if d.dphase == 0 {
		clear(out)
		return
	}
	ch := d.cfg.Channels
	for i := 0; i+ch <= len(out); i += ch {
		v := float32(0.25 * math.Sin(d.phase))
		for c := 0; c < ch; c++ {
			out[i+c] = v
		}
		d.phase += d.dphase
		if d.phase > 2*math.Pi {
			d.phase -= 2 * math.Pi
		}
	}
}
