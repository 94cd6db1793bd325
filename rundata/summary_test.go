package rundata

import (
	"bytes"
	"strings"
	"testing"
)

// A loopback run's closing block says how often the sound broke, per
// phase, and the round trip of each; a run without one says nothing of it.
func TestSummaryHeard(t *testing.T) {
	r := &Run{Phases: []Phase{
		{Name: "idle", Sound: &Sound{Judged: true, Glitches: []Glitch{}, CardDelay: &FrameStats{}, RoundTripMS: 21.33}},
		{Name: "hackbench", Sound: &Sound{Judged: true, Glitches: []Glitch{{AtMS: 5, With: GlitchXrun}, {AtMS: 9}}, GlitchesAlone: 1, CardDelay: &FrameStats{}, RoundTripMS: 26.67}},
		{Name: "x11", Sound: &Sound{Note: "the sine did not come back"}},
	}}
	var b bytes.Buffer
	WriteSummary(&b, r, nil, nil)
	want := "heard: the sound broke 2 times (idle none, hackbench 2, x11 not judged: the sine did not come back, 1 of them with no xrun or pointer jump); round trip 21.3 ms in idle, 26.7 ms in hackbench, not read in x11\n"
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
