package rundata

import (
	"encoding/json"
	"strings"
	"testing"
)

// usbPhase is a phase measured as issue 47 item 8's emulated USB card
// measured hackbench: 2 × 256 frames at 48 kHz, every period written 0.3
// ms after its end but one, written 9.16 ms after (1.7 periods), the card
// reporting card frames queued beyond the buffer (nil: none read) and the
// late period an xrun when xrun is set. Its figures are the accumulator's,
// as the run fills them.
func usbPhase(name string, card *ReportedDelay, stream string, xrun bool) Phase {
	hdr := NewSampleHeader(48000, 256, 2)
	acc := NewAccumulator(hdr, 0)
	for i := range int64(1000) {
		due := i * hdr.PeriodNS
		s := Sample{Index: i, Due: due, Woke: due + 300e3}
		if i == 500 {
			s.Woke = due + 9_160_000
			if xrun {
				s.Xrun = 1e6
			}
		}
		acc.Add(&s)
	}
	ph := Phase{Name: name, CardReported: card}
	acc.CardDelay(CardAhead(card, stream))
	acc.Fill(&ph)
	return ph
}

func usbRun(phases ...Phase) *Run {
	return &Run{Driver: "alsa", Stream: "playback", Rate: 48000, PeriodFrames: 256, Periods: 2, PeriodUS: 256e6 / 48000, Phases: phases}
}

// The card's 480 frames (10 ms) queued in its transfers still play once
// the buffer's last frame has left it: the write 9.16 ms late, which
// n = 1 + ⌈w / period⌉ alone would put at × 3, fits 2 periods with
// 5.33 + 10 − 9.16 = 6.17 ms to spare, and the verdict says the run held
// at the size it ran with, and why: the card's delay, named. run.json
// keeps the same figure.
func TestCardDelayHeld(t *testing.T) {
	rd := &ReportedDelay{PlaybackFrames: 480}
	r := usbRun(usbPhase("idle", rd, "playback", false), usbPhase("hackbench", rd, "playback", false))
	hb := r.Phases[1]
	period := int64(256) * 1e9 / 48000
	if s := hb.Safe; s == nil || s.Periods != 2 || s.CardDelayNS != 10e6 || s.HeldAsRun || s.MarginNS != period+10e6-9_160_000 {
		t.Fatalf("safe %+v, want 2 periods with the card's 10 ms counted, margin %d", s, period+10e6-9_160_000)
	}
	want := "256 frames × 2 (10.7 ms) held under idle, hackbench; counted with the card's own delay, 10.0 ms (its driver's, queued beyond the buffer)"
	if got := VerdictText(r); got != want {
		t.Errorf("verdict\n = %q\nwant %q", got, want)
	}
	if why := hb.NotHeld(2, r.PeriodUS); why != "" {
		t.Errorf("hackbench did not hold: %s", why)
	}
	b, err := json.Marshal(hb)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"safe":{"periods":2,"margin_ns":6173333,"card_delay_ns":10000000}`) {
		t.Errorf("run.json's phase: %s", b)
	}
	// The floor across sizes reads the same rule: 2 × 256 held.
	if fl := FloorOf([]*Run{r}); len(fl.Phases) != 2 || fl.Phases[1].FloorFrames != 256 {
		t.Errorf("floor %+v", fl.Phases)
	}
}

// Without a delay the card reports, and with the xrun the late write
// made, the verdict still asks for more; an xrun at the run's size also
// drops the card's delay from the rule: it did not stand in for the
// buffer then.
func TestCardDelayXrunStillNeedsMore(t *testing.T) {
	for _, tc := range []struct {
		name string
		card *ReportedDelay
	}{
		{"no delay reported", nil},
		{"480 frames reported", &ReportedDelay{PlaybackFrames: 480}},
	} {
		r := usbRun(usbPhase("hackbench", tc.card, "playback", true))
		hb := r.Phases[0]
		if s := hb.Safe; s == nil || s.Periods != 3 || s.CardDelayNS != 0 || s.HeldAsRun {
			t.Errorf("%s: safe %+v, want × 3 without the card's delay", tc.name, s)
		}
		if got, want := VerdictText(r), "256 frames × 2 (10.7 ms) held under none of the phases; hackbench needs × 3 (16.0 ms)"; got != want {
			t.Errorf("%s: verdict\n = %q\nwant %q", tc.name, got, want)
		}
	}
}

// A card whose driver reports no delay (snd-aloop) keeps the rule as it
// was: × 3 for the write 9.16 ms late, and "needs × 3" with the xrun it
// made. Had it no xrun there, the run held at its size all the same,
// and the verdict says so and by how much the rule was passed; run.json's
// figure is then the buffer measured, marked held_as_run.
func TestCardDelayZeroUnchanged(t *testing.T) {
	zero := &ReportedDelay{}
	period := int64(256) * 1e9 / 48000
	broke := usbPhase("hackbench", zero, "playback", true)
	if want := Verdict(9_160_000, period, 0); broke.Safe == nil || *broke.Safe != want || want.Periods != 3 {
		t.Errorf("safe %+v, want %+v", broke.Safe, want)
	}
	if got := VerdictText(usbRun(broke)); strings.Contains(got, "card's own delay") || !strings.HasSuffix(got, "hackbench needs × 3 (16.0 ms)") {
		t.Errorf("verdict %q", got)
	}
	held := usbPhase("hackbench", zero, "playback", false)
	past := int64(9_160_000) - period
	if s := held.Safe; s == nil || s.Periods != 2 || !s.HeldAsRun || s.MarginNS != -past || s.CardDelayNS != 0 {
		t.Errorf("no xrun: safe %+v, want 2 periods held as run, margin %d", s, -past)
	}
	want := "256 frames × 2 (10.7 ms) held under hackbench (with no xrun though its latest write came 3.8 ms past the buffer's end by the rule: the card holds more than it reports)"
	if got := VerdictText(usbRun(held)); got != want {
		t.Errorf("no xrun: verdict\n = %q\nwant %q", got, want)
	}
}

// A stream with a capture side gets none of the playback's delay: the
// capture overruns when its buffer is full, whatever the playback holds.
func TestCardAhead(t *testing.T) {
	rd := &ReportedDelay{PlaybackFrames: 480, CaptureFrames: 96}
	for _, tc := range []struct {
		rd     *ReportedDelay
		stream string
		want   int64
	}{
		{rd, "playback", 480}, {rd, "", 480}, {rd, "duplex", 0}, {rd, "capture", 0},
		{nil, "playback", 0}, {&ReportedDelay{PlaybackFrames: -3}, "playback", 0},
	} {
		if got := CardAhead(tc.rd, tc.stream); got != tc.want {
			t.Errorf("CardAhead(%+v, %q) = %d, want %d", tc.rd, tc.stream, got, tc.want)
		}
	}
	if ph := usbPhase("hackbench", rd, "duplex", false); ph.Safe == nil || ph.Safe.CardDelayNS != 0 || !ph.Safe.HeldAsRun {
		t.Errorf("duplex: safe %+v, want the rule without the card's delay, held as run", ph.Safe)
	}
}

// Settled leaves a verdict alone where the absence of an xrun proves
// nothing (a period lost, a pointer jump) or an xrun was had, and where
// the rule already fits the buffer.
func TestSettled(t *testing.T) {
	s := &Safe{Periods: 4, MarginNS: 100}
	for _, ph := range []Phase{{Xruns: 1}, {Lost: 1}, {PointerJumps: 1}} {
		if got := ph.Settled(s, 2, 1000); got != s {
			t.Errorf("%+v: %+v", ph, got)
		}
	}
	var ph Phase
	if got := ph.Settled(s, 4, 1000); got != s {
		t.Errorf("fits: %+v", got)
	}
	if got := ph.Settled(s, 2, 1000); got.Periods != 2 || !got.HeldAsRun || got.MarginNS != 100-2000 || s.Periods != 4 {
		t.Errorf("settled %+v (from %+v)", got, s)
	}
	if got := ph.Settled(&Safe{Periods: MaxSafePeriods + 1}, 2, 1000); got.Periods != 2 || got.MarginNS != 0 {
		t.Errorf("beyond the largest buffer: %+v", got)
	}
	if got := ph.Settled(nil, 2, 1000); got != nil {
		t.Errorf("nil: %+v", got)
	}
}
