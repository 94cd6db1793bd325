package rundata

import (
	"strings"
	"testing"
)

const p64 = 1333333 // 64 frames at 48 kHz, ns

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name   string
		late   int64
		want   int
		margin int64
	}{
		{"on time", 50e3 + p64*8/10, 2, p64 - 50e3 - p64*8/10},
		// A 3 ms spike at 64 frames needs 4 periods: written 3 ms after it
		// became due, past 2 periods (2.67 ms) but within 3 (4.0 ms).
		{"3 ms", 3e6, 4, 3*p64 - 3e6},
		// With 80 % DSP the write comes 4.07 ms after: 5 periods (dry
		// 5.33 ms after) hold it, with 1.27 ms to spare.
		{"3 ms + 80 % DSP", 3e6 + p64*8/10, 5, 4*p64 - 3e6 - p64*8/10},
		{"exactly 3 periods", 3 * p64, 4, 0},
		{"a stall", 200e6, MaxSafePeriods + 1, 0},
	} {
		v := Verdict(c.late, p64, 0)
		if v.Periods != c.want || v.MarginNS != c.margin || v.CardDelayNS != 0 {
			t.Errorf("%s: %+v, want %d periods, margin %d", c.name, v, c.want, c.margin)
		}
	}
	// A card holding sound beyond the buffer: at 64 frames the 3 ms
	// spike with 1 ms held needs a period less, the 2 ms left fitting 3
	// periods (2.67 ms); at 256 frames with USB's 10 ms queued, a write
	// 9.16 ms late needs no more than the least buffer, and one 20 ms late
	// the 10 ms left past it, 3 periods.
	const p256 = 5333333
	for _, c := range []struct {
		name               string
		late, period, card int64
		want               int
		margin             int64
	}{
		{"3 ms, 1 ms held", 3e6, p64, 1e6, 3, 2*p64 + 1e6 - 3e6},
		{"USB: 9.16 ms, 10 ms held", 9_160_000, p256, 10e6, 2, p256 + 10e6 - 9_160_000},
		{"USB: 20 ms, 10 ms held", 20e6, p256, 10e6, 3, 2*p256 + 10e6 - 20e6},
	} {
		v := Verdict(c.late, c.period, c.card)
		if v.Periods != c.want || v.MarginNS != c.margin || v.CardDelayNS != c.card {
			t.Errorf("%s: %+v, want %d periods, margin %d", c.name, v, c.want, c.margin)
		}
	}
}

// The meter's verdict is the one of the phase's latest write; the nominal
// one adds the load to the worst wakeup.
func TestLateMeter(t *testing.T) {
	var m LateMeter
	if a, b := m.Verdicts(p64, 0, 80); a != nil || b != nil {
		t.Fatal("a verdict without samples")
	}
	for i := range int64(100) {
		due := i * p64
		s := Sample{Index: i, Due: due, Woke: due + 50e3, DSP: 0}
		if i == 40 {
			s.Woke = due + 3e6
		}
		m.Add(&s)
	}
	a, b := m.Verdicts(p64, 0, 80)
	if a.Periods != 4 || b.Periods != 5 || b.MarginNS != 4*p64-3e6-p64*80/100 {
		t.Errorf("measured %+v, nominal %+v; want 4 and 5 periods", a, b)
	}
}

func TestVerdictText(t *testing.T) {
	r := &Run{PeriodFrames: 64, Periods: 2, PeriodUS: 1333.333, Phases: []Phase{
		{Name: "idle", Safe: &Safe{Periods: 2}},
		{Name: "x11", Skipped: "no display"},
		{Name: "proc", Safe: &Safe{Periods: 2}},
		{Name: "disk-write", Safe: &Safe{Periods: 4}, Xruns: 3},
		{Name: "hackbench", Safe: &Safe{Periods: MaxSafePeriods + 1}, Xruns: 1},
		{Name: "net", Safe: &Safe{Periods: 2}, Xruns: 1},
	}}
	want := "64 frames × 2 (2.7 ms) held under idle, proc; disk-write needs × 4 (5.3 ms); hackbench needs more than × 64; net had 1 xruns its wakeups do not explain"
	if got := VerdictText(r); got != want {
		t.Errorf("VerdictText\n = %q\nwant %q", got, want)
	}
	// A repeated run names a phase once where it held, each repetition
	// where it did not.
	rep := &Run{PeriodFrames: 64, Periods: 2, PeriodUS: 1333.333, Repeat: 2, Phases: []Phase{
		{Name: "idle", Repeat: 1, Safe: &Safe{Periods: 2}}, {Name: "hackbench", Repeat: 1, Safe: &Safe{Periods: 2}},
		{Name: "idle", Repeat: 2, Safe: &Safe{Periods: 2}}, {Name: "hackbench", Repeat: 2, Safe: &Safe{Periods: 3}, Xruns: 1},
	}}
	if got, want := VerdictText(rep), "64 frames × 2 (2.7 ms) held under idle, hackbench; hackbench #2 needs × 3 (4.0 ms)"; got != want {
		t.Errorf("repeated\n = %q\nwant %q", got, want)
	}
	if got := VerdictText(&Run{Phases: []Phase{{Name: "idle"}}}); got != "" {
		t.Errorf("without verdicts: %q", got)
	}
}

// Every combination of three phases each held, not held (a larger buffer
// needed, an xrun, lost samples, a pointer jump, cut short), skipped or
// incomplete: the verdict names each phase that ran once, as held only
// when it held, never says "held under" a phase that did not, and says
// "none of the phases" when none held.
func TestVerdictTextCombinations(t *testing.T) {
	kinds := []struct {
		name string
		ph   Phase
		held bool
		skip bool
	}{
		{"held", Phase{Safe: &Safe{Periods: 2}}, true, false},
		{"needs more", Phase{Safe: &Safe{Periods: 3}, Xruns: 1}, false, false},
		// No xrun in the buffer it ran with: it held there, whatever the
		// rule asks (Settled).
		{"held as run", Phase{Safe: &Safe{Periods: 3, MarginNS: 400e3}}, true, false},
		{"needs more, a period lost", Phase{Safe: &Safe{Periods: 3}, Lost: 1}, false, false},
		{"xrun", Phase{Safe: &Safe{Periods: 2}, Xruns: 1}, false, false},
		{"lost", Phase{Safe: &Safe{Periods: 2}, Lost: 1}, false, false},
		{"jump", Phase{Safe: &Safe{Periods: 2}, PointerJumps: 1}, false, false},
		{"cut short", Phase{Safe: &Safe{Periods: 2}, CutShort: true}, false, false},
		{"incomplete", Phase{Incomplete: true}, false, false},
		{"skipped", Phase{Skipped: "no display"}, false, true},
	}
	names := []string{"idle", "proc", "hackbench"}
	var combo func(i int, phases []Phase, held []bool, skipped []bool)
	combo = func(i int, phases []Phase, held, skipped []bool) {
		if i < len(names) {
			for _, k := range kinds {
				ph := k.ph
				ph.Name = names[i]
				combo(i+1, append(phases, ph), append(held, k.held), append(skipped, k.skip))
			}
			return
		}
		r := &Run{PeriodFrames: 64, Periods: 2, PeriodUS: 1333.333, Phases: phases}
		got := VerdictText(r)
		anyHeld, allSkipped := false, true
		for j, ph := range phases {
			anyHeld = anyHeld || held[j]
			allSkipped = allSkipped && skipped[j]
			n := strings.Count(got, ph.Name)
			switch {
			case skipped[j] && n != 0:
				t.Errorf("%q names skipped %s", got, ph.Name)
			case !skipped[j] && n != 1:
				t.Errorf("%q names %s %d times, want once", got, ph.Name, n)
			case held[j] != inHeld(got, ph.Name):
				t.Errorf("%q: %s held %v", got, ph.Name, held[j])
			}
		}
		if allSkipped != (got == "") {
			t.Errorf("phases %+v: verdict %q", phases, got)
		}
		if !allSkipped && strings.Contains(got, "none of the phases") == anyHeld {
			t.Errorf("%q: some held %v", got, anyHeld)
		}
	}
	combo(0, nil, nil, nil)
}

// inHeld says whether the verdict lists name among those it held under.
func inHeld(verdict, name string) bool {
	list, _, _ := strings.Cut(verdict, ";")
	_, list, ok := strings.Cut(list, " held under ")
	for _, held := range strings.Split(list, ", ") {
		held, _, _ = strings.Cut(held, " (") // what a phase held with
		if ok && held == name {
			return true
		}
	}
	return false
}

// A verdict of a thread that was not real-time says so, and whether that
// was asked (--prio 0) or refused; with its memory unlocked as well, it
// says both.
func TestVerdictTextNotRealTime(t *testing.T) {
	for _, tc := range []struct {
		rt   RTSetup
		want string
	}{
		{RTSetup{Asked: RTParams{Policy: "SCHED_FIFO", Mlockall: true}, Obtained: RTParams{Policy: "SCHED_FIFO", Priority: 80, Mlockall: true}}, ""},
		{RTSetup{Asked: RTParams{Policy: "SCHED_FIFO", Mlockall: true}, Obtained: RTParams{Policy: "SCHED_OTHER", Mlockall: true}}, "; not a real-time thread's figures: it ran SCHED_OTHER"},
		{RTSetup{Asked: RTParams{Policy: "SCHED_FIFO", Mlockall: true}, Obtained: RTParams{Policy: "SCHED_FIFO", Priority: 80}}, "; its memory was not locked"},
		// --prio 0 asks SCHED_OTHER: the note says it was asked, not refused.
		{RTSetup{Asked: RTParams{Policy: "SCHED_OTHER", Mlockall: true}, Obtained: RTParams{Policy: "SCHED_OTHER", Mlockall: true}}, "; not a real-time thread's figures: it ran SCHED_OTHER, as asked (--prio 0)"},
		// Both refused: both said.
		{RTSetup{Asked: RTParams{Policy: "SCHED_FIFO", Mlockall: true}, Obtained: RTParams{Policy: "SCHED_OTHER"}},
			"; not a real-time thread's figures: it ran SCHED_OTHER, not the SCHED_FIFO asked (run as root, or give the user rtprio: latencytest check); its memory was not locked"},
		{RTSetup{Asked: RTParams{Policy: "SCHED_OTHER", Mlockall: true}, Obtained: RTParams{Policy: "SCHED_OTHER"}},
			"; not a real-time thread's figures: it ran SCHED_OTHER, as asked (--prio 0); its memory was not locked"},
	} {
		r := &Run{PeriodFrames: 64, Periods: 2, PeriodUS: 1333.333, RT: tc.rt, Phases: []Phase{{Name: "idle", Safe: &Safe{Periods: 2}}}}
		got := VerdictText(r)
		const held = "64 frames × 2 (2.7 ms) held under idle"
		if tc.want == "" && got != held || tc.want != "" && !strings.HasPrefix(got, held+tc.want) {
			t.Errorf("%+v: %q, want %q…", tc.rt.Obtained, got, held+tc.want)
		}
	}
}

// The verdict's best and worst CPU of a run --cpus: each CPU judged by
// its worst phase, ranked by the buffer it needed, then p99.9, then max.
// CPU 2 is the best at idle but needs × 3 under hackbench; CPU 5 ties
// CPU 0 on the buffer under every load and wins on the tail; CPU 0's
// hackbench makes it the worst.
func TestCPUsText(t *testing.T) {
	cpu := func(n, periods int, p999, maxUS float64) CPUPhase {
		return CPUPhase{CPU: n, Phase: Phase{Periods: 1000, Safe: &Safe{Periods: periods}, Latency: LatencyStats{P999: p999, Max: maxUS}}}
	}
	idle := Phase{Name: "idle", CPUs: []CPUPhase{cpu(0, 2, 50, 80), cpu(2, 2, 10, 20), cpu(5, 2, 40, 70)}}
	hack := Phase{Name: "hackbench", CPUs: []CPUPhase{cpu(0, 4, 900, 4000), cpu(2, 3, 300, 2100), cpu(5, 2, 400, 900)}}
	for i := range hack.CPUs {
		hack.CPUs[i].Name = "hackbench"
	}
	r := &Run{PeriodUS: 1000, Phases: []Phase{idle, hack}}
	want := "best for audio CPU 5 (needs × 2 (2.0 ms), p99.9 400 µs, max 900 µs, under hackbench); worst CPU 0 (needs × 4 (4.0 ms), p99.9 900 µs, max 4000 µs, under hackbench)"
	if got := CPUsText(r); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// Where the check read where the soundcard's interrupt is handled, the
	// verdict says it beside them; not where it could not.
	r.Checks = []Finding{{Name: FindingSoundIRQCPUs, Status: "OK", Value: "IRQ 129 on CPU 2"}}
	if got, w := CPUsText(r), want+"; the soundcard's interrupt: IRQ 129 on CPU 2"; got != w {
		t.Errorf("with the card's IRQ: got  %q\nwant %q", got, w)
	}
	r.Checks[0].Status = "INFO"
	if got := CPUsText(r); got != want {
		t.Errorf("with the card's IRQ not read: %q", got)
	}
	r.Phases = []Phase{{Name: "idle", CPUs: []CPUPhase{cpu(0, 2, 50, 80)}}}
	if got := CPUsText(r); got != "" {
		t.Errorf("one CPU: %q, want nothing", got)
	}
}
