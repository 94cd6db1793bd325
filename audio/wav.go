package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"latencytest/rundata"
)

// WAVFormat is what a WAV file's fmt chunk says of its audio.
type WAVFormat struct {
	Tag      int // 1 integer PCM, 3 float (WAVE_FORMAT_EXTENSIBLE resolved to its subformat)
	Channels int
	Rate     int
	Bits     int
	Align    int // bytes per frame
}

// ReadWAVHeader reads a RIFF WAVE file up to its data chunk, leaving r at
// the first sample; size is what the data chunk's header claims.
func ReadWAVHeader(r io.Reader) (f WAVFormat, size int64, err error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return f, 0, errors.New("not a WAV file (no RIFF/WAVE header)")
	}
	le := binary.LittleEndian
	haveFmt := false
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return f, 0, errors.New("no data chunk")
		}
		id, size := string(ch[0:4]), int64(le.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if size < 16 || size > 1<<16 {
				return f, 0, fmt.Errorf("fmt chunk of %d bytes", size)
			}
			b := make([]byte, size+size%2)
			if _, err := io.ReadFull(r, b); err != nil {
				return f, 0, fmt.Errorf("fmt chunk: %w", err)
			}
			f = WAVFormat{Tag: int(le.Uint16(b[0:])), Channels: int(le.Uint16(b[2:])), Rate: int(le.Uint32(b[4:])),
				Align: int(le.Uint16(b[12:])), Bits: int(le.Uint16(b[14:]))}
			if f.Tag == 0xFFFE && size >= 40 { // WAVE_FORMAT_EXTENSIBLE: the subformat GUID starts with the tag
				f.Tag = int(le.Uint16(b[24:]))
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return f, 0, errors.New("data chunk before fmt chunk")
			}
			return f, size, nil
		default:
			if _, err := io.CopyN(io.Discard, r, size+size%2); err != nil {
				return f, 0, fmt.Errorf("chunk %q: %w", id, err)
			}
		}
	}
}

// WAVFileFormat reads the format of the WAV file at path (a regular file:
// a FIFO or a device is refused, not read forever).
func WAVFileFormat(path string) (WAVFormat, error) {
	fh, err := rundata.OpenRegular(path, false)
	if err != nil {
		return WAVFormat{}, err
	}
	defer fh.Close()
	f, _, err := ReadWAVHeader(fh)
	return f, err
}

// MaxWAVData bounds the audio a WAV file may hold for DecodeWAV: the whole
// file is decoded into memory (as float32, and for --file then in the
// device's format), and ten minutes of 48 kHz stereo 32-bit is 220 MB.
const MaxWAVData = 256 << 20

// DecodeWAV reads a RIFF WAVE file with 16-, 24- or 32-bit integer PCM or
// 32-bit float samples into interleaved samples in [-1, 1].
func DecodeWAV(r io.Reader) (WAVFormat, []float32, error) {
	f, size, err := ReadWAVHeader(r)
	if err != nil {
		return f, nil, err
	}
	samples, err := decodeSamples(r, size, f)
	return f, samples, err
}

func decodeSamples(r io.Reader, size int64, f WAVFormat) ([]float32, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	// Files written while streaming carry a size of 0 or 0xFFFFFFFF:
	// read to the end then. A truncated file plays what is there. The
	// data are read as they come, never allocated from the size the
	// header claims, so memory follows the file's real content.
	if size == 0 || size == 0xFFFFFFFF || size > MaxWAVData {
		size = MaxWAVData + 1
	}
	raw, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if len(raw) > MaxWAVData {
		return nil, fmt.Errorf("more than %d MB of audio", MaxWAVData>>20)
	}
	samples := f.Decode(make([]float32, 0, len(raw)/f.Align*f.Channels), raw)
	if len(samples) == 0 {
		return nil, errors.New("no samples")
	}
	return samples, nil
}

// Check says whether DecodeWAV and Decode read samples of format f:
// 16-, 24- or 32-bit integer PCM or 32-bit float, whole frames.
func (f WAVFormat) Check() error {
	switch {
	case f.Tag == 1 && (f.Bits == 16 || f.Bits == 24 || f.Bits == 32):
	case f.Tag == 3 && f.Bits == 32:
	default:
		return fmt.Errorf("%d-bit samples of format %d: want 16-, 24- or 32-bit integer PCM or 32-bit float", f.Bits, f.Tag)
	}
	if f.Channels < 1 || f.Rate < 1 {
		return fmt.Errorf("%d channels at %d Hz", f.Channels, f.Rate)
	}
	if f.Align != f.Bits/8*f.Channels {
		return fmt.Errorf("block align %d for %d channels of %d bits", f.Align, f.Channels, f.Bits)
	}
	return nil
}

// Decode appends the samples of the whole frames in raw, of format f (one
// Check accepts), to dst, in [-1, 1].
func (f WAVFormat) Decode(dst []float32, raw []byte) []float32 {
	bps := f.Bits / 8
	n := len(raw) / max(f.Align, 1) * f.Channels
	le := binary.LittleEndian
	for i := range n {
		b := raw[i*bps:]
		var v float32
		switch {
		case f.Tag == 3:
			v = math.Float32frombits(le.Uint32(b))
		case f.Bits == 16:
			v = float32(int16(le.Uint16(b))) / (1 << 15)
		case f.Bits == 24:
			v = float32(int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24)>>8) / (1 << 23)
		default:
			v = float32(float64(int32(le.Uint32(b))) / (1 << 31))
		}
		dst = append(dst, v)
	}
	return dst
}

// WAVHeader is the 44-byte header of a WAV file of f holding dataBytes of
// audio: integer PCM (tag 1) or float (tag 3), as f.Tag says.
func WAVHeader(f WAVFormat, dataBytes int) []byte {
	le := binary.LittleEndian
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	le.PutUint32(h[4:], uint32(36+dataBytes))
	copy(h[8:], "WAVEfmt ")
	le.PutUint32(h[16:], 16)
	le.PutUint16(h[20:], uint16(f.Tag))
	le.PutUint16(h[22:], uint16(f.Channels))
	le.PutUint32(h[24:], uint32(f.Rate))
	le.PutUint32(h[28:], uint32(f.Rate*f.Align))
	le.PutUint16(h[32:], uint16(f.Align))
	le.PutUint16(h[34:], uint16(f.Bits))
	copy(h[36:], "data")
	le.PutUint32(h[40:], uint32(dataBytes))
	return h
}
