//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"encoding/binary"
	"testing"

	"latencytest/audio"
)

// glitchDriver plays a content whose frame i holds i (one 4-byte frame),
// 1000 frames long, in periods of 64 frames.
func glitchDriver() *Driver {
	content := make([]byte, 4000)
	for i := range 1000 {
		binary.LittleEndian.PutUint32(content[4*i:], uint32(i))
	}
	return &Driver{content: content, periodFrames: 64, play: &side{pcm: &pcm{frameBytes: 4}}}
}

// frames fills a period (in two parts, where the ring wraps, when split
// is above 0) and returns the frame numbers written; silence reads as 0.
func frames(d *Driver, split int) []uint32 {
	buf := make([]byte, 4*d.periodFrames)
	if split > 0 {
		d.fill(buf[:4*split])
		d.fill(buf[4*split:])
	} else {
		d.fill(buf)
	}
	out := make([]uint32, d.periodFrames)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(buf[4*i:])
	}
	return out
}

// run --test-glitch: a period of silence with the content going on beneath
// it (split where the ring wraps, too), frames skipped, frames repeated
// (across the loop's seam, too), each in the period written next and in
// no other.
func TestFillGlitches(t *testing.T) {
	for _, tc := range []struct {
		name       string
		g          audio.Glitch
		split      int
		startFrame int // the content's frame before the glitch
		first      uint32
		silent     bool
	}{
		{"silence", audio.Glitch{Kind: audio.GlitchSilence}, 0, 128, 0, true},
		{"silence split by the ring", audio.Glitch{Kind: audio.GlitchSilence}, 20, 128, 0, true},
		{"skip 17", audio.Glitch{Kind: audio.GlitchSkip, Frames: 17}, 0, 128, 145, false},
		{"repeat 29", audio.Glitch{Kind: audio.GlitchRepeat, Frames: 29}, 0, 128, 99, false},
		{"repeat 29 across the loop's seam", audio.Glitch{Kind: audio.GlitchRepeat, Frames: 29}, 0, 10, 981, false},
	} {
		d := glitchDriver()
		d.contentPos = 4 * tc.startFrame
		d.Glitch(tc.g)
		got := frames(d, tc.split)
		for i, f := range got {
			want := (tc.first + uint32(i)) % 1000
			if tc.silent {
				want = 0
			}
			if f != want {
				t.Fatalf("%s: frame %d of the period written %d, want %d", tc.name, i, f, want)
			}
		}
		// The next period is whole again, on from where the content is.
		next := (tc.first + 64) % 1000
		if tc.silent {
			next = uint32(tc.startFrame + 64)
		}
		for i, f := range frames(d, 0) {
			if want := (next + uint32(i)) % 1000; f != want {
				t.Fatalf("%s: the period after: frame %d is %d, want %d", tc.name, i, f, want)
			}
		}
	}
}
