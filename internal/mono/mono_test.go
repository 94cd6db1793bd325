package mono

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Now is CLOCK_MONOTONIC: between two clock_gettime readings.
func TestNowIsClockMonotonic(t *testing.T) {
	for range 1000 {
		var a, b unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		n := Now()
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if n < a.Nano() || n > b.Nano() {
			t.Fatalf("Now %d, not between CLOCK_MONOTONIC %d and %d", n, a.Nano(), b.Nano())
		}
	}
}
