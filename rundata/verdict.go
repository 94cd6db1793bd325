package rundata

// MaxSafePeriods is the largest buffer the verdict considers, in periods;
// a phase that needs more is reported as needing more than it.
const MaxSafePeriods = 64

// Safe is the buffer verdict of a phase: the smallest number of periods
// at its period size that would have had no xrun, and the margin left.
type Safe struct {
	// Periods is the smallest buffer, in periods, in which every period
	// of the phase would have been written before the card needed it;
	// MaxSafePeriods+1 when even MaxSafePeriods would not do.
	Periods int `json:"safe_periods"`
	// MarginNS is how long before running dry that buffer was at its
	// tightest moment.
	MarginNS int64 `json:"safe_margin_ns"`
	// Late is the period whose write came latest against its deadline.
	Late int64 `json:"safe_worst_period"`
}

// needed is the buffer, in periods, that the write of a period due at due
// and written (woken, then its DSP done) at end needs: the period due at
// due keeps the card busy until due + (n−1) periods, the rule of the timer
// driver's virtual buffer (docs/method.md).
func needed(due, end, periodNS int64) (n int64, margin int64) {
	late := end - due
	n = 2 // a buffer has at least two periods
	if late > periodNS {
		n = 1 + (late+periodNS-1)/periodNS
	}
	return n, due + (n-1)*periodNS - end
}

// SafePeriods computes the buffer verdict of a phase from its samples,
// each period written at its wakeup plus dsp(s) (the measured DSP time, or
// a nominal one to answer for another load).
func SafePeriods(ss []Sample, periodNS int64, dsp func(*Sample) int64) Safe {
	v := Safe{Periods: 2, MarginNS: periodNS, Late: -1}
	for i := range ss {
		s := &ss[i]
		n, _ := needed(s.Due, s.Woke+dsp(s), periodNS)
		if n > MaxSafePeriods {
			return Safe{Periods: MaxSafePeriods + 1, Late: s.Index}
		}
		if int(n) > v.Periods || v.Late < 0 {
			v.Periods, v.Late = max(v.Periods, int(n)), s.Index
		}
	}
	// The margin of the verdict's buffer: its tightest write.
	for i := range ss {
		s := &ss[i]
		m := s.Due + int64(v.Periods-1)*periodNS - (s.Woke + dsp(s))
		if m < v.MarginNS {
			v.MarginNS, v.Late = m, s.Index
		}
	}
	return v
}

// MeasuredDSP is the DSP time each sample recorded.
func MeasuredDSP(s *Sample) int64 { return s.DSP }

// NominalDSP returns a dsp function for a load of pct percent of a period.
func NominalDSP(periodNS int64, pct int) func(*Sample) int64 {
	d := periodNS * int64(pct) / 100
	return func(*Sample) int64 { return d }
}
