//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

// gridFit is the ideal period grid: a least-squares line through the
// (hardware position, timestamp) pairs of on-time pointer updates since
// the stream (re)started. Its slope is the card's real frame period on
// the system clock, so the grid follows the card's clock drift instead of
// the nominal rate. It uses Welford's running form, which stays exact
// over hours where naive sums of squares would cancel.
type gridFit struct {
	nominal  float64 // ns per frame at the nominal rate
	n        float64
	x0       uint64 // first point, subtracted to keep the sums small
	y0       int64
	span     float64 // frames between the first and the last point
	mx, my   float64 // running means of x−x0, y−y0
	sxx, sxy float64 // running sums of squared and cross deviations
	resid    float64 // running mean |distance| of the points from the line, ns
	minJump  float64 // a point this far (or 8 mean distances) off the line is a jump, ns
}

// Until the points span minSpan of audio their slope says more about the
// jitter of the updates than about the clock, so the nominal one is used;
// beyond maxDrift the fit is clamped. The grid is where the headline
// latency runs from (rundata.Sample.Boundary), so it must follow every
// card gridHolds lets it hold, emulated ones a few percent off included: a
// clamp tighter than that would let the grid drift from the card by the
// difference, a millisecond more every few hundred periods. A crystal is
// off by a few hundred ppm; over half a second of audio, even a
// millisecond of jitter bends the slope by 0.2 %.
const (
	minSpanNS = 0.5e9
	maxDrift  = clockOff
)

// reset starts a fit with the nominal ns per frame; a point minJump ns
// off the line starts it afresh.
func (g *gridFit) reset(nominal, minJump float64) { *g = gridFit{nominal: nominal, minJump: minJump} }

// add records that the hardware pointer was at x frames at y ns.
//
// A card's pointer and the system clock move together, so the points lie
// on a line up to the granularity of the pointer. When one lands far off
// it, the pointer itself jumped: a driver that computes its position
// modulo the buffer (snd-dummy) cannot tell how many buffers a timer
// late by more than one buffer missed, and silently loses them. The grid
// then starts afresh from that point rather than averaging two lines.
func (g *gridFit) add(x uint64, y int64) {
	if g.n >= 8 {
		r := float64(y - g.at(x))
		if r < 0 {
			r = -r
		}
		if r > max(8*g.resid, g.minJump) {
			g.reset(g.nominal, g.minJump)
		} else {
			g.resid += (r - g.resid) / min(g.n, 64)
		}
	}
	if g.n == 0 {
		g.x0, g.y0 = x, y
	}
	dx, dy := float64(x-g.x0), float64(y-g.y0)
	g.span = max(g.span, dx)
	g.n++
	ddx := dx - g.mx
	g.mx += ddx / g.n
	g.my += (dy - g.my) / g.n
	g.sxx += ddx * (dx - g.mx)
	g.sxy += ddx * (dy - g.my)
}

// slope is the fitted ns per frame.
func (g *gridFit) slope() float64 {
	if g.n < 2 || g.sxx == 0 || g.span*g.nominal < minSpanNS {
		return g.nominal
	}
	return min(max(g.sxy/g.sxx, g.nominal*(1-maxDrift)), g.nominal*(1+maxDrift))
}

// at is the instant the fitted clock reaches position x; 0 before the
// first point.
func (g *gridFit) at(x uint64) int64 {
	if g.n == 0 {
		return 0
	}
	return g.y0 + int64(g.my+g.slope()*(float64(int64(x-g.x0))-g.mx))
}

// paceFrames is the span of frames a pace is given for (ns per
// paceFrames frames): integers fine enough for any rate.
const paceFrames = 1024

// clockOff is how far a card's pace may be from its nominal rate for the
// fitted grid to hold it (gridHolds); the pace is the median of ~15
// updates, each as coarse as the card's pointer steps (USB's 1 ms
// transfers), so it is not exact to the crystal's ppm.
const clockOff = 0.05

// pace is the card's ns per frame, as its pointer moved between the last
// wakeups (the median), or nominal until three are known.
func (s *side) pace(nominal float64) float64 {
	if s.paceNS != 0 {
		return s.paceNS
	}
	return nominal
}

// stepStats keeps the last pointer advances between wakeups and gives
// their median: robust against the odd late interrupt, and allocation
// free.
type stepStats struct {
	ring [15]uint64
	n    int
}

func (st *stepStats) add(v uint64) {
	st.ring[st.n%len(st.ring)] = v
	st.n++
}

// typical is the median advance, 0 until three are known.
func (st *stepStats) typical() uint64 {
	n := min(st.n, len(st.ring))
	if n < 3 {
		return 0
	}
	var sorted [len(stepStats{}.ring)]uint64
	copy(sorted[:], st.ring[:n])
	for i := 1; i < n; i++ {
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	return sorted[n/2]
}
