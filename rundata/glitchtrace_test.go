package rundata

import (
	"bytes"
	"strings"
	"testing"
)

// The card's periods in these tests: 48 frames at 48 kHz, 1 ms on the
// card's clock, which runs 0.01 % slow against CLOCK_MONOTONIC.
const (
	testPeriodNS = 1_000_100
	testBaseNS   = 5_000_000_000
)

// heardPhase is a loopback phase of n periods lined up in a CaptureMap:
// each period's capture due at its end, an xrun at each of xruns, after
// which the stream restarted restartNS later. It returns the map and each
// period's capture instant, by period.
func heardPhase(n int64, restartNS int64, xruns ...int64) (*CaptureMap, map[int64]int64) {
	var m CaptureMap
	due := map[int64]int64{}
	var shift int64
	for i := int64(0); i < n; i++ {
		s := Sample{Index: i, Due: testBaseNS + (i+1)*testPeriodNS + shift}
		s.CaptureDue, s.PlaybackDue = s.Due-20_000, s.Due
		for _, x := range xruns {
			if i == x {
				s.Xrun = 2e6
				shift += restartNS
			}
		}
		due[i] = s.CaptureDue
		m.Add(&s)
	}
	return &m, due
}

// A frame of the capture is put on CLOCK_MONOTONIC through the periods'
// capture instants: exactly at an anchor, linear between two, the last
// period from itself, and after an xrun from the periods after its seam,
// whose restart moved them on by 7.3 ms.
func TestCaptureMapAt(t *testing.T) {
	m, due := heardPhase(300, 7_300_000, 150)
	frame := func(kept, in int64) int64 { return kept*48 + in }
	for _, c := range []struct {
		name   string
		frame  int64
		period int64 // the phase's period the frame was captured in
		left   int64 // its frames to the period's end
	}{
		{"first period", frame(0, 0), 0, 48},
		{"an anchor", frame(64, 47), 64, 1},
		{"between anchors", frame(100, 12), 100, 36},
		{"last before the seam", frame(149, 24), 149, 24},
		{"first after the seam", frame(150, 0), 151, 48},
		{"after the seam", frame(170, 0), 171, 48},
		{"the last period", frame(298, 30), 299, 18},
	} {
		want := due[c.period] - c.left*1e9/48000
		if got := m.At(c.frame, 48, 48000); got != want {
			t.Errorf("%s: frame %d at %d ns, want %d (%+d)", c.name, c.frame, got, want, got-want)
		}
	}
	if got := m.At(frame(400, 0), 48, 48000); got != 0 {
		t.Errorf("a frame past the capture at %d, want 0 (not known)", got)
	}
	var none CaptureMap
	for i := int64(0); i < 10; i++ {
		none.Add(&Sample{Index: i})
	}
	if got := none.At(frame(5, 0), 48, 48000); got != 0 {
		t.Errorf("samples without instants put a frame at %d, want 0", got)
	}
}

// Glitches at known times beside spikes with known culprits: one alone in
// a culprit's window, one a playback break captured after a window's end
// by less than the card delay, one at an xrun's seam (that xrun's spike,
// by its period), and one where the audio thread was on time. spikes.json
// marks the spikes heard with their culprit, the glitches name it, and
// the others say why they have none; the closing block counts them.
func TestLineUpTraceNamesTheCulprit(t *testing.T) {
	m, due := heardPhase(1000, 3_000_000, 500)
	snd := &Sound{Judged: true, Rate: 48000, CardDelay: &FrameStats{Min: 90, Median: 96, Max: 144}, Glitches: []Glitch{
		{AtMS: 200.5, LengthMS: 2}, // kept 200: period 200
		{AtMS: 300.25, LengthMS: 1},
		{AtMS: 500.1, LengthMS: 0.1}, // the xrun's seam
		{AtMS: 700.2, LengthMS: 3},   // kept 700: period 701
	}}
	m.LineUp(snd, 48, 48000)
	if snd.Glitches[2].With != GlitchXrun || snd.Glitches[0].With != GlitchAlone {
		t.Fatalf("glitches lined up with the samples as %+v", snd.Glitches)
	}
	culprit := Cause{Kind: CauseThread, Name: "lt-culprit", PID: 4242, Policy: "SCHED_FIFO 90", NS: 2_500_000}
	other := Cause{Kind: CauseThread, Name: "hackbench", PID: 77, Policy: "SCHED_OTHER", NS: 900_000}
	ss := []Spike{
		// Period 198's window, due to due + 3 ms, holds glitch 0's capture
		// instant (period 200, 0.5 ms before its end).
		{Phase: 0, Period: 198, DueNS: due[198], LatencyNS: 3_000_000, Causes: []Cause{culprit, {Kind: CauseIRQ, Name: "IRQ 24 ahci", NS: 300_000}}, UnexplainedNS: 200_000},
		// Ends 2.5 ms before glitch 1 was captured: within the card
		// delay (144 frames, 3 ms), so the playback's break can have been
		// played in it.
		{Phase: 0, Period: 297, DueNS: due[300] - 750_000 - 2_500_000 - 1_200_000, LatencyNS: 1_200_000, Causes: []Cause{other}, UnexplainedNS: 300_000},
		{Phase: 0, Period: 500, DueNS: due[500], LatencyNS: 400_000, XrunNS: 2e6, Causes: []Cause{{Kind: CauseThrottled, Name: "RT throttling", NS: 5_000_000}}},
		// Another phase's spike at glitch 3's time is not this phase's.
		{Phase: 1, Period: 701, DueNS: due[701] - 2_000_000, LatencyNS: 4_000_000, Causes: []Cause{culprit}},
	}
	LineUpTrace(snd, ss, SpikesOf{Phase: 0, CPU: AnyCPU, Traced: true})
	check := func(when string) {
		t.Helper()
		g := snd.Glitches
		for i, want := range []string{
			"lt-culprit (SCHED_FIFO 90) in the spike of period 198",
			"hackbench (SCHED_OTHER) in the spike of period 297",
			"RT throttling in the spike of period 500",
			GlitchNoSpike,
		} {
			if got := g[i].CauseText(); got != want {
				t.Errorf("%s: glitch %d at %.2f ms (at_ns %d): %q, want %q", when, i, g[i].AtMS, g[i].AtNS, got, want)
			}
		}
		for i, want := range []*SpikeHeard{
			{Culprit: culprit, GlitchesAtMS: []float64{200.5}},
			{Culprit: other, GlitchesAtMS: []float64{300.25}},
			{Culprit: ss[2].Causes[0], GlitchesAtMS: []float64{500.1}},
			nil,
		} {
			got := ss[i].Heard
			if (got == nil) != (want == nil) || got != nil && (got.Culprit != want.Culprit || len(got.GlitchesAtMS) != 1 || got.GlitchesAtMS[0] != want.GlitchesAtMS[0]) {
				t.Errorf("%s: spike %d heard %+v, want %+v", when, i, got, want)
			}
		}
	}
	check("lined up")
	if want := due[200] - 500_000; snd.Glitches[0].AtNS != want {
		t.Errorf("glitch 0 at %d ns, want %d", snd.Glitches[0].AtNS, want)
	}
	b, err := MarshalSpikes(ss)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"heard":{"culprit":{"kind":"thread","name":"lt-culprit","pid":4242,"policy":"SCHED_FIFO 90","ns":2500000},"glitches_at_ms":[200.5]}`; !bytes.Contains(b, []byte(want)) {
		t.Errorf("spikes.json\n%s\nwithout %s", b, want)
	}
	// Each spikes.json written lines them up again: the same marks.
	LineUpTrace(snd, ss, SpikesOf{Phase: 0, CPU: AnyCPU, Traced: true})
	check("lined up again")

	var sum bytes.Buffer
	WriteSummary(&sum, &Run{Phases: []Phase{{Name: "hackbench", Sound: snd}}}, nil, nil)
	if want := "in the trace: lt-culprit (SCHED_FIFO 90) 1, hackbench (SCHED_OTHER) 1, RT throttling 1, no spike at that time 1)"; !strings.Contains(sum.String(), want) {
		t.Errorf("closing block\n%s\nwithout %q", sum.String(), want)
	}

	// Without the card delay, glitch 1, captured 2.5 ms after the
	// window's end, is no longer the window's; 1 ms after it still is
	// (the sine places a break to within a millisecond).
	snd.CardDelay = nil
	LineUpTrace(snd, ss, SpikesOf{Phase: 0, CPU: AnyCPU, Traced: true})
	if got := snd.Glitches[1].Cause(); got != GlitchNoSpike {
		t.Errorf("2.5 ms after a window, no card delay known: %q, want %q", got, GlitchNoSpike)
	}
	ss[1].DueNS += 1_500_000
	LineUpTrace(snd, ss, SpikesOf{Phase: 0, CPU: AnyCPU, Traced: true})
	if got := snd.Glitches[1].Cause(); got != other.String() {
		t.Errorf("1 ms after a window, no card delay known: %q, want %q", got, other.String())
	}
	ss[1].DueNS -= 1_500_000
	// Spikes dropped: one may have been there.
	LineUpTrace(snd, ss, SpikesOf{Phase: 0, CPU: AnyCPU, Traced: true, Dropped: true})
	if got := snd.Glitches[3].Cause(); got != GlitchSpikesDropped {
		t.Errorf("spikes dropped: %q, want %q", got, GlitchSpikesDropped)
	}
	// A tracer that did not record: no window for any, no spike heard.
	LineUpTrace(snd, ss, SpikesOf{Phase: 0, CPU: AnyCPU, Traced: false})
	for i, g := range snd.Glitches {
		if g.Cause() != GlitchNoTrace || g.Trace.Culprit != nil {
			t.Errorf("untraced glitch %d: %+v", i, g.Trace)
		}
	}
	for i, sp := range ss[:3] {
		if sp.Heard != nil {
			t.Errorf("untraced: spike %d still heard", i)
		}
	}
	// Under run --cpus only the card's thread moves the sound: a spike of
	// another CPU's thread (a timer) at the glitch's time is not its.
	timer := []Spike{{Phase: 0, CPU: 3, Period: 199, DueNS: due[199], LatencyNS: 2_000_000, Causes: []Cause{culprit}}}
	for _, c := range []struct {
		cpu  int
		want string
	}{{1, GlitchNoSpike}, {3, culprit.String()}, {AnyCPU, culprit.String()}} {
		LineUpTrace(snd, timer, SpikesOf{Phase: 0, CPU: c.cpu, Traced: true})
		if got := snd.Glitches[0].Cause(); got != c.want {
			t.Errorf("the sound's thread on CPU %d, a spike on CPU 3: %q, want %q", c.cpu, got, c.want)
		}
	}
	// Without --trace, nothing is said.
	if (Glitch{AtMS: 1}).CauseText() != "" {
		t.Error("a glitch without a trace has a cause")
	}
}

// A window's culprit is its largest cause, or its unexplained time where
// that is larger.
func TestSpikeCulprit(t *testing.T) {
	a := Cause{Kind: CauseThread, Name: "a", NS: 300}
	b := Cause{Kind: CauseIRQ, Name: "IRQ 9 acpi", NS: 500}
	if got := (Spike{Causes: []Cause{a, b}, UnexplainedNS: 100}).Culprit(); got != b {
		t.Errorf("culprit %+v, want %+v", got, b)
	}
	if got := (Spike{Causes: []Cause{a}, UnexplainedNS: 400}).Culprit(); got.String() != "unexplained" || got.NS != 400 {
		t.Errorf("culprit %+v, want the unexplained 400 ns", got)
	}
}
