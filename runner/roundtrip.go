package runner

import (
	"math"

	"latencytest/audio/sound"
	"latencytest/rundata"
)

// splices is how a loopback phase's capture lines up with the loop played
// and with the phase: its periods, the playback buffer, the loop's length,
// and the restarts that spliced it (m).
type splices struct {
	m            *rundata.CaptureMap
	periodFrames int
	bufferFrames int
	loopFrames   int
	rate         int
}

// A followedTrip is a repetition of the MLS read across the phase: the
// capture frame of its middle, and the card delay with the restarts'
// offsets taken off.
type followedTrip struct {
	mid, delay int
}

// followRoundTrip follows the card delay through the whole phase from
// trips, the capture's repetitions of the MLS in order (of a capture of
// frames frames), into snd: the round trip's spread over the phase and
// its median in each second.
func (sp splices) followRoundTrip(snd *rundata.Sound, trips []sound.Trip, frames int) {
	fs := sp.follow(trips)
	snd.RoundTripsFollowed = len(fs)
	ds := make([]int, len(fs))
	for i, f := range fs {
		ds[i] = f.delay
	}
	st := frameStats(ds)
	if st == nil {
		return
	}
	snd.RoundTripFollowed = &rundata.MSStats{Min: sp.ms(st.Min), Median: sp.ms(st.Median), Max: sp.ms(st.Max)}
	snd.RoundTripPerSecond = sp.perSecond(fs, frames)
}

// ms is the round trip of a card delay of delay frames, in ms.
func (sp splices) ms(delay int) float64 { return tripMS(sp.bufferFrames, delay, sp.rate) }

// follow reads the card delay from every repetition in trips, taking off
// the offset each restart put between the sides. A restart drops what
// the playback had written and not played, and refills its buffer from
// where the loop was, while the capture, spliced, goes on where it was:
// after it the capture lags the loop by the buffer less, and by a period
// less again when the period of the xrun had been written before the stop
// was found (a capture's overrun, or an underrun found at the write rather
// than at the wakeup). The samples do not say which, so of the two the
// one that keeps the delay nearest the one read before the seam is taken:
// a change of the card's own delay under half a period is not told from
// it (the round trip is to within a period anyway), a larger one shows.
// A repetition across a seam mixes two offsets and is left out.
func (sp splices) follow(trips []sound.Trip) []followedTrip {
	seams := sp.m.Seams()
	var f follower
	var out []followedTrip
	for _, t := range trips {
		if ft, ok := f.step(sp, seams, t); ok {
			out = append(out, ft)
		}
	}
	return out
}

// A follower is follow's state between repetitions, so that a capture
// read as it arrives (a monitor's, hearing) follows the round trip with
// the code a whole phase's does: the seams passed, the restarts since the
// last repetition followed, the offset they put between the sides and the
// last delay followed.
type follower struct {
	next, restarts, offset int
	last                   *followedTrip
}

// step follows repetition t (the next in capture order), the capture's
// seams being seams (CaptureMap.Seams, as far as the samples go: up to
// t's end at least). ok is false for a repetition across a seam.
func (f *follower) step(sp splices, seams []rundata.Seam, t sound.Trip) (ft followedTrip, ok bool) {
	for ; f.next < len(seams) && sp.seamAt(seams[f.next]) <= t.At; f.next++ {
		f.restarts += seams[f.next].Xruns
	}
	if f.next < len(seams) && sp.seamAt(seams[f.next]) < t.At+sp.loopFrames {
		return followedTrip{}, false
	}
	d := sp.nearest(t.Delay+f.offset, f.restarts, f.last)
	f.restarts, f.offset = 0, d-t.Delay
	ft = followedTrip{mid: t.At + sp.loopFrames/2, delay: d}
	f.last = &ft
	return ft, true
}

// seamAt is the capture frame where seam s is.
func (sp splices) seamAt(s rundata.Seam) int { return int(s.Kept) * sp.periodFrames }

// nearest is the card delay a repetition whose lag, the offsets before
// taken off, reads lag, after restarts more restarts: each a buffer's
// offset and maybe a period's (follow), and any whole number of loops
// (the lag is read modulo the loop), the one nearest the last delay
// followed (before); without one, the buffers' alone, within half a loop of 0.
func (sp splices) nearest(lag, restarts int, before *followedTrip) int {
	lag += restarts * sp.bufferFrames
	if before == nil {
		return sp.unwrap(lag, 0)
	}
	ref := before.delay
	best := sp.unwrap(lag, ref)
	for j := 1; j <= restarts; j++ {
		if d := sp.unwrap(lag+j*sp.periodFrames, ref); abs(d-ref) < abs(best-ref) {
			best = d
		}
	}
	return best
}

// unwrap is lag give or take whole loops, within half a loop of ref.
func (sp splices) unwrap(lag, ref int) int {
	n := sp.loopFrames
	d := ((lag-ref)%n + n) % n
	if d > n/2 {
		d -= n
	}
	return ref + d
}

// abs is |x|.
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// perSecond is the median round trip (ms) of the repetitions in each
// second of the phase (by the period their middle was captured in, and
// the xrun periods before it, which kept none), NaN in a second with
// none, over the phase's seconds that the capture of frames frames spans.
func (sp splices) perSecond(fs []followedTrip, frames int) rundata.PerSecond {
	n := int(math.Ceil(sp.secondOf(frames)))
	per := make([][]int, n)
	for _, f := range fs {
		if s := int(sp.secondOf(f.mid)); s < n {
			per[s] = append(per[s], f.delay)
		}
	}
	out := make(rundata.PerSecond, n)
	for i, ds := range per {
		out[i] = math.NaN()
		if st := frameStats(ds); st != nil {
			out[i] = sp.ms(st.Median)
		}
	}
	return out
}

// secondOf is the time in the phase (s from its first period) of the
// capture's frame: its period's, the xrun periods before it counted.
func (sp splices) secondOf(frame int) float64 {
	kept := int64(frame / sp.periodFrames)
	within := frame % sp.periodFrames
	return float64(int(sp.m.Period(kept))*sp.periodFrames+within) / float64(sp.rate)
}
