//go:build vm

package alsa

import (
	"bytes"
	"strings"
	"testing"

	"latencytest/audio"
	"latencytest/internal/badinput"
)

// TestVMDuplexSidesDiffer: a duplex stream whose sides take different
// channels and formats, on snd-aloop, and the rate both must share.
//
// snd-aloop cannot give unequal sides on one cable: a cable (playback on
// hw:Loopback,0,N, capture on hw:Loopback,1,N, or the other way round)
// holds its other end to the format, rate and channels of the end
// prepared first (aloop.c: params_change at prepare sets cable->hw,
// which the open's hw rules then apply), so a duplex stream playing into
// hw:Loopback,0 and capturing the same cable on hw:Loopback,1 always has
// sides alike. A duplex stream on hw:Loopback,0,N alone spans two cables:
// its playback feeds hw:Loopback,1,N's capture, its capture reads what
// hw:Loopback,1,N plays. A feeder prepared on hw:Loopback,1,N with 2
// channels of S32_LE at 44.1 kHz holds hw:Loopback,0,N's capture to
// that, while its playback, whose cable's other end is not open, takes
// anything: the sides of an interface with 2 inputs and 4 outputs and an
// ADC of its own format. Not covered here: a capture with the same
// channels but another period range, which snd-aloop (one period rule
// for both ends) cannot make; the fake card's test covers it
// (TestDuplexSidesDiffer).
func TestVMDuplexSidesDiffer(t *testing.T) {
	const sub = "2" // a subdevice the other tests, taking any free one, do not reach first
	feeder := feed(t, "hw:Loopback,1,"+sub, shape{access: accessMmapInterleaved, format: formatS32LE, channels: 2, rate: 44100, periodFrames: 256, periods: 4})
	defer feeder.Close()

	cfg := audio.Config{Device: "hw:Loopback,0," + sub, Stream: "duplex", Rate: 48000, Channels: 4, PeriodFrames: 256, Periods: 4, KeepFrames: 44100}
	d, g := open(t, cfg, false)
	if g.Rate != 44100 || g.Channels != 4 || g.Format != "S16_LE" {
		t.Errorf("playback side: %d Hz, %d channels, %s; want 44100 Hz (the rate both sides take), 4 channels, S16_LE", g.Rate, g.Channels, g.Format)
	}
	if g.CaptureChannels != 2 || g.CaptureFormat != "S32_LE" || g.CaptureCard == nil || g.CaptureCard.ID != "Loopback" {
		t.Errorf("capture side: %d channels, %s, card %+v; want 2 channels of S32_LE on Loopback", g.CaptureChannels, g.CaptureFormat, g.CaptureCard)
	}
	if !strings.Contains(strings.Join(g.Notes, "\n"), "44100 Hz instead of 48000: the rate both sides take") {
		t.Errorf("notes %q do not say why 44100 Hz", g.Notes)
	}
	if d.play.pcm.frameBytes != 4*2 || d.capt.pcm.frameBytes != 2*4 {
		t.Errorf("frames of %d and %d bytes, want 8 (4×S16_LE) and 8 (2×S32_LE)", d.play.pcm.frameBytes, d.capt.pcm.frameBytes)
	}
	_, xruns := loop(t, d, 2*44100/256)
	t.Logf("xruns at %v", xruns)
	f, samples, err := audio.DecodeWAV(bytes.NewReader(d.KeptWAV()))
	if err != nil || f.Channels != 2 || f.Rate != 44100 || f.Bits != 32 || len(samples) == 0 {
		t.Errorf("kept capture: %+v, %d samples, %v; want 2 channels of 32 bits at 44100 Hz", f, len(samples), err)
	}
	d.Close()

	cfg.RateGiven = true
	_, err = New().Open(cfg)
	if !badinput.Is(err) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "(Loopback capture) does not take 48000 Hz; nearest it allows: 44100 Hz; a duplex stream runs both sides at one rate") {
		t.Errorf("--rate 48000 with the capture held to 44100 Hz: %v", err)
	}
}

// feed opens name's playback with want exactly as negotiate grants it and
// prepares it, which sets the snd-aloop cable's shape for its other end.
func feed(t *testing.T, name string, want shape) *Driver {
	t.Helper()
	d := New()
	n, err := d.openNode(name, streamPlayback)
	if err != nil {
		t.Fatal(err)
	}
	d.play, d.sides = n.s, []*side{n.s}
	install := func(_ *node, st *settled) error { return d.install(n, st) }
	ps, _, err := settleSides(n.nodeOf(), nil, want, install)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	if ps.got.format != want.format || ps.got.channels != want.channels || ps.got.rate != want.rate {
		d.Close()
		t.Fatalf("%s: granted %+v, want %+v", name, ps.got, want)
	}
	if e := n.s.pcm.prepare(); e != 0 {
		d.Close()
		t.Fatalf("%s: prepare: %v", name, e)
	}
	return d
}

// TestVMDevicesSides: each stream of snd-aloop's devices is listed with
// its own figures.
func TestVMDevicesSides(t *testing.T) {
	devs, err := New().Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range devs {
		if !strings.HasPrefix(dev.Name, "hw:Loopback,") {
			continue
		}
		if len(dev.Sides) != 2 || dev.Sides[0].Stream != "playback" || dev.Sides[1].Stream != "capture" {
			t.Errorf("%s: sides %+v, want playback and capture", dev.Name, dev.Sides)
			continue
		}
		for _, s := range dev.Sides {
			if s.Busy == "" && (s.Rates == "" || s.Channels == "" || len(s.Formats) == 0 || s.PeriodSize == "") {
				t.Errorf("%s %s: %+v, want its rates, channels, formats and period sizes", dev.Name, s.Stream, s)
			}
		}
	}
}
