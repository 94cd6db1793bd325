package runner

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"latencytest/audio"
	"latencytest/audio/sound"
	"latencytest/internal/atomicfile"
	"latencytest/rundata"
)

// keepSeconds bounds the capture a loopback phase keeps when it has no
// duration (a monitor's, or one run until stopped): ten minutes.
const keepSeconds = 600

// keepFrames is how much of each phase's capture a loopback run keeps: the
// whole phase and a second, or keepSeconds.
func keepFrames(cfg Config) int {
	secs := keepSeconds
	if cfg.Duration > 0 {
		secs = min(secs, int(cfg.Duration.Seconds())+1)
	}
	return secs * cfg.Audio.Rate
}

// keepCapture writes the phase's capture into the samples folder and
// analyses it into ph.Sound.
func (r *phaseRun) keepCapture(wav []byte) error {
	if len(wav) == 0 {
		return nil
	}
	base := fmt.Sprintf("%02d-%s.wav", r.i+1, r.ph.Name)
	if err := atomicfile.WriteIn(r.s.res.samples, base, wav); err != nil {
		return fmt.Errorf("the capture: %w", err)
	}
	g := r.opened.Granted
	r.ph.Sound = hear(wav, g.PeriodFrames, g.PeriodFrames*g.Periods, &r.heard)
	r.ph.Sound.CaptureFile = "samples/" + base
	r.heard.LineUp(r.ph.Sound, g.PeriodFrames, g.Rate)
	r.told(r.ph.Sound)
	return nil
}

// told hands what a phase's capture said to Config.OnRoundTrip (its last
// second's round trip) and Config.OnGlitch (each glitch, by what came
// with it), as a monitor's hearing does while it runs.
func (r *phaseRun) told(snd *rundata.Sound) {
	if f := r.cfg.OnRoundTrip; f != nil {
		for i := len(snd.RoundTripPerSecond) - 1; i >= 0; i-- {
			if v := snd.RoundTripPerSecond[i]; !math.IsNaN(v) {
				f(v / 1e3)
				break
			}
		}
	}
	if f := r.cfg.OnGlitch; f != nil {
		for _, g := range snd.Glitches {
			f(glitchKind(g.With))
		}
	}
}

// hear analyses the capture of a loopback phase (audio/sound.Loop played
// and captured), lined up with the phase's samples by m (nil: a phase
// without an xrun): the round trip from its second channel, the glitches
// from its first. What cannot be judged is said in Note.
func hear(wav []byte, periodFrames, bufferFrames int, m *rundata.CaptureMap) *rundata.Sound {
	snd := &rundata.Sound{BufferFrames: bufferFrames, Glitches: []rundata.Glitch{}}
	f, samples, err := audio.DecodeWAV(bytes.NewReader(wav))
	if err == nil && f.Channels < 2 {
		err = fmt.Errorf("%d channel", f.Channels)
	}
	var loop *sound.Loop
	if err == nil {
		loop, err = sound.NewLoop(f.Rate)
	}
	if err != nil {
		snd.Note = "the capture: " + err.Error()
		return snd
	}
	tone, mls := channel(samples, f.Channels, 0), channel(samples, f.Channels, 1)
	snd.ToneHz, snd.Rate = loop.ToneHz, f.Rate
	glitches, err := sound.Glitches(tone, loop.ToneHz, f.Rate)
	switch {
	case errors.Is(err, sound.ErrNoTone):
		snd.Note = "the sine did not come back: is the capture device the playback's loopback?"
	case err != nil:
		snd.Note = "the sine: " + err.Error()
	default:
		snd.Judged = true
	}
	for _, g := range glitches {
		snd.Glitches = append(snd.Glitches, rundata.Glitch{
			AtMS:     float64(g.Start) * 1e3 / float64(f.Rate),
			Period:   int64(g.Start / max(periodFrames, 1)),
			LengthMS: float64(g.Frames) * 1e3 / float64(f.Rate),
		})
	}
	firstBreak := len(tone)
	if len(glitches) > 0 {
		firstBreak = glitches[0].Start
	}
	trips := roundTrip(snd, loop, mls, firstBreak, f.Rate)
	if m == nil {
		m = &rundata.CaptureMap{}
	}
	sp := splices{m: m, periodFrames: max(periodFrames, 1), bufferFrames: bufferFrames, loopFrames: len(loop.MLS), rate: f.Rate}
	sp.followRoundTrip(snd, trips, len(mls))
	return snd
}

// roundTrip reads the MLS's repetitions in mls into snd and returns
// them: the card delay from those that ended before the sound first broke
// (at frame firstBreak), as after a break (an xrun's restart) the capture
// kept and the loop played run apart by what the restart dropped; none
// when the sound broke before the first repetition came back whole.
func roundTrip(snd *rundata.Sound, loop *sound.Loop, mls []float32, firstBreak, rate int) []sound.Trip {
	trips, missing := loop.RoundTrips(mls)
	snd.RoundTrips, snd.RoundTripsMissing = len(trips), missing
	var steady []int
	for _, t := range trips {
		if t.At+len(loop.MLS) <= firstBreak {
			steady = append(steady, t.Delay)
		}
	}
	snd.RoundTripsBeforeBreak = len(steady)
	snd.CardDelay = frameStats(steady)
	if snd.CardDelay != nil {
		snd.RoundTripMS = tripMS(snd.BufferFrames, snd.CardDelay.Median, rate)
	}
	return trips
}

// frameStats is the spread of ds (sorted in place), the median the upper
// one of an even count; nil for none.
func frameStats(ds []int) *rundata.FrameStats {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	return &rundata.FrameStats{Min: ds[0], Median: ds[len(ds)/2], Max: ds[len(ds)-1]}
}

// tripMS is the round trip of a card delay of delay frames behind a
// playback buffer of bufferFrames, in ms.
func tripMS(bufferFrames, delay, rate int) float64 {
	return float64(bufferFrames+delay) * 1e3 / float64(rate)
}

// channel is channel c of interleaved samples of n channels.
func channel(samples []float32, n, c int) []float32 {
	out := make([]float32, len(samples)/n)
	for i := range out {
		out[i] = samples[i*n+c]
	}
	return out
}
