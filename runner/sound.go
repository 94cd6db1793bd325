package runner

import (
	"bytes"
	"errors"
	"fmt"
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
	r.ph.Sound = hear(wav, g.PeriodFrames, g.PeriodFrames*g.Periods)
	r.ph.Sound.CaptureFile = "samples/" + base
	r.heard.LineUp(r.ph.Sound, g.PeriodFrames, g.Rate)
	return nil
}

// hear analyses the capture of a loopback phase (audio/sound.Loop played
// and captured): the round trip from its second channel, the glitches
// from its first. What cannot be judged is said in Note.
func hear(wav []byte, periodFrames, bufferFrames int) *rundata.Sound {
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
	snd.ToneHz = loop.ToneHz
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
	roundTrip(snd, loop, mls, firstBreak, f.Rate)
	return snd
}

// roundTrip reads the MLS's repetitions in mls into snd: the card delay
// from those that ended before the sound first broke (at frame
// firstBreak), as after a break (an xrun's restart) the capture kept and
// the loop played run apart by what the restart dropped; none when the
// sound broke before the first repetition came back whole.
func roundTrip(snd *rundata.Sound, loop *sound.Loop, mls []float32, firstBreak, rate int) {
	trips, missing := loop.RoundTrips(mls)
	snd.RoundTrips, snd.RoundTripsMissing = len(trips), missing
	var steady []int
	for _, t := range trips {
		if t.At+len(loop.MLS) <= firstBreak {
			steady = append(steady, t.Delay)
		}
	}
	snd.RoundTripsBeforeBreak = len(steady)
	if len(steady) == 0 {
		return
	}
	slices.Sort(steady)
	snd.CardDelay = &rundata.FrameStats{Min: steady[0], Median: steady[len(steady)/2], Max: steady[len(steady)-1]}
	snd.RoundTripMS = float64(snd.BufferFrames+snd.CardDelay.Median) * 1e3 / float64(rate)
}

// channel is channel c of interleaved samples of n channels.
func channel(samples []float32, n, c int) []float32 {
	out := make([]float32, len(samples)/n)
	for i := range out {
		out[i] = samples[i*n+c]
	}
	return out
}
