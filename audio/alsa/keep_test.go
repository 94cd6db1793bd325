//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"latencytest/audio"
	"latencytest/audio/sound"
)

// keeper is a driver whose capture side reads frames of fb bytes in format.
func keeper(format, fb, frames int) *Driver {
	d := &Driver{capt: &side{pcm: &pcm{frameBytes: fb}, shape: shape{format: format, channels: fb / bytesPerSample(format)}}, rate: 48000}
	d.makeKeep(frames)
	return d
}

// What the loop keeps comes back, as a WAV file, sample for sample: up to
// the frames asked for and no further, without allocating in the loop.
func TestKeptWAV(t *testing.T) {
	le := binary.LittleEndian
	for _, c := range []struct {
		format, bps int
		put         func(b []byte, v int32)
		want        func(v int32) float32
	}{
		{formatS16LE, 2, func(b []byte, v int32) { le.PutUint16(b, uint16(int16(v))) }, func(v int32) float32 { return float32(v) / (1 << 15) }},
		{formatS24LE, 4, func(b []byte, v int32) { le.PutUint32(b, uint32(v<<8)>>8) }, func(v int32) float32 { return float32(v) / (1 << 23) }},
		{formatS32LE, 4, func(b []byte, v int32) { le.PutUint32(b, uint32(v<<16)) }, func(v int32) float32 { return float32(v) / (1 << 15) }},
	} {
		d := keeper(c.format, 2*c.bps, 1000)
		period := make([]byte, 64*2*c.bps)
		var want []float32
		allocs := testing.AllocsPerRun(20, func() {
			for i := 0; i < len(period); i += c.bps {
				v := int32(len(d.kept)/c.bps+i/c.bps) % 30000
				c.put(period[i:], v)
			}
			d.keep(period)
		})
		for i := range 1000 * 2 {
			want = append(want, c.want(int32(i%30000)))
		}
		if allocs != 0 {
			t.Errorf("format %d: keep allocates %.0f times a period", c.format, allocs)
		}
		f, got, err := audio.DecodeWAV(bytes.NewReader(d.KeptWAV()))
		if err != nil || f.Channels != 2 || f.Rate != 48000 || !slices.Equal(got, want) {
			t.Errorf("format %d: %+v, %d samples (want %d), %v", c.format, f, len(got), len(want), err)
		}
	}
	if b := keeper(formatS16LE, 4, 0).KeptWAV(); b != nil {
		t.Errorf("nothing kept, yet a WAV of %d bytes", len(b))
	}
}

// The loop's content: the sine on the first channel, the MLS on the
// second, silence on the third, sample for sample.
func TestLoopContent(t *testing.T) {
	l, _ := sound.NewLoop(44100)
	d, err := loopContent(44100, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d.frames() != len(l.MLS) {
		t.Fatalf("%d frames, want %d", d.frames(), len(l.MLS))
	}
	for i := range l.MLS {
		if d.samples[3*i] != l.Tone[i] || d.samples[3*i+1] != l.MLS[i] || d.samples[3*i+2] != 0 {
			t.Fatalf("frame %d: %v, want %v %v 0", i, d.samples[3*i:3*i+3], l.Tone[i], l.MLS[i])
		}
	}
}

// A streamed capture (a monitor's loopback) comes out as it is read, as
// the same WAV a kept one is, S24_LE moved up to 32-bit, without
// allocating in the loop.
func TestStreamCapture(t *testing.T) {
	le := binary.LittleEndian
	d := &Driver{capt: &side{pcm: &pcm{frameBytes: 8}, shape: shape{format: formatS24LE, channels: 2}}, rate: 48000}
	d.makeStream()
	period := make([]byte, 64*8)
	n := int32(0)
	allocs := testing.AllocsPerRun(50, func() {
		for i := 0; i < len(period); i += 4 {
			le.PutUint32(period[i:], uint32((n%30000)<<8)>>8)
			n++
		}
		d.keep(period)
	})
	if allocs != 0 {
		t.Errorf("keep allocates %.0f times a period", allocs)
	}
	var want []float32
	for i := range n {
		want = append(want, float32(i%30000)/(1<<23))
	}
	var out bytes.Buffer
	done := make(chan struct{})
	close(done)
	if err := d.StreamCapture(&out, done); err != nil {
		t.Fatal(err)
	}
	f, got, err := audio.DecodeWAV(&out)
	if err != nil || f.Channels != 2 || f.Bits != 32 || !slices.Equal(got, want) {
		t.Errorf("%+v, %d samples (want %d), %v", f, len(got), len(want), err)
	}
}
