package rundata

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A 1 MB run.json costs memory in proportion to it: the most a phase can
// carry is its stressor figures, here 128 phases of 8 KB of them.
func TestParseRunMemory(t *testing.T) {
	r := Run{Schema: 1}
	for i := range MaxPhases {
		st := map[string]any{}
		for k := range 200 {
			st[fmt.Sprintf("k%03d", k)] = strings.Repeat("x", 30)
		}
		r.Phases = append(r.Phases, Phase{Name: fmt.Sprint(i), StressorStats: st})
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := parseRun(b)
	runtime.ReadMemStats(&after)
	if err != nil || len(got.Phases) != MaxPhases {
		t.Fatalf("%v", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("run.json of %d KB: %d KB allocated to parse it", len(b)>>10, alloc>>10)
	if alloc > 20*uint64(len(b)) {
		t.Errorf("%d bytes allocated for %d bytes of run.json", alloc, len(b))
	}
	r.Phases = append(r.Phases, Phase{})
	b, _ = json.Marshal(&r)
	if _, err := parseRun(b); err == nil || !strings.Contains(err.Error(), "phases") {
		t.Errorf("%d phases accepted: %v", len(r.Phases), err)
	}
}

// An xrun's span runs from a period after the last sample before it (its
// own Due may be late) to the first period after the restart; a pointer
// jump's from the sample before it to the one after, wherever the jump's
// own Due lies: ALSA gives it the period's due on the card's clock, before
// the lost buffers (the arm64 VM's jumps were once not counted at all,
// their loss falling on the step after: 50 ms each).
func TestStreamLost(t *testing.T) {
	const p = int64(1e6)
	ss := []Sample{
		{Due: 1 * p}, {Due: 2 * p}, {Due: 3 * p},
		{Due: 4*p + 600e3, Xrun: 2 * p}, // the update that found the buffer empty came 0.6 ms after
		{Due: 14 * p},                   // the restart and its refill: 9 periods lost
		{Due: 15 * p},
		{Due: 19 * p, Flags: FlagPointerJump}, // three periods' worth of buffers lost
		{Due: 20 * p},
		{Due: 21*p - 300e3, Flags: FlagPointerJump}, // due before the lost buffers, a little early
		{Due: 26 * p},                               // the grid restarted past them: four periods lost
	}
	lost, restarts := StreamLost(ss, p)
	if lost != 16*p || restarts != 1 {
		t.Errorf("lost %d ns over %d restarts, want %d over 1", lost, restarts, 16*p)
	}
	// Counted periods plus the lost time's are the stream time's.
	if n := int64(len(ss)) + lost/p; n != (ss[len(ss)-1].Due-ss[0].Due)/p+1 {
		t.Errorf("%d periods counted and lost, over %d ns", n, ss[len(ss)-1].Due-ss[0].Due)
	}
}

// A phase of run --cpus filled from its CPUs' figures (FromCPUs) has the
// figures one accumulator of every CPU's periods has, but for those that
// follow each thread's own sequence (caught up, card clock), which are
// the CPUs' summed and none. The CPUs' periods: late wakeups, xruns, DSP
// loops off the nominal, a CPU that measured nothing, the latest write
// on the last CPU.
func TestFromCPUsAsOneAccumulator(t *testing.T) {
	h := NewSampleHeader(48000, 64, 2)
	rng := rand.New(rand.NewPCG(7, 28))
	all := NewAccumulator(h, 500_000)
	ph := Phase{Name: "idle"}
	for cpu, n := range []int64{3000, 0, 1700} {
		a := NewAccumulator(h, 500_000)
		start := int64(1e12) + int64(cpu)*777
		for i := range n {
			s := Sample{Index: i, Due: start + i*h.PeriodNS, DSP: 500_000 + rng.Int64N(300_000) - 100_000, Avail: 64 + int32(rng.IntN(64))}
			s.Woke = s.Due + 5_000 + rng.Int64N(40_000)
			if rng.IntN(500) == 0 || (cpu == 2 && i == 900) { // the last CPU's write the latest
				s.Woke += rng.Int64N(4e6) + int64(cpu)*3e6
				s.Xrun = max(s.Woke-s.Due-h.PeriodNS, 0)
			}
			a.Add(&s)
			all.Add(&s)
		}
		c := CPUPhase{CPU: cpu, Phase: Phase{Name: "idle", StartMonoNS: start}}
		a.Fill(&c.Phase)
		c.Lost = int64(cpu)
		c.RTThrottled, c.RTThrottledNS = cpu, int64(cpu)*1e6
		ph.CPUs = append(ph.CPUs, c)
	}
	var want Phase
	all.Fill(&want)
	ph.FromCPUs(all.Hist)
	if ph.Periods != 4700 || ph.Periods != want.Periods {
		t.Fatalf("periods %d, one accumulator %d, want 4700", ph.Periods, want.Periods)
	}
	type figures struct {
		Latency            LatencyStats
		Within100, Within1 float64
		Xruns              int
		XrunMS             float64
		Safe, SafeDefault  Safe
		Headroom           float64
		Loop               CPULoop
		Start              int64
	}
	of := func(p *Phase) figures {
		return figures{p.Latency, p.WithinUS100, p.WithinMS1, p.Xruns, math.Round(p.XrunMSTotal*1e6) / 1e6, *p.Safe, *p.SafeAtDefaultLoad,
			p.HeadroomMinUS, CPULoop{p.CPULoop.NominalUS, p.CPULoop.MinUS, p.CPULoop.MaxUS, math.Round(p.CPULoop.Within100USPct*1e9) / 1e9}, p.StartMonoNS}
	}
	if got, w := of(&ph), of(&want); got != w {
		t.Errorf("from the CPUs:\n%+v\none accumulator:\n%+v", got, w)
	}
	if want.Xruns == 0 || want.Safe.Periods < 3 {
		t.Fatalf("the synthetic periods had %d xruns, a verdict of × %d: no late write to merge", want.Xruns, want.Safe.Periods)
	}
	if ph.CaughtUp != ph.CPUs[0].CaughtUp+ph.CPUs[2].CaughtUp || ph.Lost != 3 || ph.ClockHz != ph.CPUs[0].ClockHz || ph.EndMonoNS != max(ph.CPUs[0].EndMonoNS, ph.CPUs[2].EndMonoNS) {
		t.Errorf("caught up %d, lost %d, clock %g Hz, end %d; want the CPUs' sums (the lost of the CPU that handed over none too), the first CPU's clock (the stream's thread's), the latest end", ph.CaughtUp, ph.Lost, ph.ClockHz, ph.EndMonoNS)
	}
	if ph.RTThrottled != 3 || ph.RTThrottledNS != 3e6 {
		t.Errorf("RT throttled %d spikes, %d ns; want the CPUs' summed, 3 and 3e6", ph.RTThrottled, ph.RTThrottledNS)
	}
	ph.CPUs[0].ClockHz = 0 // timer threads alone: no card clock
	if ph.FromCPUs(all.Hist); ph.ClockHz != 0 {
		t.Errorf("clock %g Hz with none on the first CPU, want none", ph.ClockHz)
	}
}

// The largest run --cpus the run accepts (MaxCPUPhases records of a CPU,
// each with every figure and set-up a real one can have, across MaxPhases
// phases) is a run.json readers accept.
func TestMaxCPUPhasesRead(t *testing.T) {
	lat := LatencyStats{Min: 1.5, Avg: 2.5, P50: 2, P90: 3, P99: 4, P999: 5, P9999: 6, Max: 7.25, RangeUS: 100000}
	figures := Phase{Name: "hackbench", Repeat: 9, Stressor: "hackbench", Break: &Break{Period: 1, LatencyNS: 2},
		StartMonoNS: 1, EndMonoNS: 2, StartWall: time.Now(), EndWall: time.Now(), Periods: 1e9, Latency: lat,
		WithinUS100: 99.5, WithinMS1: 99.9, HeadroomMinUS: 1, Xruns: 3, XrunMSTotal: 4, CaughtUp: 5, Lost: 6,
		CPULoop: CPULoop{1, 2, 3, 4}, Safe: &Safe{2, -3, 4, true}, SafeAtDefaultLoad: &Safe{4, 5, 6, false}, Overflow: 1, Underflow: 1,
		SamplesFile: "samples/128-hackbench-cpu255.bin", LoadAvg: 1.5, StealPct: 0.5}
	rt := RTParams{Policy: "SCHED_FIFO", Priority: 80, Affinity: []int{255}}
	r := &Run{Schema: SchemaVersion, CPUs: make([]int, MaxCPUPhases/MaxPhases)}
	for i := range MaxPhases {
		ph := figures
		for k := range r.CPUs {
			c := CPUPhase{CPU: k, TID: 1 << 22, ActUS: 12.5, Phase: figures,
				RT: RTSetup{Asked: rt, Obtained: rt, Refused: []string{"SCHED_FIFO priority 80: operation not permitted"}}}
			if k > 0 { // a timer thread's virtual card holds nothing beyond its buffer, and its xruns are the rule's
				c.Safe, c.SafeAtDefaultLoad = &Safe{Periods: 2, MarginNS: 3}, &Safe{Periods: 4, MarginNS: 5}
			}
			ph.CPUs = append(ph.CPUs, c)
		}
		ph.Name = fmt.Sprint("p", i)
		r.Phases = append(r.Phases, ph)
	}
	b, err := MarshalRun(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseRun(b); err != nil {
		t.Fatalf("a run of %d CPU records (%d KB) is refused: %v", MaxPhases*len(r.CPUs), len(b)>>10, err)
	}
}

// Phases pooled (Pool) keep what keeps one of them from holding, and
// average the card's clock over those that measured it.
func TestPool(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := Phase{Periods: 3000, OnCardClock: 2990, ClockHz: 48001, Safe: &Safe{Periods: 2, MarginNS: 100}, SafeAtDefaultLoad: &Safe{Periods: 2, MarginNS: 50}, StartWall: t0.Add(time.Minute), EndWall: t0.Add(2 * time.Minute)}
	b := Phase{Periods: 1000, OnCardClock: 1000, ClockHz: 47997, Safe: &Safe{Periods: 3, MarginNS: 900}, SafeAtDefaultLoad: &Safe{Periods: 2, MarginNS: 60}, CutShort: true, StartWall: t0, EndWall: t0.Add(time.Minute)}
	none := Phase{Lost: 4} // handed over nothing, lost some
	var p Phase
	p.Pool([]*Phase{&a, &b, &none}, nil)
	if p.OnCardClock != 3990 {
		t.Errorf("pooled %d periods on the card's clock, want 3990", p.OnCardClock)
	}
	if p.ClockHz != 48000 || *p.Safe != (Safe{Periods: 3, MarginNS: 900}) || *p.SafeAtDefaultLoad != (Safe{Periods: 2, MarginNS: 50}) || !p.CutShort || p.Lost != 4 || p.Periods != 4000 ||
		!p.StartWall.Equal(t0) || !p.EndWall.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("pooled %+v; want the clock 48000 Hz, the worse verdicts, cut short, 4 lost, 4000 periods, the span of both", p)
	}
	b.Safe = nil // a part with periods and no verdict: the pool has none
	if p.Pool([]*Phase{&a, &b}, nil); p.Safe != nil || p.SafeAtDefaultLoad != nil || p.Held(64) {
		t.Errorf("verdicts %+v, %+v with a part's unknown, want none", p.Safe, p.SafeAtDefaultLoad)
	}
}

// card.timestamp says what dated the run's periods, from the phases'
// counts: the card's clock for how many, the update for the rest.
func TestCardTimestamp(t *testing.T) {
	for _, c := range []struct {
		phases []Phase
		want   string
	}{
		{nil, ""},
		{[]Phase{{Periods: 100, OnCardClock: 100}, {Periods: 50, OnCardClock: 50}}, "the card's clock for all 150 periods"},
		{[]Phase{{Periods: 100, OnCardClock: 97}, {Periods: 50, OnCardClock: 50}}, "the card's clock for 147 of 150 periods"},
		{[]Phase{{Periods: 100}}, "the pointer update for all 100 periods"},
	} {
		r := Run{Phases: c.phases}
		if got := r.CardTimestamp(); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%+v: %q, want it to begin %q", c.phases, got, c.want)
		}
	}
}
