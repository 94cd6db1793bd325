package sound

import (
	"math"
	"math/bits"
)

// fft transforms x in place (radix 2; len(x) a power of two). With inverse
// it computes the unscaled inverse transform.
func fft(x []complex128, inverse bool) {
	n := len(x)
	shift := 64 - uint(bits.TrailingZeros(uint(n)))
	for i := range x {
		if j := int(bits.Reverse64(uint64(i)) >> shift); j > i {
			x[i], x[j] = x[j], x[i]
		}
	}
	sign := -1.0
	if inverse {
		sign = 1
	}
	for size := 2; size <= n; size <<= 1 {
		step := complex(math.Cos(sign*2*math.Pi/float64(size)), math.Sin(sign*2*math.Pi/float64(size)))
		for start := 0; start < n; start += size {
			w := complex(1, 0)
			for k := range size / 2 {
				a, b := x[start+k], w*x[start+k+size/2]
				x[start+k], x[start+k+size/2] = a+b, a-b
				w *= step
			}
		}
	}
}

// correlate returns c[k] = Σ x[k+i]·ref[i] for k in 0..len(x)-len(ref),
// computed through the FFT (len(ref) <= len(x)).
func correlate(x, ref []float32) []float64 {
	n := 1
	for n < len(x)+len(ref) {
		n <<= 1
	}
	a, b := make([]complex128, n), make([]complex128, n)
	for i, v := range x {
		a[i] = complex(float64(v), 0)
	}
	for i, v := range ref {
		b[i] = complex(float64(v), 0)
	}
	fft(a, false)
	fft(b, false)
	for i := range a {
		a[i] *= complex(real(b[i]), -imag(b[i]))
	}
	fft(a, true)
	out := make([]float64, len(x)-len(ref)+1)
	for k := range out {
		out[k] = real(a[k]) / float64(n)
	}
	return out
}
