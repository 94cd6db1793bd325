package sound

import "math"

// ToneHz is about the sine a loopback run plays (NewLoop): alsabat's default tone,
// whose cycle (48.14 frames at 48 kHz) is no whole number of frames, so
// that no short splice is a whole number of cycles (see Glitches).
const ToneHz = 997

// A Loop is what a loopback run plays over and over, one channel a sine
// for the glitches and another the MLS for the round trip. Its length is
// the MLS's, and the sine's frequency is ToneHz rounded to a whole number
// of cycles in it, so that the loop's seam is no glitch.
type Loop struct {
	Rate   int
	ToneHz float64   // the sine's exact frequency
	Tone   []float32 // one loop of the sine, at half of full scale
	MLS    []float32 // the MLS, at half of full scale
}

// NewLoop returns the loop for rate: its tone at ToneHz, or at a
// hundredth of the rate when that is higher (the lowest Glitches judges),
// and the shortest MLS at least half a second long (order 18 at most: 2.7 s
// at 96 kHz), so that a round trip under half a second is read
// unambiguously (RoundTrips reads it modulo the MLS's length).
func NewLoop(rate int) (*Loop, error) {
	order := 10
	for order < 18 && 1<<order-1 < rate/2 {
		order++
	}
	mls, err := MLS(order, 0.5)
	if err != nil {
		return nil, err
	}
	hz := math.Max(ToneHz, float64(rate)/100)
	cycles := math.Ceil(hz * float64(len(mls)) / float64(rate))
	l := &Loop{Rate: rate, ToneHz: cycles * float64(rate) / float64(len(mls)), MLS: mls, Tone: make([]float32, len(mls))}
	for i := range l.Tone {
		l.Tone[i] = float32(0.5 * math.Sin(2*math.Pi*cycles*float64(i)/float64(len(mls))))
	}
	return l, nil
}

// A Trip is one repetition of the MLS found in a capture.
type Trip struct {
	At    int // the capture frame where it starts
	Delay int // frames the capture lags the playback, in (-len/2, len/2] of the loop
}

// RoundTrips reads each repetition of the loop's MLS in x, the capture of
// the channel that played it, whose frame 0 was captured as the loop's
// frame 0 was played: in each stretch of two loops, from every loop
// boundary on, where the MLS starts and by how much the capture lags the
// playback, modulo the loop's length (a lag over half the loop reads as
// the capture ahead). missing counts the stretches where the MLS was not
// found (a glitch in it, or not yet come back).
func (l *Loop) RoundTrips(x []float32) (trips []Trip, missing int) {
	n := len(l.MLS)
	// Each stretch is one frame short of two loops: its lags 0 to n-1
	// hold exactly one alignment.
	for at := 0; at+2*n-1 <= len(x); at += n {
		m, err := Find(x[at:at+2*n-1], l.MLS)
		if err != nil || m.Score < 0.9 {
			missing++
			continue
		}
		d := m.Offset % n
		if d > n/2 {
			d -= n
		}
		trips = append(trips, Trip{At: at + m.Offset, Delay: d})
	}
	return trips, missing
}
