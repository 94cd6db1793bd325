package sound

import (
	"errors"
	"fmt"
	"math"
)

// mlsTaps are the taps of a primitive polynomial for each supported order
// (x^n + ... + 1, Xilinx XAPP052's table), so that the shift register runs
// through all 2^n-1 non-zero states before it repeats.
var mlsTaps = map[int][]int{
	10: {10, 7}, 11: {11, 9}, 12: {12, 11, 10, 4}, 13: {13, 12, 11, 8}, 14: {14, 13, 12, 2},
	15: {15, 14}, 16: {16, 15, 13, 4}, 17: {17, 14}, 18: {18, 11},
}

// MLS returns a maximum length sequence of 2^order-1 frames at ±amp.
// Its autocorrelation is one sharp peak, so a capture that holds it, at any
// gain and under noise, shows where it starts to the frame (Find); and it
// is flat in spectrum, so no resonance of the path hides it, unlike a
// tone burst's onset, which alsabat --roundtriplatency looks for.
// Orders 10 to 18 (21 ms to 5.5 s at 48 kHz).
func MLS(order int, amp float32) ([]float32, error) {
	taps, ok := mlsTaps[order]
	if !ok {
		return nil, fmt.Errorf("MLS of order %d: want 10 to 18", order)
	}
	var mask uint32
	for _, t := range taps {
		mask |= 1 << (order - t)
	}
	out := make([]float32, 1<<order-1)
	state := uint32(1)
	for i := range out {
		out[i] = -amp
		if state&1 != 0 {
			out[i] = amp
		}
		fb := uint32(0)
		for m := state & mask; m != 0; m &= m - 1 {
			fb ^= 1
		}
		state = state>>1 | fb<<(order-1)
	}
	return out, nil
}

// A Match is where a reference signal starts in a capture.
type Match struct {
	// Offset is the capture frame where the reference's first frame lies.
	Offset int
	// Score is the normalised correlation there, in [-1, 1]: 1 for an
	// exact copy at any gain, lower with noise, negative when the path
	// inverts the polarity.
	Score float64
}

// MinScore is the smallest |Score| Find accepts as the reference found.
// Noise alone scores about 4/sqrt(len(ref)) at its best lag (0.06 for an
// order-12 MLS); the reference under noise as loud as itself scores 0.7.
const MinScore = 0.3

// ErrNotFound says a capture does not hold the reference.
var ErrNotFound = errors.New("the reference signal is not in the capture")

// Find locates ref in x: the offset at which the whole of ref lies in x
// with the highest normalised correlation (by magnitude). A reference cut
// by the end of x is not found. It errs with ErrNotFound when the best
// |Score| is below MinScore.
func Find(x, ref []float32) (Match, error) {
	if len(ref) == 0 || len(ref) > len(x) {
		return Match{}, fmt.Errorf("a reference of %d frames in a capture of %d: %w", len(ref), len(x), ErrNotFound)
	}
	c := correlate(x, ref)
	var rr float64
	for _, v := range ref {
		rr += float64(v) * float64(v)
	}
	// The energy of x under the window at each offset, from prefix sums.
	sq := make([]float64, len(x)+1)
	for i, v := range x {
		sq[i+1] = sq[i] + float64(v)*float64(v)
	}
	// Windows 60 dB quieter than the loudest are not judged: there the
	// FFT's rounding, divided by almost nothing, would score anything.
	var loudest float64
	for k := range c {
		loudest = max(loudest, sq[k+len(ref)]-sq[k])
	}
	best := Match{Offset: -1}
	for k, v := range c {
		xx := sq[k+len(ref)] - sq[k]
		if xx <= loudest*1e-6 || rr <= 0 {
			continue
		}
		if s := v / math.Sqrt(xx*rr); math.Abs(s) > math.Abs(best.Score) {
			best = Match{Offset: k, Score: s}
		}
	}
	if math.Abs(best.Score) < MinScore {
		return best, fmt.Errorf("best score %.3f at frame %d, under %.1f: %w", best.Score, best.Offset, MinScore, ErrNotFound)
	}
	return best, nil
}
