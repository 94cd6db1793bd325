package rundata

import (
	"reflect"
	"slices"
	"testing"
)

// Periods of 48 frames at 48 kHz (1 ms): 10 periods, an xrun at period 3
// (its seam at 3 ms of capture), a pointer jump at period 6 (kept as
// capture period 5), another xrun at period 8 (seam at 7 ms) that the sine
// did not break. The glitches: at the first seam, one in capture period 4
// (period 5) with nothing beside it, and one in the jump's period.
func TestCaptureMapLinesUpGlitches(t *testing.T) {
	var m CaptureMap
	for i := int64(0); i < 10; i++ {
		s := Sample{Index: i}
		switch i {
		case 3, 8:
			s.Xrun = 2e6
		case 6:
			s.Flags = FlagPointerJump
		}
		m.Add(&s)
	}
	snd := &Sound{Judged: true, Glitches: []Glitch{
		{AtMS: 3.4, LengthMS: 0.2},
		{AtMS: 4.5, LengthMS: 0.3},
		{AtMS: 5.5, LengthMS: 0.1},
	}}
	m.LineUp(snd, 48, 48000)
	want := []Glitch{
		{AtMS: 3.4, LengthMS: 0.2, Period: 3, With: GlitchXrun},
		{AtMS: 4.5, LengthMS: 0.3, Period: 5, With: GlitchAlone},
		{AtMS: 5.5, LengthMS: 0.1, Period: 6, With: GlitchPointerJump},
	}
	if !reflect.DeepEqual(snd.Glitches, want) {
		t.Errorf("glitches\n %+v\nwant %+v", snd.Glitches, want)
	}
	if snd.XrunsHeard != 1 || snd.XrunsNotHeard != 1 || snd.GlitchesAlone != 1 {
		t.Errorf("xruns heard %d, not heard %d, glitches alone %d; want 1, 1, 1", snd.XrunsHeard, snd.XrunsNotHeard, snd.GlitchesAlone)
	}
}

// Seams that are not one xrun's, in 10 periods of 1 ms (48 frames at
// 48 kHz), one glitch each: two xruns in periods 4 and 5 (a restart that
// underran again at once) kept no capture between them, so they left one
// seam at 4 ms and its glitch is heard for both; an xrun in period 0 came
// before any capture was kept, so the capture begins after its restart
// and it is neither heard nor missed, while period 6's (seam at 5 ms) is
// heard.
func TestCaptureMapSharedAndMissingSeams(t *testing.T) {
	for _, c := range []struct {
		name         string
		xruns        []int64
		at           float64
		period       int64
		heard, notHd int
	}{
		{"one seam, two xruns", []int64{4, 5}, 4.2, 4, 2, 0},
		{"an xrun before the capture", []int64{0, 6}, 5.1, 6, 1, 0},
	} {
		var m CaptureMap
		for i := int64(0); i < 10; i++ {
			s := Sample{Index: i}
			if slices.Contains(c.xruns, i) {
				s.Xrun = 2e6
			}
			m.Add(&s)
		}
		snd := &Sound{Judged: true, Glitches: []Glitch{{AtMS: c.at, LengthMS: 0.1}}}
		m.LineUp(snd, 48, 48000)
		if g := snd.Glitches[0]; g.With != GlitchXrun || g.Period != c.period {
			t.Errorf("%s: glitch %+v, want the xrun of period %d's", c.name, g, c.period)
		}
		if snd.XrunsHeard != c.heard || snd.XrunsNotHeard != c.notHd || snd.GlitchesAlone != 0 {
			t.Errorf("%s: xruns heard %d, not heard %d, glitches alone %d; want %d, %d, 0", c.name, snd.XrunsHeard, snd.XrunsNotHeard, snd.GlitchesAlone, c.heard, c.notHd)
		}
	}
}

// The seams a loopback's round trip is followed across: xruns in periods
// 0 (before any capture was kept), 4 and 5 (one seam) and 8, in 10
// periods; and the phase's period of each capture period kept.
func TestCaptureMapSeams(t *testing.T) {
	var m CaptureMap
	for i := int64(0); i < 10; i++ {
		s := Sample{Index: i}
		if i == 0 || i == 4 || i == 5 || i == 8 {
			s.Xrun = 2e6
		}
		m.Add(&s)
	}
	want := []Seam{{Kept: 0, Xruns: 1}, {Kept: 3, Xruns: 2}, {Kept: 5, Xruns: 1}}
	if got := m.Seams(); !reflect.DeepEqual(got, want) {
		t.Errorf("seams %+v, want %+v", got, want)
	}
	for kept, period := range []int64{1, 2, 3, 6, 7, 9} {
		if got := m.Period(int64(kept)); got != period {
			t.Errorf("capture period %d is period %d, want %d", kept, got, period)
		}
	}
}
