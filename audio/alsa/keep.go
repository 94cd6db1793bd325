//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"encoding/binary"

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

// keep appends a captured period to what is kept, while there is room.
func (d *Driver) keep(b []byte) {
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
	format := d.capt.shape.format
	channels := d.capt.pcm.frameBytes / bytesPerSample(format)
	f := audio.WAVFormat{Tag: 1, Channels: channels, Rate: d.rate, Bits: 8 * bytesPerSample(format), Align: d.capt.pcm.frameBytes}
	data := d.kept
	switch format {
	case formatFloatLE:
		f.Tag = 3
	case formatS24LE:
		le := binary.LittleEndian
		data = make([]byte, len(d.kept))
		for i := 0; i+4 <= len(data); i += 4 {
			le.PutUint32(data[i:], le.Uint32(d.kept[i:])<<8)
		}
	}
	return append(audio.WAVHeader(f, len(data)), data...)
}
