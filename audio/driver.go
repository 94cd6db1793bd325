// Package audio runs the period loop: a Driver delivers period wakeups from
// a soundcard (or a timer standing in for one), and the Engine timestamps
// each one, burns the simulated DSP load, moves the audio and hands a
// rundata.Sample to a preallocated ring. The loop is meant to run alone in
// its own process; see docs/method.md for why.
package audio

import (
	"io"

	"latencytest/rundata"
)

// Config is the stream the engine asks a driver for.
type Config struct {
	Device        string  // driver-specific device name ("" = the driver's default)
	CaptureDevice string  // for --stream duplex: the capture side ("" = same as Device)
	Stream        string  // "playback" (default), "capture" or "duplex"
	Access        string  // ALSA: "mmap" (default: the mapped buffer, waiting in poll) or "rw" (a blocking write, as plain aplay)
	Rate          int     // frames per second
	RateGiven     bool    // the user asked for Rate; else a device may play at its nearest
	Channels      int     // channels per frame
	PeriodFrames  int     // frames per period
	Periods       int     // periods in the buffer
	ToneHz        float64 // play a sine of this frequency instead of silence (0: silence)
	File          string  // play this WAV file in a loop instead of silence ("" : none)
	Verbose       bool    // let the driver's own diagnostics through
	// Loopback plays the loopback's signals (audio/sound.Loop): its sine on
	// the first channel, its MLS on the second (ALSA duplex).
	Loopback bool
	// KeepFrames keeps the first this many frames the capture side reads,
	// for the parent to analyse after the loop (Keeper; 0: none).
	KeepFrames int
	// StreamCapture hands what the capture side reads over as it reads
	// it (Streamer), for a capture that never ends (a monitor's
	// loopback); KeepFrames is then unused.
	StreamCapture bool
}

// PeriodNS is the nominal length of one period.
func (c *Config) PeriodNS() int64 { return int64(c.PeriodFrames) * 1e9 / int64(c.Rate) }

// Granted is what a driver actually opened. A device may round the rate,
// period or buffer; the engine measures what was granted and says so.
type Granted struct {
	Device       string        // resolved device name, e.g. "hw:0,0 (Dummy)"
	Format       string        // sample format, e.g. "S16_LE"
	Access       string        // "mmap" or "rw" (ALSA)
	Card         *rundata.Card // the sound card opened (ALSA)
	Rate         int           //
	Channels     int           //
	PeriodFrames int           //
	Periods      int           //
	// CaptureCard, CaptureChannels and CaptureFormat are a duplex
	// stream's capture side (ALSA), whose channels and format may differ
	// from the playback's (Card, Channels, Format): an interface with 2
	// inputs and 4 outputs. Zero when the stream has one side.
	CaptureCard     *rundata.Card
	CaptureChannels int
	CaptureFormat   string
	Simulated       bool     // xruns come from a virtual buffer, not from hardware
	Notes           []string // one line each: what differs from what was asked, and why
}

// A Driver delivers period wakeups. Open configures the stream, Start
// starts it, and then the engine calls Wait and Transfer once per period
// on one locked OS thread, so Wait, Transfer and everything they call must
// not allocate.
//
// Everything Wait and Transfer touch must be touched in Open or Start: the
// engine locks memory with MCL_ONFAULT, so a buffer page first used in the
// loop is a page fault there (write the driver's own buffers once, read a
// mapped device buffer with TouchPages).
//
// Wait blocks until the next period is due and fills p.Due (the instant the
// period became due: the timer deadline, or the timestamp of the
// hardware-pointer update that completed the period), p.Woke (when the
// thread ran again) and p.Avail (frames available at wakeup). A driver
// that polls also fills p.PollNS (the time spent in poll); a duplex one
// fills p.PlaybackDue and p.CaptureDue, each side's due, with p.Due the
// later of the two.
//
// Transfer moves the period's audio after the engine's DSP work. When it
// finds that the buffer ran dry (or over) it recovers the stream, sets
// p.Xrun to the length of the xrun in ns and, for a virtual buffer, sets
// rundata.FlagSimulated in p.Flags.
type Driver interface {
	Open(cfg Config) (Granted, error)
	// Start starts the stream and returns the instant it started
	// (CLOCK_MONOTONIC ns); the first period is due one period later.
	Start() (int64, error)
	Wait(p *rundata.Sample) error
	Transfer(p *rundata.Sample) error
	Close() error
}

// Pinnable is implemented by drivers whose Wait and Transfer make only raw
// system calls (unix.RawSyscall*, audio.Sleeper), never ones through which
// the Go runtime may hand the thread's P away. The engine then pins its
// loop so that the Go scheduler can never preempt it: see docs/method.md.
type Pinnable interface {
	PinnableLoop() bool
}

// A CallbackDriver owns the thread that runs each period (PortAudio calls
// back from its own thread). Run starts the stream and calls step once per
// period, after filling p.Due, p.Woke and p.Avail as Wait would; step burns
// the DSP load and records the sample, and returns false when the engine
// wants to stop. Run returns when step has returned false or stop is
// closed. Drivers that implement CallbackDriver have Start, Wait and
// Transfer unused.
type CallbackDriver interface {
	Driver
	Run(step func(p *rundata.Sample) bool, stop <-chan struct{}) error
}

// CallbackThreadName is the name a CallbackDriver gives the thread it calls
// back from (prctl PR_SET_NAME, at its first period), so that the spike
// tracer (ktrace), which cannot be told that thread's id before the stream
// runs, knows the audio thread by its name.
const CallbackThreadName = "lt-audio"

// A Keeper keeps what its capture side read (Config.KeepFrames) in memory
// taken at Open, so that the loop only copies each period; KeptWAV hands it
// over as a WAV file once the loop is over.
type Keeper interface {
	KeptWAV() []byte
}

// A Streamer hands what its capture side reads over as it reads it
// (Config.StreamCapture): the loop puts each period into a CaptureRing
// taken at Open, and StreamCapture, on a goroutine of its own beside the
// loop, writes it to w as a WAV file of no known length (StreamWAV) until
// done is closed. It returns nil at once when the stream has no capture
// to hand over.
type Streamer interface {
	StreamCapture(w io.Writer, done <-chan struct{}) error
}

// A DelayReporter says the delay its card reports beyond the buffer
// (rundata.ReportedDelay), asked once the loop is over and before Close,
// while the stream still runs; ok is false when it no longer does (it
// stopped on an xrun) and so reports nothing.
type DelayReporter interface {
	ReportedDelay() (d rundata.ReportedDelay, ok bool)
}

// Devices is implemented by drivers that can list what they can open, for
// `latencytest devices`.
type Devices interface {
	Devices() ([]DeviceInfo, error)
}

// DeviceInfo is one openable device and what it offers.
type DeviceInfo struct {
	Name        string   // what --device takes, e.g. "hw:0,0" or "jack"
	Description string   // card or host API name
	Streams     []string // "playback", "capture"
	Rates       string   // e.g. "8000-192000"
	Formats     []string
	Channels    string   // e.g. "1-2"
	PeriodSize  string   // frames, e.g. "16-65536"
	BufferSize  string   // frames
	Driver      string   // the card's driver, module, bus and interrupt (ALSA)
	Flags       []string // what the driver says of the stream (ALSA's SNDRV_PCM_INFO_* names)
	// Sides are each stream's own figures (ALSA), in Streams' order: a
	// device's playback and capture may differ (2 inputs and 4 outputs,
	// a capture at 44.1 kHz only). Rates to Flags above are the first
	// free stream's, for readers of one set.
	Sides []StreamInfo
}

// StreamInfo is what one stream (direction) of a device offers.
type StreamInfo struct {
	Stream     string // "playback" or "capture"
	Busy       string // who holds it ("pid 812 (pipewire)", "another process"); "" when it could be opened
	Rates      string
	Formats    []string
	Channels   string
	PeriodSize string // frames
	BufferSize string // frames
	Flags      []string
}
