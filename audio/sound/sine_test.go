package sound

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const rate = 48000

// ms1 is the tolerance the task sets: every glitch within 1 ms of where it
// was injected.
const ms1 = rate / 1000

// tone is lead frames of silence, frames of a sine (from frame phase0 of
// it, at gain), then tail frames of silence.
func tone(freq, gain float64, phase0, lead, frames, tail int) []float32 {
	x := make([]float32, lead+frames+tail)
	Sine(x[lead:lead+frames], gain, freq, rate, phase0)
	return x
}

// degrade adds noise of sigma and rounds to 16 bits, as a loopback at
// S16_LE hands it back.
func degrade(r *rand.Rand, x []float32, sigma float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(math.Round((float64(v)+sigma*r.NormFloat64())*32767) / 32767)
	}
	return out
}

// An injection is one damage done to a clean capture, and where.
type injection struct {
	name   string
	at     int // the frame of the damaged capture where it starts
	frames int // its length in the damaged capture (0 for a splice)
	apply  func(x []float32) []float32
}

// removed skips n frames at frame at (the engine lost them).
func removed(at, n int) injection {
	return injection{"removed", at, 0, func(x []float32) []float32 { return slices.Concat(x[:at], x[at+n:]) }}
}

// silenced inserts n frames of silence at frame at (an xrun's silence).
func silenced(at, n int) injection {
	return injection{"silence", at, n, func(x []float32) []float32 { return slices.Concat(x[:at], make([]float32, n), x[at:]) }}
}

// zeroed replaces n frames at frame at with silence (a dropout).
func zeroed(at, n int) injection {
	return injection{"zeroed", at, n, func(x []float32) []float32 {
		y := slices.Clone(x)
		clear(y[at : at+n])
		return y
	}}
}

// repeated plays the n frames before frame at again (a period played twice).
func repeated(at, n int) injection {
	return injection{"repeated", at, 0, func(x []float32) []float32 { return slices.Concat(x[:at], x[at-n:at], x[at:]) }}
}

// checkFound: exactly the injected glitches, each starting within 1 ms of
// its injection and, for a silence, as long as it within 1 ms.
func checkFound(t *testing.T, name string, got []Glitch, want []injection) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d glitches %v, want %d", name, len(got), got, len(want))
		return
	}
	for i, g := range got {
		w := want[i]
		if abs(g.Start-w.at) > ms1 || (w.frames > 0 && abs(g.Frames-w.frames) > ms1) || g.Frames < 1 {
			t.Errorf("%s: glitch %d at %d for %d frames, injected %s at %d for %d", name, i, g.Start, g.Frames, w.name, w.at, w.frames)
		}
	}
}

func abs(n int) int { return max(n, -n) }

// A clean capture has no glitch: at any gain, phase and frequency, with
// silence around the tone, in float and at 16 bits under noise.
func TestGlitchesNoneInvented(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, freq := range []float64{480, 997, 1000, 5000, 16000} {
		for _, gain := range []float64{0.001, 0.5, 1} {
			x := tone(freq, gain, r.IntN(rate), 3000+r.IntN(3000), 2*rate, 2000)
			for name, y := range map[string][]float32{"float": x, "s16": degrade(r, x, 0), "noise": degrade(r, x, gain/1000)} {
				if gain == 0.001 && name != "float" {
					continue // at -60 dBFS, 16 bits leave 41 dB of signal to noise, under the 60 dB the detector is built for
				}
				g, err := Glitches(y, freq, rate)
				if err != nil || len(g) != 0 {
					t.Errorf("%g Hz at gain %g, %s: %v, %v", freq, gain, name, g, err)
				}
			}
		}
	}
}

// Every injected glitch is found, within 1 ms, and nothing else: frames
// removed (a few, 50 ms and 300 ms, as a stalled engine loses them),
// silence inserted or written over the tone, a block played twice; clean,
// at another gain and under noise at -60 dB.
func TestGlitchesInjected(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const freq = 997 // alsabat's default tone: a cycle of 48.14 frames, so no short splice is whole cycles
	for _, inj := range []injection{
		removed(30000, 1), removed(30000, 17), removed(30000, 2400), removed(30000, 14400),
		silenced(30000, 3), silenced(30000, 64), silenced(30000, 2400), silenced(30000, 14400),
		zeroed(30000, 10), zeroed(30000, 2400), repeated(30000, 64), repeated(30000, 2400),
	} {
		for _, gain := range []float64{0.5, 0.05} {
			for _, sigma := range []float64{0, gain / 1000} {
				// A different phase at each injection: the worst (a splice at a peak) included by chance.
				x := tone(freq, gain, r.IntN(rate), 0, 3*rate, 0)
				y := degrade(r, inj.apply(x), sigma)
				g, err := Glitches(y, freq, rate)
				if err != nil {
					t.Fatalf("%s %d: %v", inj.name, inj.frames, err)
				}
				checkFound(t, inj.name, g, []injection{inj})
			}
		}
	}
}

// Several glitches in one capture are told apart, in order.
func TestGlitchesSeveral(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x := tone(997, 0.5, 0, 4000, 5*rate, 4000)
	// Applied in order: each one's frame is where it lands in the final
	// capture, as those after it lie later.
	want := []injection{silenced(20000, 2400), removed(60000, 2400), zeroed(100000, 480), repeated(150000, 300), removed(200000, 14400)}
	for _, inj := range want {
		x = inj.apply(x)
	}
	g, err := Glitches(degrade(r, x, 0.0005), 997, rate)
	if err != nil {
		t.Fatal(err)
	}
	checkFound(t, "several", g, want)
}

// What is not a steady sine at that frequency is said so, not read as
// one long glitch; frequencies the method cannot judge are refused.
func TestGlitchesNoTone(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for name, x := range map[string][]float32{
		"silence": make([]float32, rate),
		"noise":   noise(r, rate, 0.3),
		"other":   tone(2000, 0.5, 0, 1000, rate, 1000),
		"short":   tone(997, 0.5, 0, 0, 100, 0),
	} {
		if g, err := Glitches(x, 997, rate); !errors.Is(err, ErrNoTone) {
			t.Errorf("%s: %v, %v; want ErrNoTone", name, g, err)
		}
	}
	x := tone(997, 0.5, 0, 0, rate, 0)
	for _, c := range []struct {
		freq float64
		rate int
	}{{100, rate}, {20000, rate}, {997, 0}, {math.NaN(), rate}} {
		if _, err := Glitches(x, c.freq, c.rate); err == nil || errors.Is(err, ErrNoTone) {
			t.Errorf("%g Hz at %d: %v; want the arguments refused", c.freq, c.rate, err)
		}
	}
}

// Sine is one sine across blocks: rendered in pieces or whole, the same.
func TestSineJoins(t *testing.T) {
	whole := make([]float32, 1000)
	Sine(whole, 0.5, 997, rate, 123)
	pieces := make([]float32, 1000)
	for i := 0; i < 1000; i += 64 {
		Sine(pieces[i:min(i+64, 1000)], 0.5, 997, rate, 123+i)
	}
	if !slices.Equal(whole, pieces) {
		t.Error("a sine rendered in blocks differs from one rendered whole")
	}
	if g, err := Glitches(slices.Concat(pieces, pieces[:0]), 997, rate); err != nil || len(g) != 0 {
		t.Errorf("the blocks joined: %v, %v", g, err)
	}
}

// A stretch of a capture that goes on: a tone that stops before the
// stretch's end is a break there (GlitchesGoingOn), where a whole
// capture's end is none (Glitches); a stretch that begins in the silence
// is judged from where the tone is back, and a clean one has none.
func TestGlitchesGoingOn(t *testing.T) {
	stops := tone(997, 0.5, 0, 0, rate/2, rate/5) // 0.5 s of tone, then 200 ms of silence
	g, err := GlitchesGoingOn(stops, 997, rate)
	checkFound(t, "going on", g, []injection{{name: "stopped", at: rate / 2}})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := Glitches(stops, 997, rate); err != nil || len(g) != 0 {
		t.Errorf("a whole capture's end: %v, %v; want none", g, err)
	}
	back := tone(997, 0.5, 0, rate/5, rate/2, 0)
	clean := tone(997, 0.5, 123, 0, rate/2, 0)
	for name, x := range map[string][]float32{"back": back, "clean": clean} {
		if g, err := GlitchesGoingOn(x, 997, rate); err != nil || len(g) != 0 {
			t.Errorf("%s: %v, %v; want none", name, g, err)
		}
	}
}
