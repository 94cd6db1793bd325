package runner

import (
	"bytes"
	"testing"
	"time"
)

// The progress line says the phase's time and the whole run's: phase 2 of
// 3, 10 s into a 30 s phase, one 30 s phase after it: 50 s left. A run of
// one phase, or monitor's, shows no run.
func TestProgressRunLeft(t *testing.T) {
	s := snapshot{periods: 7500, min: 10, avg: 20, max: 30, started: 0, lastDue: 10e9}
	for _, tc := range []struct {
		left runLeft
		want string
	}{
		{runLeft{2, 3, 30 * time.Second}, "[proc]  10.0/30 s  periods 7500  min 10  avg 20  max 30 µs  xruns 0  phase 2 of 3, run 50s left\n"},
		{runLeft{1, 1, 0}, "[proc]  10.0/30 s  periods 7500  min 10  avg 20  max 30 µs  xruns 0\n"},
		{runLeft{}, "[proc]  10.0/30 s  periods 7500  min 10  avg 20  max 30 µs  xruns 0\n"},
	} {
		var b bytes.Buffer
		newPrinter(&b, ProgressLines).show("proc", 30*time.Second, tc.left, s)
		if b.String() != tc.want {
			t.Errorf("%+v: %q, want %q", tc.left, b.String(), tc.want)
		}
	}
}
