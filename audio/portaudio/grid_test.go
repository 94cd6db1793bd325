//go:build portaudio

package portaudio

import (
	"math"
	"testing"
)

// A server whose clock runs 0.1 % slow against CLOCK_MONOTONIC, with
// wakeups late by a pattern of known amounts: once the fit has settled,
// the grid gives back each lateness to within a microsecond, where the
// nominal rate would be off by 1.3 µs more every period.
func TestGridFollowsDrift(t *testing.T) {
	const rate, frames = 48000, 64
	period := 1.001 * frames * 1e9 / rate
	g := newGrid(rate, frames, true)
	start := 5e12
	lates := []float64{3e3, 40e3, 0, 12e3, 250e3, 7e3, 0, 90e3}
	for k := 0; k < 20000; k++ {
		late := lates[k%len(lates)]
		woke := int64(start + float64(k)*period + late)
		due, missed := g.next(woke)
		if missed != 0 {
			t.Fatalf("period %d: %d missed periods, none were", k, missed)
		}
		if k > 2000 {
			if got := float64(woke - due); math.Abs(got-late) > 1e3 {
				t.Fatalf("period %d: lateness %.0f ns, want %.0f", k, got, late)
			}
		}
	}
	if got := g.nsPerFrame() * frames; math.Abs(got-period) > 1 {
		t.Errorf("fitted period %.1f ns, want %.1f", got, period)
	}
}

// A lateness that lasts (a stress phase: from period 10000 on, most
// callbacks are 200 µs late) is not absorbed into the grid as long as
// some callbacks still come on time now and then: the slope is fitted to
// the earliest callback of each block.
func TestGridKeepsLastingLateness(t *testing.T) {
	const rate, frames = 48000, 64
	period := float64(frames) * 1e9 / rate
	g := newGrid(rate, frames, true)
	for k := 0; k < 60000; k++ {
		late := float64(k%3) * 2e3
		if k >= 10000 && k%7 != 0 {
			late = 200e3
		}
		woke := int64(1e12 + float64(k)*period + late)
		due, _ := g.next(woke)
		if k > 10000 && math.Abs(float64(woke-due)-late) > 2e3 {
			t.Fatalf("period %d: lateness %d ns, want %.0f", k, woke-due, late)
		}
	}
}

// JACK: a 50 ms stall misses 37 cycles; JACK then runs the client twice
// in one cycle; afterwards the grid is where it was.
func TestGridStallOnJack(t *testing.T) {
	const rate, frames = 48000, 64
	period := float64(frames) * 1e9 / rate
	g := newGrid(rate, frames, true)
	at := func(c int64, late float64) int64 { return int64(1e12 + float64(c)*period + late) }
	late := func(c int64) float64 { return float64(c%4) * 10e3 }
	for c := int64(0); c < 1000; c++ {
		g.next(at(c, late(c)))
	}
	// Callback 999's step sleeps 50 ms; the next activation runs at
	// once, in cycle 1037, and the current one right after it.
	stallEnd := float64(at(999, late(999))) + 50e6
	c := int64((stallEnd - 1e12) / period)
	due, missed := g.next(int64(stallEnd))
	if missed != c-1000 || math.Abs(float64(due)-(1e12+float64(c)*period)) > 10 {
		t.Fatalf("after the stall: missed %d (want %d), due %d (want cycle %d's start)", missed, c-1000, due, c)
	}
	due2, missed2 := g.next(int64(stallEnd) + 190e3)
	if missed2 != 0 || due2 != due {
		t.Fatalf("second call in the cycle: missed %d, due %d; want 0 and %d", missed2, due2, due)
	}
	for k := c + 1; k < c+100; k++ {
		due, missed := g.next(at(k, late(k)))
		if missed != 0 || math.Abs(float64(at(k, late(k))-due)-late(k)) > 100 {
			t.Fatalf("cycle %d after the stall: missed %d, lateness %d, want %.0f", k, missed, at(k, late(k))-due, late(k))
		}
	}
}

// A buffered host API primes its buffer with a burst of callbacks at the
// start; the grid settles on the steady callbacks after it, and restart
// re-anchors it after an xrun.
func TestGridBufferedPriming(t *testing.T) {
	const rate, frames, periods = 48000, 256, 3
	period := float64(frames) * 1e9 / rate
	g := newGrid(rate, frames, false)
	start := 1e12
	for k := 0; k < periods; k++ {
		g.next(int64(start + float64(k)*1e3)) // the burst
	}
	for k := periods; k < 500; k++ {
		// Steady state: period k is written when period k−periods+1
		// has played.
		woke := int64(start + float64(k-periods+1)*period + 20e3)
		due, missed := g.next(woke)
		if missed != 0 {
			t.Fatalf("buffered stream missed %d periods", missed)
		}
		if k > 10 && math.Abs(float64(woke-due)-20e3) > 2e3 {
			t.Fatalf("period %d: lateness %d, want 20 µs", k, woke-due)
		}
	}
}
