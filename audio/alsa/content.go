//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"latencytest/audio"
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
	f, size, err := audio.ReadWAVHeader(r)
	if err != nil {
		return nil, err
	}
	return decodeSamples(r, size, f.Tag, f.Channels, f.Rate, f.Bits, f.Align)
}

// maxWAVData bounds the audio --file may hold: the whole file is decoded
// into memory at Open (as float32, then in the device's format), and ten
// minutes of 48 kHz stereo 32-bit is 220 MB.
const maxWAVData = 256 << 20

func decodeSamples(r io.Reader, size int64, tag, channels, rate, bits, align int) (*pcmData, error) {
	switch {
	case tag == 1 && (bits == 16 || bits == 24 || bits == 32):
	case tag == 3 && bits == 32:
	default:
		return nil, fmt.Errorf("%d-bit samples of format %d: want 16-, 24- or 32-bit integer PCM or 32-bit float", bits, tag)
	}
	if channels < 1 || rate < 1 {
		return nil, fmt.Errorf("%d channels at %d Hz", channels, rate)
	}
	bps := bits / 8
	if align != bps*channels {
		return nil, fmt.Errorf("block align %d for %d channels of %d bits", align, channels, bits)
	}
	// Files written while streaming carry a size of 0 or 0xFFFFFFFF:
	// read to the end then. A truncated file plays what is there. The
	// data are read as they come, never allocated from the size the
	// header claims, so memory follows the file's real content.
	if size == 0 || size == 0xFFFFFFFF || size > maxWAVData {
		size = maxWAVData + 1
	}
	raw, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if len(raw) > maxWAVData {
		return nil, fmt.Errorf("more than %d MB of audio", maxWAVData>>20)
	}
	n := len(raw) / align * channels
	if n == 0 {
		return nil, errors.New("no samples")
	}
	d := &pcmData{rate: rate, channels: channels, samples: make([]float32, n)}
	le := binary.LittleEndian
	for i := range d.samples {
		b := raw[i*bps:]
		var v float32
		switch {
		case tag == 3:
			v = math.Float32frombits(le.Uint32(b))
		case bits == 16:
			v = float32(int16(le.Uint16(b))) / (1 << 15)
		case bits == 24:
			v = float32(int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24)>>8) / (1 << 23)
		default:
			v = float32(float64(int32(le.Uint32(b))) / (1 << 31))
		}
		d.samples[i] = v
	}
	return d, nil
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
