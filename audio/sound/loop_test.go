package sound

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// loops is k loops of one channel of l, delayed by d frames of silence.
func loops(ch []float32, k, d int) []float32 {
	x := make([]float32, d, d+k*len(ch))
	for range k {
		x = append(x, ch...)
	}
	return x
}

// The loop's sine joins itself: played over and over it has no glitch.
func TestLoopSeamless(t *testing.T) {
	for _, rate := range []int{8000, 44100, 48000, 96000, 192000} {
		l, err := NewLoop(rate)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.MLS) < rate/2 && len(l.MLS) != 1<<18-1 {
			t.Errorf("%d Hz: an MLS of %d frames, under half a second", rate, len(l.MLS))
		}
		if d := l.ToneHz - max(ToneHz, float64(rate)/100); d < -15 || d > 15 {
			t.Errorf("%d Hz: the tone is %g Hz", rate, l.ToneHz)
		}
		g, err := Glitches(loops(l.Tone, 4, 1000), l.ToneHz, rate)
		if err != nil || len(g) != 0 {
			t.Errorf("%d Hz: %v, %v", rate, g, err)
		}
	}
}

// Every repetition's delay is read to the frame; a repetition a dropout
// hides is counted missing, and frames lost shift the later readings by
// as many.
func TestRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	l, _ := NewLoop(48000)
	n := len(l.MLS)
	// A lag over half the loop is the capture ahead: n-1 is -1.
	for _, c := range []struct{ d, want int }{{0, 0}, {1, 1}, {256, 256}, {4321, 4321}, {n / 2, n / 2}, {n/2 + 1, n/2 + 1 - n}, {n - 1, -1}} {
		d := c.d
		x := degrade(r, loops(l.MLS, 5, d), 0.01)
		trips, missing := l.RoundTrips(x)
		for i, tr := range trips {
			if tr.At != i*n+d {
				t.Errorf("delay %d: repetition %d found at frame %d, want %d", d, i, tr.At, i*n+d)
			}
		}
		got, _ := delays(trips, missing)
		want := slices.Repeat([]int{c.want}, (len(x)-2*n+1)/n+1) // stretches of 2n-1 frames, one per loop boundary
		if !slices.Equal(got, want) || missing != 0 {
			t.Errorf("delay %d: %v, %d missing; want %v", d, got, missing, want)
		}
	}
	x := loops(l.MLS, 6, 700)
	// Half a loop of silence, over most of the third repetition (the
	// second only loses 600 frames of its 32767 to it), then 200 frames
	// lost in the fifth, whose stretch finds the MLS aligned before them.
	clear(x[2*n+100 : 2*n+100+n/2])
	x = slices.Concat(x[:4*n+50], x[4*n+50+200:])
	got, missing := delays(l.RoundTrips(x))
	if want := []int{700, 700, 700, 500}; !slices.Equal(got, want) || missing != 1 {
		t.Errorf("with a dropout and 200 frames lost: %v, %d missing; want %v, 1 missing", got, missing, want)
	}
}

// delays is the delay of each trip.
func delays(trips []Trip, missing int) ([]int, int) {
	var d []int
	for _, t := range trips {
		d = append(d, t.Delay)
	}
	return d, missing
}
