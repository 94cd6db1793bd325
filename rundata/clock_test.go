package rundata

import (
	"math"
	"testing"
)

// The card's clock is measured over the longest stretch without an xrun
// or a pointer jump, periods counted by index: a card at 13 % of 48 kHz
// reads 6240 Hz and is said to be off; a crystal 200 ppm fast reads
// 48009.6 Hz and is not; xruns, jumps and lost samples do not bend it.
func TestClockHz(t *testing.T) {
	h := NewSampleHeader(48000, 256, 2)
	for _, tc := range []struct {
		name  string
		speed float64
		mark  func(i int64, s *Sample) (keep bool)
		want  float64
		off   bool
	}{
		{"nominal", 1, nil, 48000, false},
		{"a crystal 200 ppm fast", 1.0002, nil, 48009.6, false},
		{"an emulated card at 13 %", 0.13, nil, 6240, true},
		{"a card 1 % slow, an xrun and a jump on the way, samples lost", 0.99, func(i int64, s *Sample) bool {
			switch {
			case i == 500:
				s.Xrun, s.Due = 3e6, s.Due+50e6 // the restart's period: late on any grid
			case i > 500:
				s.Due += 50e6
			}
			if i == 900 {
				s.Flags |= FlagPointerJump
			}
			return i%7 != 3 // lost samples
		}, 47520, true},
	} {
		a := NewAccumulator(h, 0)
		for i := int64(0); i < 1900; i++ { // 10.1 s at nominal
			s := Sample{Index: i, Due: 1e9 + int64(math.Round(float64(i*h.PeriodNS)/tc.speed))}
			s.Woke = s.Due + 20e3
			if tc.mark != nil && !tc.mark(i, &s) {
				continue
			}
			a.Add(&s)
		}
		var p Phase
		a.Fill(&p)
		off, isOff := p.ClockOff(48000)
		if math.Abs(p.ClockHz-tc.want) > 0.2 || isOff != tc.off {
			t.Errorf("%s: clock %.1f Hz (off %.4f, said %v), want %.1f Hz, said %v", tc.name, p.ClockHz, off, isOff, tc.want, tc.off)
		}
	}
	var p Phase
	a := NewAccumulator(h, 0)
	for i := int64(0); i < 150; i++ { // 0.8 s: too short to tell
		a.Add(&Sample{Index: i, Due: i * h.PeriodNS})
	}
	if a.Fill(&p); p.ClockHz != 0 {
		t.Errorf("0.8 s measured a clock of %.1f Hz, want none", p.ClockHz)
	}
}

// A stall of 3.5 periods: the three periods due during it are written
// late, one after another, and counted as caught up (cyclictest would
// have skipped their deadlines and measured one late wakeup); the max is
// the stalled wakeup's either way.
func TestCaughtUp(t *testing.T) {
	h := NewSampleHeader(48000, 480, 4)
	a := NewAccumulator(h, 0)
	woke := int64(0)
	for i := int64(0); i < 20; i++ {
		s := Sample{Index: i, Due: i * h.PeriodNS}
		s.Woke = max(s.Due+20e3, woke+5e3)
		if i == 10 {
			s.Woke = s.Due + h.PeriodNS*7/2
		}
		woke = s.Woke
		a.Add(&s)
	}
	var p Phase
	a.Fill(&p)
	if p.CaughtUp != 3 || p.Latency.Max != float64(h.PeriodNS*7/2)/1000 {
		t.Errorf("caught up %d, max %.0f µs; want 3, %d µs", p.CaughtUp, p.Latency.Max, h.PeriodNS*7/2/1000)
	}
}
