package rundata

import (
	"strings"
	"testing"
)

// A phase whose captured sound broke where no xrun or pointer jump said
// so did not hold, whatever its wakeups: that is the worst finding a
// loopback run can make, and the verdict names it before the buffer.
func TestNotHeldSoundBrokeAlone(t *testing.T) {
	ph := Phase{Name: "idle", Periods: 1000, Safe: &Safe{Periods: 2}}
	if why := ph.NotHeld(2, 1333); why != "" {
		t.Fatalf("a clean phase: %q, want held", why)
	}
	ph.Sound = &Sound{Judged: true, Glitches: []Glitch{{AtMS: 100}, {AtMS: 900}}, GlitchesAlone: 2}
	why := ph.NotHeld(2, 1333)
	if !strings.Contains(why, "sound broke 2 times with no xrun or pointer jump") {
		t.Errorf("two breaks alone: %q, want them named", why)
	}
}
