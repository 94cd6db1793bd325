//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"encoding/binary"
	"io"
	"slices"

	"latencytest/audio"
)

// makeKeep takes the memory for the first frames the capture side reads
// (audio.Config.KeepFrames), at most audio.MaxWAVData bytes, and touches
// it, so that keeping a period in the loop is a copy with no page fault.
func (d *Driver) makeKeep(frames int) {
	if frames <= 0 || d.capt == nil {
		return
	}
	fb := d.capt.pcm.frameBytes
	n := min(frames, audio.MaxWAVData/fb) * fb
	d.kept = make([]byte, n)
	for i := 0; i < n; i += 4096 {
		d.kept[i] = 1
	}
	d.kept = d.kept[:0]
}

// streamSeconds is how far behind the capture side's reads a streaming
// capture's reader may fall (audio.CaptureRing): 16 s.
const streamSeconds = 16

// makeStream takes the ring a capture handed over as it is read goes
// through (audio.Config.StreamCapture).
func (d *Driver) makeStream() {
	if d.capt == nil {
		return
	}
	d.stream = audio.NewCaptureRing(streamSeconds * d.rate * d.capt.pcm.frameBytes)
}

// StreamCapture writes what the capture side reads to w as it reads it,
// until done is closed (audio.Streamer): a WAV file in the format KeptWAV
// has, of no known length.
func (d *Driver) StreamCapture(w io.Writer, done <-chan struct{}) error {
	if d.stream == nil {
		return nil
	}
	f, conv := d.keptFormat()
	return audio.StreamWAV(w, f, d.stream, conv, done)
}

// keep appends a captured period to what is kept, while there is room,
// or puts it on its way out when the capture is streamed.
func (d *Driver) keep(b []byte) {
	if d.stream != nil {
		d.stream.Put(b)
		return
	}
	n := copy(d.kept[len(d.kept):cap(d.kept)], b)
	d.kept = d.kept[:len(d.kept)+n]
}

// KeptWAV is what the capture side kept, as a WAV file in the capture
// side's own channels and format (a duplex's may differ from the
// playback's): its samples as read, but S24_LE's (24 bits in four bytes, which WAV has no plain tag
// for) moved up to 32-bit. Nil when nothing was kept.
func (d *Driver) KeptWAV() []byte {
	if len(d.kept) == 0 {
		return nil
	}
	f, conv := d.keptFormat()
	data := d.kept
	if conv != nil {
		data = slices.Clone(d.kept)
		conv(data)
	}
	return append(audio.WAVHeader(f, len(data)), data...)
}

// keptFormat is the WAV format of what the capture side reads, and the
// conversion its samples need into it (nil: none): S24_LE's moved up to
// 32-bit.
func (d *Driver) keptFormat() (audio.WAVFormat, func([]byte)) {
	format := d.capt.shape.format
	channels := d.capt.pcm.frameBytes / bytesPerSample(format)
	f := audio.WAVFormat{Tag: 1, Channels: channels, Rate: d.rate, Bits: 8 * bytesPerSample(format), Align: d.capt.pcm.frameBytes}
	switch format {
	case formatFloatLE:
		f.Tag = 3
	case formatS24LE:
		return f, shiftS24
	}
	return f, nil
}

// shiftS24 moves S24_LE samples (24 bits in four bytes) up to 32-bit, in
// place.
func shiftS24(b []byte) {
	le := binary.LittleEndian
	for i := 0; i+4 <= len(b); i += 4 {
		le.PutUint32(b[i:], le.Uint32(b[i:])<<8)
	}
}
