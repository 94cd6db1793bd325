package runner

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"latencytest/audio"
	"latencytest/audio/sound"
	"latencytest/rundata"
)

// A hearing analyses a loopback's capture as it arrives, for a monitor,
// whose one engine runs for days: the capture never ends, so it cannot
// be kept whole and heard once (hear). It is read with the same code,
// a piece at a time, in bounded memory: the MLS's repetitions
// (sound.Loop.RoundTrips) in the same stretches, from the same loop
// boundaries, as over a whole capture, followed across the restarts by
// the same follower; the sine's glitches (sound.GlitchesGoingOn) a second
// at a time with hearPadMS of the capture on either side, lined up with the
// samples by the same CaptureMap (LineUp). It holds less than two loops
// and two seconds of the capture (hearMaxHeldS when the samples fall
// behind), and the CaptureMap's marks (bounded).
//
// The capture and the samples arrive on different pipes: a stretch of
// the capture is analysed once the samples of its periods have been
// added (sample), so that its seams and jumps are known.
type hearing struct {
	mu   sync.Mutex
	m    rundata.CaptureMap
	sp   splices
	loop *sound.Loop
	fol  follower
	// tone and mls are the capture's two channels from frame base on;
	// frames is the capture's length so far.
	tone, mls    []float32
	base, frames int
	tripAt       int // the capture frame of the next stretch the MLS is looked for in (a loop boundary)
	judged       int // the glitches starting before it are counted
	lastEnd      int // the last frame of the last glitch seen (-1: none)
	second       int // the newest second of the stream with a round trip read (-1: none)
	delays       []int
	// roundTrip is called with the median round trip (s) of the newest
	// second read, each time it changes; glitch with each glitch's kind
	// (glitchKind).
	roundTrip func(seconds float64)
	glitch    func(kind string)
}

// hearStep is the capture, in seconds, whose glitches are looked for at
// a time; hearPadMS the capture (ms) on either side of a step given to
// sound.GlitchesGoingOn with it, so that a break that starts in a step
// has at least hearPadMS of the tone before it in the stretch judged
// (which then holds enough tone to be judged however long the silence
// after it); hearMarginMS how far before a step a break still counts as
// new in it (the step before judged up to hearPadMS past its end, so
// none should be left).
//
// hearMaxHeldS bounds the capture held, in seconds, when the samples fall
// behind it (the capture is heard only as far as they go): what is older
// is dropped unheard.
const (
	hearMaxHeldS = 30
	hearStep     = 1
	hearPadMS    = 200
	hearMarginMS = 5
)

// newHearing is a hearing of a capture at rate of periodFrames-frame
// periods behind a playback buffer of bufferFrames.
func newHearing(rate, periodFrames, bufferFrames int, roundTrip func(float64), glitch func(string)) (*hearing, error) {
	loop, err := sound.NewLoop(rate)
	if err != nil {
		return nil, err
	}
	h := &hearing{loop: loop, lastEnd: -1, second: -1, roundTrip: roundTrip, glitch: glitch}
	h.sp = splices{m: &h.m, periodFrames: max(periodFrames, 1), bufferFrames: bufferFrames, loopFrames: len(loop.MLS), rate: rate}
	return h, nil
}

// sample adds a sample of the stream (its first thread's) to the map of
// the capture; the capture, which arrives every period, is analysed as
// it arrives (add).
func (h *hearing) sample(s *rundata.Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m.Add(s)
}

// add appends frames of the capture, interleaved in channels channels
// (the sine on the first, the MLS on the second), and analyses what it
// can.
func (h *hearing) add(frames []float32, channels int) {
	if channels < 2 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := 0; i+channels <= len(frames); i += channels {
		h.tone = append(h.tone, frames[i])
		h.mls = append(h.mls, frames[i+1])
	}
	h.frames = h.base + len(h.tone)
	h.analyse()
	if over := len(h.tone) - hearMaxHeldS*h.sp.rate; over > 0 {
		at, n := h.base+over, len(h.loop.MLS)
		h.tripAt = max(h.tripAt, (at+n-1)/n*n)
		h.judged = max(h.judged, at+hearPadMS*h.sp.rate/1000)
		h.forget(at)
	}
}

// analyse reads what the capture holds up to the periods the samples
// lined up: the MLS in every whole stretch, the glitches in every whole
// step; then forgets what no later reading needs.
func (h *hearing) analyse() {
	horizon := min(h.frames, int(h.m.Kept())*h.sp.periodFrames)
	n := len(h.loop.MLS)
	if stretches := (horizon-h.tripAt-(2*n-1))/n + 1; horizon-h.tripAt >= 2*n-1 && stretches > 0 {
		from := h.tripAt - h.base
		trips, _ := h.loop.RoundTrips(h.mls[from : from+stretches*n+n-1])
		seams := h.m.Seams()
		for _, t := range trips {
			t.At += h.tripAt
			if ft, ok := h.fol.step(h.sp, seams, t); ok {
				h.heardTrip(ft)
			}
		}
		h.tripAt += stretches * n
	}
	rate := h.sp.rate
	pad, margin := hearPadMS*rate/1000, hearMarginMS*rate/1000
	for step := hearStep * rate; h.judged+step+pad <= horizon; h.judged += step {
		h.glitches(h.judged, h.judged+step, pad, margin)
	}
	h.forget(min(h.tripAt, max(h.judged-pad, 0)))
}

// heardTrip takes a repetition followed: its second's median round trip
// is the newest one.
func (h *hearing) heardTrip(ft followedTrip) {
	s := int(h.sp.secondOf(ft.mid))
	switch {
	case s < h.second:
		return
	case s > h.second:
		h.second, h.delays = s, h.delays[:0]
	}
	h.delays = append(h.delays, ft.delay)
	if st := frameStats(slices.Clone(h.delays)); st != nil && h.roundTrip != nil {
		h.roundTrip(h.sp.ms(st.Median) / 1e3)
	}
}

// glitches counts the glitches that start in the stretch [from−pad,
// to+pad] of the capture, after from−margin (those before, the step
// before counted), judged in that stretch as one that goes on. A break
// seen in two stretches (one that goes on from one step into the next,
// one in the pad after a step) is counted once, at its start: a glitch
// that starts within a glitch already seen, or within sound.Glitches's
// merging distance of it, is that glitch.
func (h *hearing) glitches(from, to, pad, margin int) {
	lo := max(from-pad, h.base)
	hi := min(to+pad, h.base+len(h.tone))
	gs, err := sound.GlitchesGoingOn(h.tone[lo-h.base:hi-h.base], h.loop.ToneHz, h.sp.rate)
	if err != nil {
		return // no tone to judge here (a silence longer than the step, or not back yet)
	}
	merge := max(3, h.sp.rate/1000) // sound.Glitches's: breaks closer than this are one
	var snd rundata.Sound
	for _, g := range gs {
		start, end := lo+g.Start, lo+g.Start+g.Frames-1
		isNew := start >= from-margin && start > h.lastEnd+merge
		h.lastEnd = max(h.lastEnd, end)
		if isNew {
			snd.Glitches = append(snd.Glitches, rundata.Glitch{AtMS: float64(start) * 1e3 / float64(h.sp.rate)})
		}
	}
	if len(snd.Glitches) == 0 {
		return
	}
	h.m.LineUp(&snd, h.sp.periodFrames, h.sp.rate)
	for _, g := range snd.Glitches {
		if h.glitch != nil {
			h.glitch(glitchKind(g.With))
		}
	}
}

// forget drops the capture before frame at.
func (h *hearing) forget(at int) {
	if d := at - h.base; d > 0 {
		h.tone = slices.Delete(h.tone, 0, d)
		h.mls = slices.Delete(h.mls, 0, d)
		h.base = at
	}
}

// glitchKind is the metric's name of what a glitch came with
// (rundata.Glitch.With).
func glitchKind(with string) string {
	switch with {
	case rundata.GlitchXrun:
		return "xrun"
	case rundata.GlitchPointerJump:
		return "pointer_jump"
	}
	return "alone"
}

// A captureStream is the engine's stdout when its capture is handed over
// as it is read (audio.Config.StreamCapture): a WAV file of no known
// length, written a piece at a time, whose frames it decodes and hands to
// the hearing (once the stream's hello made it: what comes before waits).
// Its Write runs on the goroutine that copies the engine's stdout.
type captureStream struct {
	mu      sync.Mutex
	h       *hearing
	pending []byte // what came and is not decoded yet: the header, a piece of a frame
	f       *audio.WAVFormat
	samples []float32
	err     error // the stream could not be read: what came after is dropped
}

// hear starts handing the capture to h.
func (c *captureStream) hear(h *hearing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.h = h
	c.decode()
}

// Write takes a piece of the stream. It never fails, so that the engine
// never waits on it: a stream that cannot be read is noted (failed) and
// dropped.
func (c *captureStream) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.pending = append(c.pending, b...)
		c.decode()
	}
	return len(b), nil
}

// failed says why the stream could not be read, if it could not.
func (c *captureStream) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// decode hands the whole frames pending to the hearing.
func (c *captureStream) decode() {
	if c.h == nil || c.err != nil {
		return
	}
	if c.f == nil {
		if len(c.pending) < 44 { // audio.WAVHeader's
			return
		}
		f, _, err := audio.ReadWAVHeader(bytes.NewReader(c.pending))
		if err == nil {
			err = f.Check()
		}
		if err == nil && f.Channels < 2 {
			err = fmt.Errorf("%d channel", f.Channels)
		}
		if err != nil {
			c.err, c.pending = fmt.Errorf("the capture: %w", err), nil
			return
		}
		c.f, c.pending = &f, c.pending[:copy(c.pending, c.pending[44:])]
	}
	whole := len(c.pending) / c.f.Align * c.f.Align
	if whole == 0 {
		return
	}
	c.samples = c.f.Decode(c.samples[:0], c.pending[:whole])
	c.pending = c.pending[:copy(c.pending, c.pending[whole:])]
	c.h.add(c.samples, c.f.Channels)
}

// startHearing starts hearing the monitor's capture, of the stream
// granted, as it comes: its round trip and glitches to Config.OnRoundTrip
// and Config.OnGlitch.
func (r *phaseRun) startHearing(g audio.Granted) error {
	roundTrip, glitch := r.cfg.OnRoundTrip, r.cfg.OnGlitch
	if roundTrip == nil {
		roundTrip = func(float64) {}
	}
	if glitch == nil {
		glitch = func(string) {}
	}
	h, err := newHearing(g.Rate, g.PeriodFrames, g.PeriodFrames*g.Periods, roundTrip, glitch)
	if err != nil {
		return fmt.Errorf("the loopback: %w", err)
	}
	r.hearing = h
	r.stream.hear(h)
	return nil
}
