package sound

import (
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// The FFT against the DFT's definition, forwards and back.
func TestFFT(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 8, 64, 256} {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		got := append([]complex128(nil), x...)
		fft(got, false)
		for k := range n {
			var want complex128
			for i, v := range x {
				want += v * cmplx.Exp(complex(0, -2*math.Pi*float64(i*k)/float64(n)))
			}
			if cmplx.Abs(got[k]-want) > 1e-9*float64(n) {
				t.Fatalf("n %d, bin %d: %v, want %v", n, k, got[k], want)
			}
		}
		fft(got, true)
		for i := range x {
			if cmplx.Abs(got[i]/complex(float64(n), 0)-x[i]) > 1e-9 {
				t.Fatalf("n %d: the inverse gives %v at %d, want %v", n, got[i], i, x[i])
			}
		}
	}
}

// correlate against the sum it stands for.
func TestCorrelate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x, ref := noise(r, 1000, 1), noise(r, 77, 1)
	c := correlate(x, ref)
	if len(c) != len(x)-len(ref)+1 {
		t.Fatalf("%d lags, want %d", len(c), len(x)-len(ref)+1)
	}
	for k := range c {
		var want float64
		for i, v := range ref {
			want += float64(x[k+i]) * float64(v)
		}
		if math.Abs(c[k]-want) > 1e-6 {
			t.Fatalf("lag %d: %g, want %g", k, c[k], want)
		}
	}
}

// Every order's sequence is maximal: its circular autocorrelation is L at
// lag 0 and -1 at every other lag, which holds only for a register that
// runs through all 2^n-1 states (a wrong tap gives a shorter cycle).
func TestMLSIsMaximal(t *testing.T) {
	for order := range mlsTaps {
		s, err := MLS(order, 1)
		if err != nil {
			t.Fatal(err)
		}
		n := 1 << order
		// Two turns of the sequence, correlated with one: the circle's lags.
		two := append(append([]float32(nil), s...), s...)
		c := correlate(two, s)
		for k := 0; k < len(s); k++ {
			want := -1.0
			if k == 0 {
				want = float64(len(s))
			}
			if math.Abs(c[k]-want) > 1e-6*float64(n) {
				t.Fatalf("order %d: autocorrelation %g at lag %d, want %g", order, c[k], k, want)
			}
		}
	}
	for _, bad := range []int{0, 9, 19} {
		if _, err := MLS(bad, 1); err == nil {
			t.Errorf("MLS(%d) gave no error", bad)
		}
	}
}

func noise(r *rand.Rand, n int, sigma float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(sigma * r.NormFloat64())
	}
	return x
}

// capture is delay frames of silence, ref at gain, then tail frames, with
// noise of sigma added everywhere.
func capture(r *rand.Rand, ref []float32, delay, tail int, gain, sigma float64) []float32 {
	x := noise(r, delay+len(ref)+tail, sigma)
	for i, v := range ref {
		x[delay+i] += float32(gain * float64(v))
	}
	return x
}

// The sequence is found at its delay to the frame, at any gain, inverted,
// and under noise as loud as itself.
func TestFindDelay(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ref, _ := MLS(12, 0.5)
	for _, c := range []struct {
		delay       int
		gain, sigma float64
	}{
		{0, 1, 0}, {1, 1, 0}, {517, 1, 0}, {12345, 0.01, 0}, {300, 2, 0},
		{300, -0.7, 0}, {2048, 1, 0.05}, {999, 0.3, 0.15}, {4000, 1, 0.5},
	} {
		x := capture(r, ref, c.delay, 3000, c.gain, c.sigma)
		m, err := Find(x, ref)
		if err != nil {
			t.Errorf("delay %d, gain %g, noise %g: %v", c.delay, c.gain, c.sigma, err)
			continue
		}
		if m.Offset != c.delay || (m.Score < 0) != (c.gain < 0) {
			t.Errorf("delay %d, gain %g, noise %g: found at %d with score %.3f", c.delay, c.gain, c.sigma, m.Offset, m.Score)
		}
	}
}

// A delay of a fraction of a frame (the capture interpolated between
// frames, as a resampling path would) is found within one frame.
func TestFindFractionalDelay(t *testing.T) {
	ref, _ := MLS(13, 0.5)
	for _, frac := range []float64{0.25, 0.5, 0.75} {
		x := make([]float32, 500+len(ref)+500)
		for i := range ref {
			x[500+i] += float32((1 - frac) * float64(ref[i]))
			x[501+i] += float32(frac * float64(ref[i]))
		}
		m, err := Find(x, ref)
		if err != nil {
			t.Fatalf("delay %.2f: %v", 500+frac, err)
		}
		if math.Abs(float64(m.Offset)-(500+frac)) > 1 {
			t.Errorf("delay %.2f: found at %d", 500+frac, m.Offset)
		}
	}
}

// What does not hold the whole sequence does not find it.
func TestFindNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ref, _ := MLS(12, 0.5)
	cut := capture(r, ref, 5000, 0, 1, 0)[:5000+len(ref)/2] // longer than ref, holding half of it
	for name, x := range map[string][]float32{
		"noise":   noise(r, 20000, 0.5),
		"silence": make([]float32, 20000),
		"cut":     cut,
		"short":   ref[:100],
		"other":   capture(r, noise(r, len(ref), 0.5), 700, 700, 1, 0),
	} {
		if m, err := Find(x, ref); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %+v, %v; want ErrNotFound", name, m, err)
		}
	}
}
