//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"latencytest/audio"
	"latencytest/audio/sound"
	"latencytest/rundata"
)

// What the playback side plays. Everything is rendered at Open into one
// loop in the device's format, so the period loop only copies bytes.

// pcmData is decoded audio: interleaved samples in [-1, 1].
type pcmData struct {
	rate     int
	channels int
	samples  []float32
}

func (d *pcmData) frames() int { return len(d.samples) / d.channels }

// readWAV decodes a RIFF WAVE file with 16-, 24- or 32-bit integer PCM or
// 32-bit float samples.
func readWAV(path string) (*pcmData, error) {
	// A FIFO or a device named by --file is refused, not read forever.
	f, err := rundata.OpenRegular(path, false)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	defer f.Close()
	d, err := decodeWAV(f)
	if err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	return d, nil
}

func decodeWAV(r io.Reader) (*pcmData, error) {
	f, samples, err := audio.DecodeWAV(r)
	if err != nil {
		return nil, err
	}
	return &pcmData{rate: f.Rate, channels: f.Channels, samples: samples}, nil
}

// tone renders a loop of a sine at hz, at half of full scale, on every
// channel. The loop is one second long with a whole number of cycles, so
// hz is rounded to a whole number to loop without a click.
func tone(hz float64, rate, channels int) (*pcmData, float64) {
	cycles := math.Round(hz)
	if cycles < 1 {
		cycles = 1
	}
	d := &pcmData{rate: rate, channels: channels, samples: make([]float32, rate*channels)}
	for i := 0; i < rate; i++ {
		v := float32(0.5 * math.Sin(2*math.Pi*cycles*float64(i)/float64(rate)))
		for c := 0; c < channels; c++ {
			d.samples[i*channels+c] = v
		}
	}
	return d, cycles
}

// loopContent is the loopback's loop (sound.Loop): its sine on the first
// channel, its MLS on the second, silence on any other.
func loopContent(rate, channels int) (*pcmData, error) {
	l, err := sound.NewLoop(rate)
	if err != nil {
		return nil, err
	}
	d := &pcmData{rate: rate, channels: channels, samples: make([]float32, len(l.MLS)*channels)}
	for i := range l.MLS {
		d.samples[i*channels], d.samples[i*channels+1] = l.Tone[i], l.MLS[i]
	}
	return d, nil
}

// encode writes d in the device's sample format.
func encode(d *pcmData, format int) []byte {
	bps := bytesPerSample(format)
	out := make([]byte, len(d.samples)*bps)
	le := binary.LittleEndian
	for i, v := range d.samples {
		v = max(-1, min(1, v))
		switch format {
		case formatS16LE:
			le.PutUint16(out[i*2:], uint16(int16(math.Round(float64(v)*32767))))
		case formatS32LE:
			le.PutUint32(out[i*4:], uint32(int32(math.Round(float64(v)*2147483647))))
		case formatS24LE:
			le.PutUint32(out[i*4:], uint32(int32(math.Round(float64(v)*8388607))))
		case formatS24_3LE:
			s := uint32(int32(math.Round(float64(v) * 8388607)))
			out[i*3], out[i*3+1], out[i*3+2] = byte(s), byte(s>>8), byte(s>>16)
		case formatFloatLE:
			le.PutUint32(out[i*4:], math.Float32bits(v))
		}
	}
	return out
}

// decodeSample reads sample i of a buffer in the device's format, in
// [-1, 1]; tests and the capture side use it.
func decodeSample(b []byte, format, i int) float32 {
	le := binary.LittleEndian
	switch format {
	case formatS16LE:
		return float32(int16(le.Uint16(b[i*2:]))) / 32768
	case formatS32LE:
		return float32(float64(int32(le.Uint32(b[i*4:]))) / 2147483648)
	case formatS24LE:
		return float32(float64(int32(le.Uint32(b[i*4:])<<8)>>8) / 8388608)
	case formatS24_3LE:
		s := int32(uint32(b[i*3])|uint32(b[i*3+1])<<8|uint32(b[i*3+2])<<16) << 8 >> 8
		return float32(float64(s) / 8388608)
	default:
		return math.Float32frombits(le.Uint32(b[i*4:]))
	}
}
