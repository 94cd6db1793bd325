package rundata

import (
	"bytes"
	"strings"
	"testing"
)

// A loopback run's closing block says how often the sound broke, per
// phase, and the round trip of each (its range over the phase where it
// moved); a run without one says nothing of it.
func TestSummaryHeard(t *testing.T) {
	r := &Run{Phases: []Phase{
		{Name: "idle", Sound: &Sound{Judged: true, Glitches: []Glitch{}, CardDelay: &FrameStats{}, RoundTripMS: 21.33}},
		{Name: "hackbench", Sound: &Sound{Judged: true, Glitches: []Glitch{{AtMS: 5, With: GlitchXrun}, {AtMS: 9}}, GlitchesAlone: 1, CardDelay: &FrameStats{}, RoundTripMS: 26.67,
			RoundTripFollowed: &MSStats{Min: 26.67, Median: 27.1, Max: 31.4}}},
		{Name: "x11", Sound: &Sound{Note: "the sine did not come back"}},
	}}
	var b bytes.Buffer
	WriteSummary(&b, r, nil, nil)
	want := "heard: the sound broke 2 times (idle none, hackbench 2, x11 not judged: the sine did not come back, 1 of them with no xrun or pointer jump); round trip 21.3 ms in idle, 27.1 ms (26.7 to 31.4) in hackbench, not read in x11\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("closing block\n%s\nwithout %q", b.String(), want)
	}
	b.Reset()
	r.Phases = []Phase{{Name: "idle"}}
	WriteSummary(&b, r, nil, nil)
	if strings.Contains(b.String(), "heard") {
		t.Errorf("no loopback, yet:\n%s", b.String())
	}
}

// A DSP loop calibrated at another CPU speed: interruptions lengthen some
// loops, but the shortest, 400 µs of the 1000 asked, says the load was
// lighter than asked, and the phase's T: line says so; a loop whose
// shortest is the nominal says nothing.
func TestSummaryMiscalibratedLoop(t *testing.T) {
	h := NewSampleHeader(48000, 96, 2) // 2 ms periods
	for _, c := range []struct {
		shortest int64
		want     bool
	}{{400_000, true}, {1_000_000, false}, {1_300_000, true}} {
		a := NewAccumulator(h, 1_000_000)
		for i := int64(0); i < 100; i++ {
			dsp := c.shortest + i%3*200_000 // interruptions only add
			s := Sample{Index: i, Due: i * h.PeriodNS, Woke: i*h.PeriodNS + 20_000, DSP: dsp}
			a.Add(&s)
		}
		p := Phase{Name: "idle"}
		a.Fill(&p)
		if got := p.CPULoop.MinUS; got != float64(c.shortest)/1000 {
			t.Errorf("shortest %d ns: min_us %.1f", c.shortest, got)
		}
		var b bytes.Buffer
		WriteSummary(&b, &Run{Phases: []Phase{p}}, nil, nil)
		if got := strings.Contains(b.String(), "cpu load: the DSP loop ran"); got != c.want {
			t.Errorf("shortest %d ns: note said %v, want %v:\n%s", c.shortest, got, c.want, b.String())
		}
	}
}

// Under run --cpus the phase's line (all CPUs) is followed by one line
// per CPU in cyclictest --smp's form, "T: N (TID)", each with its own
// figures, the phase's Act the latest of theirs, and a note of one CPU's
// names that CPU.
func TestSummaryPerCPULines(t *testing.T) {
	h := NewSampleHeader(48000, 64, 2)
	cpu := func(n, tid int, lateNS int64) CPUPhase {
		a := NewAccumulator(h, 0)
		for i := range int64(50) {
			s := Sample{Index: i, Due: i * h.PeriodNS, Woke: i*h.PeriodNS + 10_000}
			if i == 20 {
				s.Woke += lateNS
			}
			a.Add(&s)
		}
		c := CPUPhase{CPU: n, TID: tid, ActUS: 10, RT: RTSetup{Obtained: RTParams{Priority: 80}}}
		a.Fill(&c.Phase)
		return c
	}
	ph := Phase{Name: "idle", Periods: 100, CPUs: []CPUPhase{cpu(3, 4242, 0), cpu(1, 4243, 500_000)}}
	ph.CPUs[1].Lost, ph.CPUs[1].ActUS = 2, 25.5
	var b bytes.Buffer
	WriteSummary(&b, &Run{PeriodUS: 1333, RT: RTSetup{Obtained: RTParams{Priority: 80}}, Phases: []Phase{ph}}, nil, nil)
	lines := strings.Split(b.String(), "\n")
	var tl []string
	for _, l := range lines {
		if strings.HasPrefix(l, "T:") || strings.HasPrefix(l, "   ") {
			tl = append(tl, l)
		}
	}
	want := []string{
		"T: idle all   P:80 I:1333 C:     100 Min:      0 Act:   25 ",
		"T: 3 (   4242) P:80 I:1333 C:      50 Min:     10 Act:   10 Avg:   10 Max:      10 ",
		"T: 1 (   4243) P:80 I:1333 C:      50 Min:     10 Act:   25 Avg:   20 Max:     510 ",
		"   idle CPU 1 2 lost",
	}
	if len(tl) != len(want) {
		t.Fatalf("T: lines and notes:\n%s\nwant %d lines", strings.Join(tl, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(tl[i], want[i]) {
			t.Errorf("line %d: %q, want it to begin %q", i, tl[i], want[i])
		}
	}
}

// A run whose xruns came from the work after the wakeup: 14 periods woke
// within their 1333 µs period (774 µs at worst) and their DSP work,
// nominal 1067 µs, stretched to 1.3–4.1 ms, so the write came past the
// 2-period buffer's deadline; one more xrun woke too late, which the
// worst wakeup explains. The closing block says which are which.
func TestSummaryWorkLate(t *testing.T) {
	h := NewSampleHeader(48000, 64, 2) // 1333 µs periods, 2 of them
	const nominal = 1_067_000
	a := NewAccumulator(h, nominal)
	late := 0
	for i := range int64(1000) {
		s := Sample{Index: i, Due: i * h.PeriodNS, DSP: nominal}
		s.Woke = s.Due + 50_000
		switch {
		case i%50 == 7 && late < 14: // in time, the work stretched
			s.Woke = s.Due + 300_000 + int64(late)*36_000 // up to 768 µs
			s.DSP = 1_300_000 + int64(late)*200_000       // 1.3 ms to 3.9 ms
			if late == 13 {
				s.Woke, s.DSP = s.Due+774_000, 4_100_000
			}
			s.Xrun = s.Woke + s.DSP - s.Due - h.PeriodNS
			late++
		case i == 999: // the wakeup itself too late
			s.Woke = s.Due + 2_000_000
			s.Xrun = s.Woke + s.DSP - s.Due - h.PeriodNS
		case i == 500: // in time and the work past the period, yet no xrun reported: not counted
			s.DSP = 1_300_000
		}
		a.Add(&s)
	}
	p := Phase{Name: "idle"}
	a.Fill(&p)
	if p.Xruns != 15 || p.XrunsWorkLate != 14 {
		t.Fatalf("xruns %d, of them work late %d; want 15 and 14", p.Xruns, p.XrunsWorkLate)
	}
	var b bytes.Buffer
	WriteSummary(&b, &Run{PeriodUS: 1333, Phases: []Phase{p}}, nil, nil)
	want := "why it broke: the thread woke in time; its work was preempted: 14 periods in idle (of its 15 xruns; its DSP work, nominal 1067 µs, took up to 4.1 ms)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("closing block\n%s\nwithout %q", b.String(), want)
	}
	// Pooled repetitions add them up; a run without such xruns says nothing.
	var pooled Phase
	pooled.Pool([]*Phase{&p, &p}, a.Hist)
	if pooled.XrunsWorkLate != 28 {
		t.Errorf("pooled: %d work late, want 28", pooled.XrunsWorkLate)
	}
	b.Reset()
	WriteSummary(&b, &Run{PeriodUS: 1333, Phases: []Phase{{Name: "idle", Periods: 10, Xruns: 2}}}, nil, nil)
	if strings.Contains(b.String(), "why it broke") {
		t.Errorf("no xrun from the work, yet:\n%s", b.String())
	}
}
