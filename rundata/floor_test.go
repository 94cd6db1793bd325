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
	late := Phase{Name: "idle", Repeat: 2, Safe: &Safe{Periods: 3}, Xruns: 1}
	xrun := Phase{Name: "hackbench", Safe: &Safe{Periods: 2}, Xruns: 1}
	run := func(frames int, phases ...Phase) *Run {
		return &Run{Rate: 48000, PeriodFrames: frames, Periods: 2, PeriodUS: float64(frames) * 1e6 / 48000, Phases: phases}
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
	if why := fl.Phases[0].NotHeld; !slices.Equal(why, []string{"", "idle #2 needs × 3 (2.0 ms)", ""}) {
		t.Errorf("idle's reasons %q", why)
	}
}

// The floor is the smallest size above which every size held: one that
// held below one that did not is luck, not a floor; a size cut short, with
// lost samples or pointer jumps, or where the phase did not run, did not
// hold, and each says why.
func TestFloorNeedsEveryLargerSize(t *testing.T) {
	ok := Phase{Name: "idle", Safe: &Safe{Periods: 2}}
	run := func(frames int, ph Phase) *Run {
		return &Run{Rate: 48000, PeriodFrames: frames, Periods: 2, PeriodUS: float64(frames) * 1e6 / 48000, Phases: []Phase{ph}}
	}
	with := func(edit func(*Phase)) Phase {
		p := ok
		edit(&p)
		return p
	}
	for _, tc := range []struct {
		name  string
		runs  []*Run
		floor int
		why   string
	}{
		{"every size held", []*Run{run(32, ok), run(64, ok), run(128, ok)}, 32, ""},
		{"32 held, 64 did not", []*Run{run(32, ok), run(64, with(func(p *Phase) { p.Safe, p.Xruns = &Safe{Periods: 3}, 1 })), run(128, ok)}, 128, "idle needs × 3 (4.0 ms)"},
		{"64 cut short", []*Run{run(128, ok), run(64, with(func(p *Phase) { p.CutShort = true }))}, 128, "idle cut short (the run was stopped)"},
		{"64 lost samples", []*Run{run(64, with(func(p *Phase) { p.Lost = 3 })), run(128, ok)}, 128, "idle lost 3 periods' samples (one of them may have been late)"},
		{"64 pointer jumps", []*Run{run(64, with(func(p *Phase) { p.PointerJumps = 1 })), run(128, ok)}, 128, "idle had 1 pointer jumps (periods whose interrupt came a buffer or more late)"},
		{"killed at 64", []*Run{run(128, ok), run(64, with(func(p *Phase) { p.Incomplete = true }))}, 128, "idle its end was never written (the run was killed)"},
		{"the largest did not hold", []*Run{run(32, ok), run(64, ok), run(128, with(func(p *Phase) { p.Xruns = 2 }))}, 0, "idle had 2 xruns its wakeups do not explain"},
	} {
		fl := FloorOf(tc.runs)
		ph := fl.Phases[0]
		var why string
		for _, w := range ph.NotHeld {
			why += w
		}
		if ph.FloorFrames != tc.floor || why != tc.why {
			t.Errorf("%s: floor %d (%q), want %d (%q)", tc.name, ph.FloorFrames, why, tc.floor, tc.why)
		}
	}
	fl := FloorOf([]*Run{run(64, ok), {Rate: 48000, PeriodFrames: 128, Periods: 2}})
	if ph := fl.Phases[0]; ph.FloorFrames != 0 || ph.NotHeld[1] != "idle did not run" {
		t.Errorf("a size where the phase did not run: %+v", ph)
	}
}
