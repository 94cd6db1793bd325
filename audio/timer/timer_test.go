package timer

import (
	"testing"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/rundata"
)

const ms = int64(1e6)

func TestXrunRule(t *testing.T) {
	period := 4 * ms
	cases := []struct {
		name     string
		due, end int64
		periods  int
		want     int64
	}{
		{"in time, two periods", 100 * ms, 103 * ms, 2, 0},
		{"exactly at the dry instant", 100 * ms, 104 * ms, 2, 0},
		{"late by 1 ns", 100 * ms, 104*ms + 1, 2, 1},
		{"late DSP, two periods", 100 * ms, 106 * ms, 2, 2 * ms},
		{"three periods absorb one late period", 100 * ms, 107 * ms, 3, 0},
		// A 300 ms stall is one xrun of the stall minus what the buffer held.
		{"long stall", 100 * ms, 400 * ms, 2, 296 * ms},
		{"long stall, three periods", 100 * ms, 400 * ms, 3, 292 * ms},
	}
	for _, c := range cases {
		if got := Xrun(c.due, c.end, c.periods, period); got != c.want {
			t.Errorf("%s: Xrun = %d, want %d", c.name, got, c.want)
		}
	}
}

// A late write is one xrun, and the grid restarts from the write instead of
// catching up period by period.
func TestTransferRestartsGrid(t *testing.T) {
	d := New()
	if _, err := d.Open(audio.Config{Rate: 48000, PeriodFrames: 480, Periods: 2}); err != nil {
		t.Fatal(err)
	}
	d.Start()
	var p rundata.Sample
	p.Due = audio.Now() - 200*ms // the period was due 200 ms ago
	before := audio.Now()
	d.Transfer(&p)
	after := audio.Now()
	if p.Xrun < 190*ms {
		t.Fatalf("xrun %d ns, want ≥ 190 ms (200 ms late, 10 ms of buffer)", p.Xrun)
	}
	if p.Flags&rundata.FlagSimulated == 0 {
		t.Error("xrun not marked simulated")
	}
	if d.next < before+10*ms || d.next > after+10*ms {
		t.Errorf("next due %d not one period after the write [%d, %d]", d.next, before+10*ms, after+10*ms)
	}
}

func TestOpenRejects(t *testing.T) {
	for _, c := range []audio.Config{
		{Rate: 0, PeriodFrames: 64, Periods: 2},
		{Rate: 48000, PeriodFrames: 0, Periods: 2},
		{Rate: 48000, PeriodFrames: 64, Periods: 1},
		{Rate: 48000, PeriodFrames: 64, Periods: 2, Device: "hw:0"},
	} {
		_, err := New().Open(c)
		if !badinput.Is(err) {
			t.Errorf("Open(%+v) = %v, want bad input", c, err)
		}
	}
}

// Periods missed without an xrun are replayed, each late from its own
// deadline, as the ALSA driver writes each period the buffer has room for
// (docs/method.md, "Missed periods"): a stall of 1.5 periods with three
// periods of buffer leaves the next period due one period after the last,
// and found at least half a period late.
func TestMissedPeriodsReplayed(t *testing.T) {
	d := New()
	if _, err := d.Open(audio.Config{Rate: 48000, PeriodFrames: 480, Periods: 3}); err != nil {
		t.Fatal(err)
	}
	period := 10 * ms
	d.Start()
	var a, b rundata.Sample
	d.Wait(&a)
	var s audio.Sleeper
	s.Until(a.Woke + period*3/2)
	d.Transfer(&a)
	if a.Xrun != 0 {
		t.Skipf("xrun %d ns: the stall came out longer than the two periods of buffer left", a.Xrun)
	}
	d.Wait(&b)
	if b.Due != a.Due+period {
		t.Errorf("next period due %d ns after the stalled one, want %d (not skipped)", b.Due-a.Due, period)
	}
	if lat := b.Latency(); lat < period/2 {
		t.Errorf("next period %d ns late, want ≥ %d (the stall less a period)", lat, period/2)
	}
}
