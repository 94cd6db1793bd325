package rundata

import "testing"

const p64 = 1333333 // 64 frames at 48 kHz, ns

// samples builds a phase of n on-time periods (woken lat after due) with a
// spike of spike ns at period at.
func samples(n int, lat, dsp int64, at int, spike int64) []Sample {
	ss := make([]Sample, n)
	for i := range ss {
		due := int64(i) * p64
		ss[i] = Sample{Index: int64(i), Due: due, Woke: due + lat, DSP: dsp}
		if i == at {
			ss[i].Woke = due + spike
		}
	}
	return ss
}

func TestSafePeriods(t *testing.T) {
	for _, c := range []struct {
		name       string
		ss         []Sample
		dsp        func(*Sample) int64
		want       int
		wantLate   int64
		wantMargin int64
	}{
		// 50 µs late, 80 % DSP: 1.117 ms of a 1.333 ms period: two hold.
		{"quiet", samples(100, 50e3, p64*8/10, -1, 0), MeasuredDSP, 2, 0, p64 - 50e3 - p64*8/10},
		// A 3 ms spike at 64 frames needs 4 periods: the period is
		// written 3 ms after it became due, past 2 periods (2.67 ms) but
		// within 3 (4.0 ms).
		{"3 ms spike, no DSP", samples(100, 50e3, 0, 40, 3e6), MeasuredDSP, 4, 40, 3*p64 - 3e6},
		// With 80 % DSP the write comes 4.07 ms after: 3 periods (4.0 ms)
		// no longer hold it, 5 (dry 5.33 ms after) do, with 1.27 ms to spare.
		{"3 ms spike", samples(100, 50e3, p64*8/10, 40, 3e6), MeasuredDSP, 5, 40, 4*p64 - 3e6 - p64*8/10},
		// 2.5 ms: n−1 ≥ 1.875 → 3.
		{"2.5 ms spike, no DSP", samples(100, 50e3, 0, 40, 25e5), MeasuredDSP, 3, 40, 2*p64 - 25e5},
		// The nominal 80 % answers for the default load on a run made
		// without one.
		{"nominal load", samples(100, 50e3, 0, 40, 25e5), NominalDSP(p64, 80), 4, 40, 3*p64 - 25e5 - p64*80/100},
		// A stall longer than 64 periods: more than the verdict considers.
		{"stall", samples(100, 50e3, 0, 40, 200e6), MeasuredDSP, MaxSafePeriods + 1, 40, 0},
	} {
		v := SafePeriods(c.ss, p64, c.dsp)
		if v.Periods != c.want || v.Late != c.wantLate || v.MarginNS != c.wantMargin {
			t.Errorf("%s: %+v, want %d periods, worst %d, margin %d", c.name, v, c.want, c.wantLate, c.wantMargin)
		}
	}
}
