package runner

import (
	"math"
	"slices"
	"testing"

	"latencytest/audio/sound"
	"latencytest/rundata"
)

// loopCapture is what a loopback hands back of the loop l over frames
// frames when its capture frame c lags the loop played by lag(c): the
// sine and the MLS, c − lag(c) frames into the loop.
func loopCapture(l *sound.Loop, frames int, lag func(c int) int) (tone, mls []float32) {
	n := len(l.MLS)
	tone, mls = make([]float32, frames), make([]float32, frames)
	for c := range tone {
		i := ((c-lag(c))%n + n) % n
		tone[c], mls[c] = l.Tone[i], l.MLS[i]
	}
	return tone, mls
}

// A phase of 1536 kept periods of 256 frames at 48 kHz (about 8 s)
// behind a 4×256-frame buffer, through a card that delays by 300 frames
// and by 480 more from about 5.5 s on (a round trip that grows), restarted
// by xruns: each restart makes the capture lag by the buffer less (and by
// a period less again when the xrun's period had been written). The round
// trip is followed across the restarts: every second reads the card's
// delay, 300 frames and then 780, never the restart's offset, while the
// figure of old (card_delay_frames) reads the repetitions before the
// first break alone.
func TestFollowRoundTrip(t *testing.T) {
	const rate, period, buffer, delay, grown, kept = 48000, 256, 1024, 300, 780, 1536
	l, _ := sound.NewLoop(rate)
	growAt := 8*len(l.MLS) + 5000 // capture frame, between two repetitions
	for _, c := range []struct {
		name    string
		xruns   []int64 // the phase's periods with an xrun
		written int     // frames of the xrun's period written before the stop
	}{
		{"a restart", []int64{400}, 0},
		{"a capture's overrun", []int64{400}, period},
		{"two restarts at one seam and one more", []int64{400, 401, 900}, 0},
		{"a restart as the stream started", []int64{0}, 0},
	} {
		var m rundata.CaptureMap
		var seams []int // capture frames of the restarts
		for i := int64(0); i < kept+int64(len(c.xruns)); i++ {
			s := rundata.Sample{Index: i}
			if slices.Contains(c.xruns, i) {
				s.Xrun = 1e6
				seams = append(seams, int(i-int64(len(seams)))*period)
			}
			m.Add(&s)
		}
		lag := func(f int) int {
			d := delay
			if f >= growAt {
				d = grown
			}
			for _, s := range seams {
				if s <= f {
					d -= buffer + c.written
				}
			}
			return d
		}
		tone, mls := loopCapture(l, kept*period, lag)
		snd := hear(s16WAV(rate, tone, mls), period, buffer, &m)

		want0, want1 := tripMS(buffer, delay, rate), tripMS(buffer, grown, rate)
		if f := snd.RoundTripFollowed; f == nil || f.Min != want0 || f.Max != want1 {
			t.Errorf("%s: round trip over the phase %+v, want from %g to %g ms", c.name, f, want0, want1)
		}
		if snd.RoundTripsFollowed < snd.RoundTrips-len(seams) || snd.RoundTripsFollowed == 0 {
			t.Errorf("%s: %d repetitions followed of %d read, want all but those across %d seams", c.name, snd.RoundTripsFollowed, snd.RoundTrips, len(seams))
		}
		ps := snd.RoundTripPerSecond
		if len(ps) != int(math.Ceil(float64((kept+len(c.xruns))*period)/rate)) {
			t.Fatalf("%s: %d seconds, want the phase's %d", c.name, len(ps), (kept+len(c.xruns))*period/rate+1)
		}
		var read []float64
		for s, v := range ps {
			switch {
			case math.IsNaN(v):
			case v != want0 && v != want1:
				t.Errorf("%s: second %d reads %g ms, want %g or %g", c.name, s, v, want0, want1)
			default:
				read = append(read, v)
			}
		}
		// A second may hold no repetition read: the last, partial one,
		// the one where the delay grew, one across each seam.
		if len(read) < len(ps)-2-len(seams) || !slices.IsSorted(read) || read[0] != want0 || read[len(read)-1] != want1 {
			t.Errorf("%s: per second %v, want %g ms and then %g in all but %d seconds", c.name, ps, want0, want1, 2+len(seams))
		}
		// What stood alone before: the repetitions up to the first break.
		if c.xruns[0] > 0 && (snd.CardDelay == nil || snd.CardDelay.Max != delay || snd.RoundTripsBeforeBreak >= snd.RoundTripsFollowed) {
			t.Errorf("%s: card delay %+v from %d repetitions, want %d frames from those before the break alone", c.name, snd.CardDelay, snd.RoundTripsBeforeBreak, delay)
		}
	}
}
