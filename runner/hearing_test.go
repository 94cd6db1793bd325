package runner

import (
	"math/rand/v2"
	"testing"

	"latencytest/audio/sound"
	"latencytest/rundata"
)

// A monitor's capture, read as it arrives (hearing), reads what the same
// capture heard whole reads: about 10 s of 256-frame periods at 48 kHz
// behind a 4×256-frame buffer, through a card 300 frames late, with two
// xruns whose restarts spliced the capture (heard at their seams), and
// four dropouts of the sine no counter saw: one inside a step, one ending
// a step (within a millisecond of its end), one at the start of the next,
// and one of 1.5 s over two steps (counted once). The capture comes in
// pieces of no particular size, ahead of the samples or behind them. The
// round trip read is the lag's at every second, across the restarts; the
// glitches are the four alone and the two at the seams, as hear and
// LineUp count them over the whole capture; and the capture held stays
// within two loops and a step. The capture comes as the engine hands it
// over (captureStream): a WAV file of 16-bit frames, in pieces.
func TestHearingIncremental(t *testing.T) {
	const rate, period, buffer, delay, xrun1, xrun2, periods = 48000, 256, 1024, 300, 1000, 1600, 1877
	l, _ := sound.NewLoop(rate)
	xruns := []int64{xrun1, xrun2}
	var seams []int // capture frames of the restarts
	for i, x := range xruns {
		seams = append(seams, int(x-int64(i))*period)
	}
	kept := periods - len(xruns)
	lag := func(f int) int {
		d := delay
		for _, s := range seams {
			if s <= f {
				d -= buffer
			}
		}
		return d
	}
	tone, mls := loopCapture(l, kept*period, lag)
	dropouts := []struct{ at, frames int }{{70000, 2400}, {2*rate - 30, 480}, {3*rate + 100, 240}, {300000, 72000}}
	for _, d := range dropouts {
		clear(tone[d.at : d.at+d.frames])
	}
	judgedTo := 9 * rate // the steps whole, with their pad, in 10 s of capture

	var trips []float64
	kinds := map[string]int{}
	h, err := newHearing(rate, period, buffer, func(s float64) { trips = append(trips, s) }, func(k string) { kinds[k]++ })
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(45, 3))
	// The engine's stdout: a 16-bit WAV in pieces of any size, frames
	// cut included, the first before the hearing starts.
	wav := s16WAV(rate, tone, mls)
	cs := &captureStream{}
	fed, held := 0, 0        // bytes written
	feed := func(upTo int) { // frames
		for end := 44 + 4*upTo; fed < end; {
			n := min(1+r.IntN(9000), end-fed)
			cs.Write(wav[fed : fed+n])
			fed += n
			held = max(held, len(h.tone))
		}
	}
	feed(1000)
	cs.hear(h)
	var m rundata.CaptureMap // the samples' map, for hear
	keptSoFar := 0
	for i := range int64(periods) {
		s := rundata.Sample{Index: i}
		if i == xrun1 || i == xrun2 {
			s.Xrun = 1e6
		} else {
			keptSoFar++
		}
		h.sample(&s)
		m.Add(&s)
		// The capture up to eight periods ahead of the samples or behind.
		feed(min(max(keptSoFar+r.IntN(17)-8, 0), kept) * period)
	}
	feed(kept * period)

	want := tripMS(buffer, delay, rate) / 1e3
	if len(trips) < 10 {
		t.Errorf("%d round trips read, want one in most of 10 s", len(trips))
	}
	for i, s := range trips {
		if s != want {
			t.Errorf("round trip %d reads %g s, want %g", i, s, want)
		}
	}
	if kinds["alone"] != len(dropouts) || kinds["xrun"] != len(seams) || len(kinds) != 2 {
		t.Errorf("glitches by kind %v, want %d alone and %d at an xrun's seam", kinds, len(dropouts), len(seams))
	}
	// The whole capture heard at once counts the same in the frames the
	// steps judged.
	snd := hear(wav, period, buffer, &m)
	m.LineUp(snd, period, rate)
	whole := map[string]int{}
	for _, g := range snd.Glitches {
		if g.AtMS < float64(judgedTo)*1e3/rate {
			whole[glitchKind(g.With)]++
		}
	}
	if whole["alone"] != kinds["alone"] || whole["xrun"] != kinds["xrun"] {
		t.Errorf("heard whole: %v; read as it came: %v", whole, kinds)
	}
	if f := snd.RoundTripFollowed; f == nil || f.Median/1e3 != want {
		t.Errorf("heard whole: round trip %+v, want %g s", f, want)
	}
	if err := cs.failed(); err != nil || fed != len(wav) || h.frames != kept*period {
		t.Errorf("%d bytes of %d written, %d frames heard of %d: %v", fed, len(wav), h.frames, kept*period, err)
	}
	if bound := 2*len(l.MLS) + 2*rate; held > bound {
		t.Errorf("held %d frames of capture, want at most %d", held, bound)
	}
}

// A capture whose samples do not come (the samples' reader fell behind)
// is held up to hearMaxHeldS, the older dropped unheard; once the samples
// come, what is held is heard, from a loop boundary on.
func TestHearingSamplesBehind(t *testing.T) {
	const rate, period = 48000, 256
	l, _ := sound.NewLoop(rate)
	tone, mls := loopCapture(l, 40*rate, func(int) int { return 300 })
	var trips []float64
	h, _ := newHearing(rate, period, 1024, func(s float64) { trips = append(trips, s) }, func(string) {})
	frames := make([]float32, 0, 2*rate)
	for at := 0; at < len(tone); at += rate {
		frames = frames[:0]
		for i := at; i < at+rate; i++ {
			frames = append(frames, tone[i], mls[i])
		}
		h.add(frames, 2)
		if len(h.tone) > hearMaxHeldS*rate {
			t.Fatalf("%d frames held, over %d s", len(h.tone), hearMaxHeldS)
		}
	}
	if len(trips) != 0 {
		t.Fatalf("%d round trips heard without the samples", len(trips))
	}
	for i := range int64(40 * rate / period) {
		h.sample(&rundata.Sample{Index: i})
	}
	h.add(nil, 2)
	if want := tripMS(1024, 300, rate) / 1e3; len(trips) < 10 || trips[len(trips)-1] != want {
		t.Errorf("round trips %v once the samples came, want %g s in most of %d s", trips, want, hearMaxHeldS)
	}
}
