package rundata

import (
	"slices"
	"testing"
)

// The floor of a phase is the smallest size at which it held, whatever
// the order the sizes ran in; a repeated phase held at a size only if
// every repetition did; a phase that never held has none.
func TestFloorOf(t *testing.T) {
	held := Phase{Name: "idle", Safe: &Safe{Periods: 2}}
	late := Phase{Name: "idle", Safe: &Safe{Periods: 3}}
	xrun := Phase{Name: "hackbench", Safe: &Safe{Periods: 2}, Xruns: 1}
	run := func(frames int, phases ...Phase) *Run {
		return &Run{Rate: 48000, PeriodFrames: frames, Periods: 2, Phases: phases}
	}
	fl := FloorOf([]*Run{
		run(128, held, xrun),
		run(32, held, late, xrun), // idle's second repetition did not hold
		run(64, held, xrun),
	})
	if !slices.Equal(fl.Sizes, []int{128, 32, 64}) || len(fl.Phases) != 2 || fl.Rate != 48000 || fl.Periods != 2 {
		t.Fatalf("floor %+v", fl)
	}
	if idle := fl.Phases[0]; idle.Name != "idle" || !slices.Equal(idle.Held, []bool{true, false, true}) || idle.FloorFrames != 64 {
		t.Errorf("idle %+v, want held at 128 and 64, floor 64", idle)
	}
	if hb := fl.Phases[1]; hb.Name != "hackbench" || slices.Contains(hb.Held, true) || hb.FloorFrames != 0 {
		t.Errorf("hackbench %+v, want held nowhere", hb)
	}
}
