package audio

import "fmt"

// A Glitcher is a driver that can break the sound it plays on purpose: a
// test hook (run --test-glitch) for the breaks no counter reports, the
// application writing silence or a driver dropping or repeating frames
// without a word, which only the captured sound tells (run --loopback).
type Glitcher interface {
	// Glitch breaks the next period the driver writes.
	Glitch(g Glitch)
}

// GlitchKind is what a Glitch does to the sound.
type GlitchKind int

const (
	GlitchNone    GlitchKind = iota
	GlitchSilence            // the period is written as silence; the content goes on beneath it
	GlitchSkip               // Frames of the content are skipped before the period
	GlitchRepeat             // the last Frames of the content are played again
)

var glitchNames = [...]string{GlitchNone: "none", GlitchSilence: "silence", GlitchSkip: "skip", GlitchRepeat: "repeat"}

func (k GlitchKind) String() string {
	if k < 0 || int(k) >= len(glitchNames) {
		return fmt.Sprintf("GlitchKind(%d)", int(k))
	}
	return glitchNames[k]
}

// ParseGlitchKind is the kind named s.
func ParseGlitchKind(s string) (GlitchKind, bool) {
	for k, n := range glitchNames {
		if k != int(GlitchNone) && n == s {
			return GlitchKind(k), true
		}
	}
	return GlitchNone, false
}

// A Glitch is one break of the sound: its kind and, for a skip or a
// repeat, how many frames.
type Glitch struct {
	Kind   GlitchKind `json:"kind"`
	Frames int        `json:"frames,omitempty"`
}

// GlitchAt is a Glitch at a period of the phase.
type GlitchAt struct {
	At int64 `json:"at"`
	Glitch
}
