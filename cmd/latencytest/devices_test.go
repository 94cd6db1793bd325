package main

import (
	"bytes"
	"strings"
	"testing"

	"latencytest/audio"
)

func TestDevicesBadInput(t *testing.T) {
	for _, args := range [][]string{{"-driver", "nope"}, {"extra"}, {"-bogus"}} {
		var out, errb bytes.Buffer
		if code := devicesMain(args, &out, &errb); code != 2 {
			t.Errorf("devices %v: exit %d, want 2", args, code)
		}
		if lines := strings.Count(strings.TrimSpace(errb.String()), "\n"); args[0] != "-bogus" && lines != 0 {
			t.Errorf("devices %v: %d lines of error, want one: %q", args, lines+1, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("devices %v wrote to stdout: %q", args, out.String())
		}
	}
}

// Every built-in driver that lists devices gets a block, even when it
// finds none (here: no sound card in this container, or whatever this
// machine has).
func TestDevicesListsEveryListingDriver(t *testing.T) {
	var out, errb bytes.Buffer
	if code := devicesMain(nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, e := range drivers() {
		_, lists := e.new().(audio.Devices)
		if got := strings.Contains(out.String(), e.name+":\n"); got != lists {
			t.Errorf("driver %s: block present %v, implements Devices %v\n%s", e.name, got, lists, out.String())
		}
	}
}

func TestWriteDevices(t *testing.T) {
	var b bytes.Buffer
	writeDevices(&b, "alsa", []audio.DeviceInfo{{
		Name: "hw:Dummy,0", Description: "card 0 [Dummy] Dummy: Dummy PCM", Streams: []string{"playback", "capture"},
		Rates: "5500-48000", Formats: []string{"U8", "S16_LE"}, Channels: "1-2", PeriodSize: "16-16384", BufferSize: "16-32768",
	}, {Name: "hw:1,0", Description: "busy", Streams: []string{"playback"}}})
	want := `alsa:
  hw:Dummy,0  card 0 [Dummy] Dummy: Dummy PCM
      streams:     playback, capture
      rates:       5500-48000
      formats:     U8 S16_LE
      channels:    1-2
      period:      16-16384 frames
      buffer:      16-32768 frames
  hw:1,0  busy
      streams:     playback
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeDevices(&b, "alsa", nil)
	if b.String() != "alsa:\n  no devices\n" {
		t.Errorf("no devices: %q", b.String())
	}
}

// A device whose streams differ lists each with its own figures, a busy
// one with its holder.
func TestWriteDevicesSides(t *testing.T) {
	var b bytes.Buffer
	writeDevices(&b, "alsa", []audio.DeviceInfo{{
		Name: "hw:USB,0", Description: "card 2 [USB] USB Audio: USB Audio", Streams: []string{"playback", "capture"},
		Rates: "44100, 48000", Formats: []string{"S16_LE"}, Channels: "4",
		Sides: []audio.StreamInfo{
			{Stream: "playback", Rates: "44100, 48000", Formats: []string{"S16_LE"}, Channels: "4", PeriodSize: "48-4096", BufferSize: "96-8192", Flags: []string{"MMAP", "BATCH"}},
			{Stream: "capture", Rates: "44100", Formats: []string{"S24_3LE"}, Channels: "2", PeriodSize: "48-4096", BufferSize: "96-8192"},
		},
	}, {Name: "hw:1,0", Description: "busy", Streams: []string{"capture"}, Sides: []audio.StreamInfo{{Stream: "capture", Busy: "pid 4242 (arecord)"}}}})
	want := `alsa:
  hw:USB,0  card 2 [USB] USB Audio: USB Audio
      streams:     playback, capture
      playback:
        rates:       44100, 48000
        formats:     S16_LE
        channels:    4
        period:      48-4096 frames
        buffer:      96-8192 frames
        flags:       MMAP BATCH
      capture:
        rates:       44100
        formats:     S24_3LE
        channels:    2
        period:      48-4096 frames
        buffer:      96-8192 frames
  hw:1,0  busy
      streams:     capture
      capture: busy, held by pid 4242 (arecord)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
