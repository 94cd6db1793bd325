//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// fakeCard is a card whose playback and capture are fakeDevices of their
// own: where they differ is the point.
type fakeCard struct {
	play, capt *fakeDevice
}

// usbLike is a card with 4 outputs and inputs like them; each test makes
// its capture side differ.
func usbLike() fakeCard {
	dev := func() *fakeDevice {
		f := dummyLike()
		f.chMin, f.chMax = 1, 4
		f.rates = []uint32{44100, 48000, 96000}
		return f
	}
	return fakeCard{play: dev(), capt: dev()}
}

// settle negotiates the card as Open does (settleSides), recording the
// order in which the sides were installed.
func (c fakeCard) settle(want shape) (ps, cs *settled, order []string, err error) {
	play := &node{r: c.play, label: "hw:2,0 (USB playback)", dir: "playback"}
	capt := &node{r: c.capt, label: "hw:2,0 (USB capture)", dir: "capture"}
	ps, cs, err = settleSides(play, capt, want, func(n *node, _ *settled) error {
		order = append(order, n.dir)
		return nil
	})
	return ps, cs, order, err
}

// A duplex's capture side takes its own channels, format and periods where
// it cannot take the playback's, at the playback's rate and period; the
// notes name the capture side. Before, the capture side had to take the
// playback's shape exactly, and a card with 2 inputs and 4 outputs could
// not be opened with 4 channels.
func TestDuplexSidesDiffer(t *testing.T) {
	want := shape{access: accessMmapInterleaved, channels: 4, rate: 48000, periodFrames: 64, periods: 2}
	for _, tc := range []struct {
		name        string
		capt        func(*fakeDevice)
		play        func(*fakeDevice)
		playGot     shape
		captGot     shape
		note        string // in the capture side's notes
		wantNoNotes bool   // the capture takes the playback's shape
	}{
		{name: "2 in, 4 out", capt: func(f *fakeDevice) { f.chMin, f.chMax = 2, 2 },
			playGot: shape{format: formatS16LE, channels: 4}, captGot: shape{format: formatS16LE, channels: 2},
			note: "capture side hw:2,0 (USB capture): 2 channels instead of 4"},
		{name: "capture S24_3LE only", capt: func(f *fakeDevice) { f.formats = []int{formatS24_3LE} },
			playGot: shape{format: formatS16LE, channels: 4}, captGot: shape{format: formatS24_3LE, channels: 4},
			note: "capture side hw:2,0 (USB capture): format S24_3LE: the device takes no S16_LE"},
		{name: "the playback's format first", play: func(f *fakeDevice) { f.formats = []int{formatS32LE} },
			capt:    func(f *fakeDevice) { f.formats = []int{formatS16LE, formatS32LE} },
			playGot: shape{format: formatS32LE, channels: 4}, captGot: shape{format: formatS32LE, channels: 4}, wantNoNotes: true},
		{name: "capture periods", capt: func(f *fakeDevice) { f.periodsMin = 3 },
			playGot: shape{format: formatS16LE, channels: 4}, captGot: shape{format: formatS16LE, channels: 4, periods: 3},
			note: "3 periods instead of 2"},
		{name: "alike", playGot: shape{format: formatS16LE, channels: 4}, captGot: shape{format: formatS16LE, channels: 4}, wantNoNotes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := usbLike()
			if tc.play != nil {
				tc.play(c.play)
			}
			if tc.capt != nil {
				tc.capt(c.capt)
			}
			ps, cs, order, err := c.settle(want)
			if err != nil {
				t.Fatal(err)
			}
			check := func(side string, got, w shape) {
				if w.periods == 0 {
					w.periods = 2
				}
				if got.format != w.format || got.channels != w.channels || got.rate != 48000 || got.periodFrames != 64 || got.periods != w.periods {
					t.Errorf("%s granted %s, %d channels, %d Hz, %d×%d; want %s, %d channels, 48000 Hz, %d×64",
						side, formatName(got.format), got.channels, got.rate, got.periods, got.periodFrames, formatName(w.format), w.channels, w.periods)
				}
			}
			check("playback", ps.got, tc.playGot)
			check("capture", cs.got, tc.captGot)
			if !slices.Equal(order, []string{"playback", "capture"}) {
				t.Errorf("installed %v, want playback before capture is negotiated", order)
			}
			if tc.wantNoNotes && cs.notes != nil {
				t.Errorf("capture notes %q for a side that takes the playback's shape", cs.notes)
			}
			if tc.note != "" && !slices.ContainsFunc(cs.notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("capture notes %q, want one containing %q", cs.notes, tc.note)
			}
			if b := cs.h.interval(paramBufferSize); int(b.lo()) != cs.got.periods*64 || b.lo() != b.hi() {
				t.Errorf("capture buffer %s, want %d×64", b, cs.got.periods)
			}
		})
	}
}

// The rate is one for both sides. Not asked for, it is one both take,
// nearest the default; asked for, or taken by no side but one, it is one
// line naming each side's and why.
func TestDuplexRate(t *testing.T) {
	want := shape{access: accessMmapInterleaved, channels: 2, rate: 48000, periodFrames: 64, periods: 2, anyRate: true}

	c := usbLike()
	c.capt.rates = []uint32{44100}
	ps, cs, _, err := c.settle(want)
	if err != nil {
		t.Fatal(err)
	}
	if ps.got.rate != 44100 || cs.got.rate != 44100 {
		t.Errorf("rates %d and %d, want both 44100 (all the capture takes)", ps.got.rate, cs.got.rate)
	}
	if !slices.ContainsFunc(ps.notes, func(n string) bool {
		return strings.Contains(n, "44100 Hz instead of 48000: the rate both sides take (playback 44100, 48000, 96000 Hz, capture 44100 Hz)")
	}) {
		t.Errorf("notes %q, want one saying why 44100 Hz", ps.notes)
	}

	given := want
	given.anyRate = false
	_, _, _, err = c.settle(given)
	if !badinput.Is(err) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "--rate: hw:2,0 (USB capture) does not take 48000 Hz; nearest it allows: 44100 Hz; a duplex stream runs both sides at one rate") {
		t.Errorf("--rate 48000 with a capture at 44.1 kHz only: %v", err)
	}

	c.play.rates = []uint32{48000}
	_, _, _, err = c.settle(want)
	if !badinput.Is(err) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "--rate: hw:2,0 (USB playback) and hw:2,0 (USB capture) share no rate (playback takes 48000 Hz, capture 44100 Hz)") {
		t.Errorf("sides with no rate in common: %v", err)
	}

	c = usbLike()
	c.capt.periodStep = 48
	_, _, _, err = c.settle(want)
	if !badinput.Is(err) || !strings.Contains(err.Error(), "--period: hw:2,0 (USB capture) does not take a period of 64 frames") {
		t.Errorf("a period the capture refuses: %v", err)
	}
}

// One side alone negotiates as before, and a capture stream gets what it
// asked for on its own.
func TestOneSideSettles(t *testing.T) {
	c := usbLike()
	c.capt.chMin, c.capt.chMax = 2, 2
	n := &node{r: c.capt, label: "hw:2,0 (USB capture)", dir: "capture"}
	ps, cs, err := settleSides(nil, n, shape{channels: 4, rate: 48000, periodFrames: 64, periods: 2}, nil)
	if err != nil || ps != nil || cs == nil || cs.got.channels != 2 {
		t.Fatalf("capture alone: %+v %+v %v", ps, cs, err)
	}
	if len(cs.notes) != 1 || strings.HasPrefix(cs.notes[0], "capture side") {
		t.Errorf("notes %q: a stream of one side needs no side named", cs.notes)
	}
}

// The format tried first is the one asked for, when it is one this
// package writes; S8 (0, the zero shape's) asks for none.
func TestFormatOrder(t *testing.T) {
	if got := formatOrder(0); !slices.Equal(got, preferredFormats) {
		t.Errorf("no preference: %v", got)
	}
	if got := formatOrder(formatS24_3LE); got[0] != formatS24_3LE || len(got) != len(preferredFormats) {
		t.Errorf("S24_3LE first: %v", got)
	}
	if got := formatOrder(33); !slices.Equal(got, preferredFormats) {
		t.Errorf("a format never written: %v", got)
	}
}

// latencytest devices lists each stream of a device with its own
// formats, channels, rates and ranges, and a busy one with its holder.
func TestDevicesListsEachStream(t *testing.T) {
	sys := fixture(t)
	card := usbLike()
	card.play.formats = []int{formatS16LE, formatS32LE}
	card.play.periodMin = 32
	card.capt.formats = []int{formatS24_3LE}
	card.capt.chMin, card.capt.chMax = 2, 2
	card.capt.rates = []uint32{44100}
	streams := map[string]*fakeDevice{"pcmC1D0p": card.play, "pcmC1D0c": card.capt, "pcmC0D0p": dummyLike(), "pcmC1D1p": dummyLike()}
	d := &Driver{sys: sys, probeWith: func(path string, stream int) (refiner, func(), error) {
		base := filepath.Base(path)
		if base == "pcmC1D1c" {
			return nil, nil, unix.EBUSY
		}
		f, ok := streams[base]
		if !ok {
			return nil, nil, unix.ENOENT
		}
		return f, func() {}, nil
	}}
	devs, err := d.Devices()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, dev := range devs {
		names = append(names, dev.Name)
	}
	if !slices.Equal(names, []string{"hw:Dummy,0", "hw:Loopback,0", "hw:Loopback,1"}) {
		t.Fatalf("devices %v", names)
	}
	usb := devs[1]
	if !slices.Equal(usb.Streams, []string{"playback", "capture"}) || len(usb.Sides) != 2 {
		t.Fatalf("hw:Loopback,0: streams %v, %d sides", usb.Streams, len(usb.Sides))
	}
	p, c := usb.Sides[0], usb.Sides[1]
	if p.Stream != "playback" || p.Rates != "44100, 48000, 96000" || !slices.Equal(p.Formats, []string{"S16_LE", "S32_LE"}) || p.Channels != "1-4" || p.PeriodSize != "32-16384" || p.Busy != "" {
		t.Errorf("playback side %+v", p)
	}
	if c.Stream != "capture" || c.Rates != "44100" || !slices.Equal(c.Formats, []string{"S24_3LE"}) || c.Channels != "2" || c.PeriodSize != "16-16384" || c.BufferSize == "" {
		t.Errorf("capture side %+v", c)
	}
	if usb.Rates != p.Rates || usb.Channels != p.Channels {
		t.Errorf("the device's own figures %q %q, want its first stream's", usb.Rates, usb.Channels)
	}
	busy := devs[2]
	if len(busy.Sides) != 2 || busy.Sides[1].Busy != "pid 4242 (arecord)" || busy.Sides[1].Rates != "" || busy.Sides[0].Rates == "" {
		t.Errorf("hw:Loopback,1: %+v", busy.Sides)
	}
	if !strings.Contains(busy.Description, "capture busy (pid 4242 (arecord))") {
		t.Errorf("description %q does not name the holder", busy.Description)
	}
}

// Granted names a duplex's capture side apart from the playback's, as
// run.json's capture_card, capture_channels and capture_format; a stream
// of one side names none.
func TestGrantedCaptureSide(t *testing.T) {
	play := &side{card: &rundata.Card{Index: 0, ID: "PCH"}, shape: shape{format: formatS16LE, channels: 4}}
	capt := &side{card: &rundata.Card{Index: 2, ID: "USB"}, shape: shape{format: formatS24_3LE, channels: 2}}
	var g audio.Granted
	captureSide(&g, play, capt)
	if g.CaptureCard == nil || g.CaptureCard.ID != "USB" || g.CaptureChannels != 2 || g.CaptureFormat != "S24_3LE" {
		t.Errorf("duplex: %+v", g)
	}
	g = audio.Granted{}
	captureSide(&g, nil, capt)
	if g.CaptureCard != nil || g.CaptureChannels != 0 || g.CaptureFormat != "" {
		t.Errorf("capture alone: %+v", g)
	}
}
