package sound

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Sine writes amp·sin(2π·freq·(start+i)/rate) into dst[i]: frames start
// onwards of one endless sine, each phase computed from its frame's index,
// so that blocks rendered one after another join without a seam.
func Sine(dst []float32, amp, freq float64, rate, start int) {
	for i := range dst {
		dst[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(start+i)/float64(rate)))
	}
}

// A Glitch is a stretch of a captured sine where it was not the sine.
type Glitch struct {
	Start  int // the first frame of the capture that is wrong
	Frames int // how long it is wrong: a block of silence's length; a splice (frames skipped or repeated) is a frame or two
}

// ErrNoTone says the capture holds no sine at the frequency looked for.
var ErrNoTone = errors.New("no steady sine at that frequency in the capture")

// Glitches finds where a captured sine of freq Hz broke: every stretch
// where the sound departs from a sine by more than its noise, or falls to
// under half its amplitude. It judges the capture between the tone's first
// and last millisecond at full level, so the silence before the round trip
// brings the tone in, and after it stops, is not a glitch.
//
// A sine obeys x[n] = 2cos(ω)·x[n-1] - x[n-2] exactly, at any gain and
// phase, so the residual of that recurrence is noise alone until the
// signal jumps. A splice that shifts the phase by Δ leaves a residual of
// about 2A·sin(Δ/2)·sin(ω) at worst: a splice of whole cycles of the tone
// (Δ near 0) cannot be heard and is not found. Its amplitude A is read from
// x[n]² - x[n-1]·x[n+1] = A²·sin²(ω), which holds at any phase, averaged
// over 1 ms: that finds silence and dropouts. Glitches closer than 1 ms are
// one. freq must lie between a hundredth and a third of rate (480 Hz to
// 16 kHz at 48 kHz): under that, neighbouring frames differ too little to
// tell the amplitude through a noise of -60 dB within 1 ms.
func Glitches(x []float32, freq float64, rate int) ([]Glitch, error) {
	return glitches(x, freq, rate, false)
}

// GlitchesGoingOn is Glitches on x, a stretch of a capture that goes on
// after it (a monitor's, read a piece at a time): a tone that stops
// before x's end is a break, judged up to x's last millisecond, not the
// end of the capture. A stretch that begins in a silence is judged from
// where the tone is back, as Glitches judges a capture's start.
func GlitchesGoingOn(x []float32, freq float64, rate int) ([]Glitch, error) {
	return glitches(x, freq, rate, true)
}

// glitches is Glitches, and with goesOn GlitchesGoingOn.
func glitches(x []float32, freq float64, rate int, goesOn bool) ([]Glitch, error) {
	if rate <= 0 || !(freq >= float64(rate)/100 && freq <= float64(rate)/3) {
		return nil, fmt.Errorf("a sine of %g Hz at %d Hz: want a hundredth to a third of the rate", freq, rate)
	}
	w := 2 * math.Pi * freq / float64(rate)
	win := max(3, rate/1000)
	if len(x) < 4*win {
		return nil, fmt.Errorf("a capture of %d frames: want at least %d: %w", len(x), 4*win, ErrNoTone)
	}
	env := smoothEnvelope(x, win)
	level := steadyLevel(env)
	if level <= 0 {
		return nil, ErrNoTone
	}
	loud := func(v float64) bool { return v >= level/4 }
	first, last := slices.IndexFunc(env, loud), len(env)-1
	for !goesOn && last > first && !loud(env[last]) {
		last--
	}
	lo, hi := max(first+win, 2), last-win
	if hi <= lo {
		return nil, ErrNoTone
	}
	res := residual(x, w)
	amp := math.Sqrt(level) / math.Sin(w)
	thr, err := residualThreshold(res[lo:hi+1], env[lo:hi+1], level, amp)
	if err != nil {
		return nil, fmt.Errorf("%g Hz: %w", freq, err)
	}
	var out []Glitch
	end := -1 // last frame flagged
	for n := lo; n <= hi; n++ {
		if env[n] >= level/4 && math.Abs(res[n]) <= thr {
			continue
		}
		if len(out) > 0 && n-end <= win {
			out[len(out)-1].Frames = n - out[len(out)-1].Start + 1
		} else {
			out = append(out, Glitch{Start: n, Frames: 1})
		}
		end = n
	}
	return out, nil
}

// residual is x[n] - 2cos(ω)·x[n-1] + x[n-2] (0 for n < 2).
func residual(x []float32, w float64) []float64 {
	c := 2 * math.Cos(w)
	r := make([]float64, len(x))
	for n := 2; n < len(x); n++ {
		r[n] = float64(x[n]) - c*float64(x[n-1]) + float64(x[n-2])
	}
	return r
}

// smoothEnvelope is x[n]² - x[n-1]·x[n+1] (A²·sin²ω for a sine of
// amplitude A), averaged over win frames centred on n.
func smoothEnvelope(x []float32, win int) []float64 {
	sum := make([]float64, len(x)+1)
	for n := range x {
		var e float64
		if n > 0 && n < len(x)-1 {
			e = float64(x[n])*float64(x[n]) - float64(x[n-1])*float64(x[n+1])
		}
		sum[n+1] = sum[n] + e
	}
	out := make([]float64, len(x))
	for n := range out {
		a, b := max(0, n-win/2), min(len(x), n-win/2+win)
		out[n] = (sum[b] - sum[a]) / float64(b-a)
	}
	return out
}

// steadyLevel is the envelope of the tone at full level: the median of the
// envelope where it exceeds a quarter of its 90th percentile, so that the
// silence around the tone and its dropouts do not pull it down, nor a
// click up. 0 when there is no tone.
func steadyLevel(env []float64) float64 {
	s := slices.Sorted(slices.Values(env))
	p90 := s[len(s)*9/10]
	if p90 <= 0 {
		return 0
	}
	i, _ := slices.BinarySearch(s, p90/4)
	return s[i+(len(s)-i)/2]
}

// residualThreshold is the residual above which a frame is not the sine:
// 8 times the residual's noise (its median absolute value, scaled to a
// standard deviation, over the frames at full level) but never under 1 %
// of the amplitude. A residual noise above 1 % of the amplitude (a noise
// of about -50 dB, or a tone at another frequency: 2000 Hz read as 997
// leaves 5 %) means the capture is not a sine that can be judged.
func residualThreshold(res, env []float64, level, amp float64) (float64, error) {
	var abs []float64
	for n, r := range res {
		if env[n] >= level/4 {
			abs = append(abs, math.Abs(r))
		}
	}
	if len(abs) == 0 {
		return 0, ErrNoTone
	}
	slices.Sort(abs)
	sigma := 1.4826 * abs[len(abs)/2]
	if sigma > 0.01*amp {
		return 0, fmt.Errorf("the residual's noise is %.0f %% of the amplitude: %w", 100*sigma/amp, ErrNoTone)
	}
	return max(8*sigma, 0.01*amp), nil
}
