package runner

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"latencytest/audio"
	"latencytest/audio/sound"
	"latencytest/rundata"
)

// s16WAV is a 16-bit WAV file of the interleaved channels.
func s16WAV(rate int, chans ...[]float32) []byte {
	f := audio.WAVFormat{Tag: 1, Channels: len(chans), Rate: rate, Bits: 16, Align: 2 * len(chans)}
	data := make([]byte, 0, 2*len(chans)*len(chans[0]))
	for i := range chans[0] {
		for _, c := range chans {
			data = binary.LittleEndian.AppendUint16(data, uint16(int16(math.Round(float64(c[i])*32767))))
		}
	}
	return append(audio.WAVHeader(f, len(data)), data...)
}

// A loopback capture, as snd-aloop would hand it back 300 frames late with
// 50 ms of silence in it, reads as that: its card delay, its round trip
// behind a 4×256-frame buffer, and the one glitch, in its period.
func TestHear(t *testing.T) {
	const rate, delay, at = 48000, 300, 70000
	l, _ := sound.NewLoop(rate)
	var tone, mls []float32
	tone, mls = make([]float32, delay), make([]float32, delay)
	for range 4 {
		tone, mls = append(tone, l.Tone...), append(mls, l.MLS...)
	}
	tone = slices.Concat(tone[:at], make([]float32, 2400), tone[at:])
	mls = slices.Concat(mls[:at], make([]float32, 2400), mls[at:])
	snd := hear(s16WAV(rate, tone, mls), 256, 1024, nil)
	// The repetitions before the silence read the delay; the one after it
	// the delay and the silence, by which the capture now lags, and is
	// left out of the card delay.
	if want := (rundata.FrameStats{Min: delay, Median: delay, Max: delay}); snd.CardDelay == nil || *snd.CardDelay != want ||
		snd.RoundTrips != 3 || snd.RoundTripsBeforeBreak != 2 || snd.RoundTripsMissing != 0 {
		t.Errorf("card delay %+v over %d round trips (%d before the break), %d missing; want %+v over 3 (2), none missing",
			snd.CardDelay, snd.RoundTrips, snd.RoundTripsBeforeBreak, snd.RoundTripsMissing, want)
	}
	if want := float64(1024+delay) * 1e3 / rate; snd.RoundTripMS != want || snd.BufferFrames != 1024 {
		t.Errorf("round trip %g ms behind %d frames, want %g behind 1024", snd.RoundTripMS, snd.BufferFrames, want)
	}
	if !snd.Judged || len(snd.Glitches) != 1 {
		t.Fatalf("judged %v, glitches %+v (%s); want the one", snd.Judged, snd.Glitches, snd.Note)
	}
	g := snd.Glitches[0]
	if math.Abs(g.AtMS-at*1e3/rate) > 1 || math.Abs(g.LengthMS-50) > 1 || g.Period != at/256 {
		t.Errorf("glitch %+v, want at %g ms for 50 ms in period %d", g, float64(at)*1e3/rate, at/256)
	}
}

// A capture with no sine in it says so, and no glitch is counted.
func TestHearNothing(t *testing.T) {
	silence := make([]float32, 100000) // three loops: two stretches to look in
	snd := hear(s16WAV(48000, silence, silence), 256, 1024, nil)
	if snd.Judged || snd.Note == "" || snd.CardDelay != nil || snd.RoundTripsMissing == 0 {
		t.Errorf("%+v: want not judged, a note, no delay and the round trips missing", snd)
	}
	if snd := hear([]byte("not a wav"), 256, 1024, nil); snd.Judged || snd.Note == "" {
		t.Errorf("%+v: want a note", snd)
	}
}

// A capture that broke before the MLS came back whole reads no round
// trip: after the break the capture kept and the loop played are apart
// by what the restart dropped, not by the card.
func TestHearBrokenFirst(t *testing.T) {
	const rate = 48000
	l, _ := sound.NewLoop(rate)
	var tone, mls []float32
	for range 3 {
		tone, mls = append(tone, l.Tone...), append(mls, l.MLS...)
	}
	// 1024 frames dropped at frame 5000, as a restart at 4×256 drops them.
	tone, mls = slices.Concat(tone[:5000], tone[6024:]), slices.Concat(mls[:5000], mls[6024:])
	snd := hear(s16WAV(rate, tone, mls), 256, 1024, nil)
	if snd.CardDelay != nil || snd.RoundTripMS != 0 || snd.RoundTrips == 0 || snd.RoundTripsBeforeBreak != 0 || len(snd.Glitches) != 1 {
		t.Errorf("%+v: want repetitions read, none before the one glitch, and no card delay", snd)
	}
}

// The glitch of TestHear's capture (50 ms of silence at frame 70000, of
// periods of 256 frames at 48 kHz: period 273, 112 frames in) lined up
// with a trace: the periods' capture instants on CLOCK_MONOTONIC put it at
// period 273's end less 144 frames, inside the window of period 272's
// spike, whose culprit it names; the same spike 50 ms earlier leaves it
// with none; a tracer that did not start, with no window at all.
func TestHeardGlitchBesideSpike(t *testing.T) {
	const rate, delay, at, pf = 48000, 300, 70000, 256
	l, _ := sound.NewLoop(rate)
	var tone, mls []float32
	tone, mls = make([]float32, delay), make([]float32, delay)
	for range 4 {
		tone, mls = append(tone, l.Tone...), append(mls, l.MLS...)
	}
	tone = slices.Concat(tone[:at], make([]float32, 2400), tone[at:])
	mls = slices.Concat(mls[:at], make([]float32, 2400), mls[at:])
	const periodNS, base = int64(pf * 1_000_000_000 / rate), int64(9e9)
	var m rundata.CaptureMap
	for i := int64(0); i <= int64(len(tone)/pf); i++ {
		s := rundata.Sample{Index: i, Due: base + (i+1)*periodNS}
		s.CaptureDue, s.PlaybackDue = s.Due-10_000, s.Due
		m.Add(&s)
	}
	snd := hear(s16WAV(rate, tone, mls), pf, 4*pf, &m)
	m.LineUp(snd, pf, rate)
	if len(snd.Glitches) != 1 {
		t.Fatalf("glitches %+v, want the one", snd.Glitches)
	}
	g := &snd.Glitches[0]
	want := base + (at/pf+1)*periodNS - 10_000 - (pf-at%pf)*1e9/rate
	if d := g.AtNS - want; d < -1e6 || d > 1e6 {
		t.Errorf("glitch at %d ns, want %d within the sine's millisecond (%+d)", g.AtNS, want, d)
	}
	culprit := rundata.Cause{Kind: rundata.CauseThread, Name: "lt-culprit", PID: 99, Policy: "SCHED_FIFO 90", NS: 5_000_000}
	spike := rundata.Spike{Period: at/pf - 1, DueNS: base + (at/pf)*periodNS, LatencyNS: 6_000_000, Causes: []rundata.Cause{culprit}, UnexplainedNS: 1_000_000}
	ss := []rundata.Spike{spike}
	rundata.LineUpTrace(snd, ss, rundata.SpikesOf{Phase: 0, CPU: rundata.AnyCPU, Traced: true})
	if got, want := g.CauseText(), "lt-culprit (SCHED_FIFO 90) in the spike of period 272"; got != want {
		t.Errorf("glitch's cause %q, want %q", got, want)
	}
	if ss[0].Heard == nil || ss[0].Heard.Culprit != culprit {
		t.Errorf("spike heard %+v, want its culprit", ss[0].Heard)
	}
	ss[0].DueNS -= 50_000_000
	rundata.LineUpTrace(snd, ss, rundata.SpikesOf{Phase: 0, CPU: rundata.AnyCPU, Traced: true})
	if got := g.Cause(); got != rundata.GlitchNoSpike || ss[0].Heard != nil {
		t.Errorf("a spike 50 ms before: glitch's cause %q, spike heard %+v; want %q and none", got, ss[0].Heard, rundata.GlitchNoSpike)
	}
	tr := &spikeTrace{info: rundata.Trace{Note: "tracefs is not mounted"}}
	if err := tr.write(nil, &rundata.Phase{Sound: snd}); err != nil {
		t.Fatal(err)
	}
	if got := g.Cause(); got != rundata.GlitchNoTrace {
		t.Errorf("no tracer: glitch's cause %q, want %q", got, rundata.GlitchNoTrace)
	}
}
