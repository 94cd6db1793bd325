//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

// gridFit is the ideal period grid: the card's clock, as its pointer
// updates since the stream (re)started give it. An update can come late
// (its interrupt held up, a coarse pointer step not yet taken) but never
// before the card reached the position it reports, so the grid is their
// lower envelope, as PortAudio's grid is its callbacks' (audio/portaudio):
//
//   - its slope, the card's real frame period on the system clock (so the
//     grid follows the card's drift instead of the nominal rate), is a
//     least-squares line through the (hardware position, timestamp) pairs
//     of on-time updates, in Welford's running form, which stays exact
//     over hours where naive sums of squares would cancel;
//   - its phase is the earliest of the last envelopeN updates fitted,
//     relative to that line. Once the slope is the card's (minSpanNS), an
//     update later than the updates' usual spread is an interrupt that
//     came late and leaves the line alone: lateness that lasts (a starved
//     interrupt thread) stays in the latency instead of moving the grid.
//
// A line through the middle of the updates instead sits their mean delay
// after the card's clock: a period whose update came sooner than the mean
// then reads as woken before it ended (negative latencies, hundreds of µs
// on USB audio's 1 ms steps under qemu), and every latency reads that
// mean too short.
type gridFit struct {
	nominal  float64 // ns per frame at the nominal rate
	n        float64
	x0       uint64 // first point, subtracted to keep the sums small
	y0       int64
	span     float64               // frames between the first and the last point
	mx, my   float64               // running means of x−x0, y−y0
	sxx, sxy float64               // running sums of squared and cross deviations
	recent   [envelopeN][2]float64 // the last points fitted, x−x0 and y−y0
	low      float64               // the earliest of them relative to the least-squares line, ns (≤ 0)
	resid    float64               // running mean distance of the points above the grid, ns
	minJump  float64               // a point this far (or 8 mean distances) off the line is a jump, ns
	// lateJump, where set, is how much later than the line a point must
	// be to be a jump: three quarters of the buffer, as lostBuffers
	// judges. A pointer that lost a buffer reads a buffer late; one later
	// by less is an interrupt that came late, and starting the grid
	// afresh from it dated the periods after it from a late instant
	// (AC97 under qemu, rw: an update 3.9 ms late at 2×256, and the next
	// period read as woken 3.7 ms before it ended).
	lateJump float64
}

// envelopeN is how many recent updates place the grid: enough to hold
// every phase of a coarse pointer's steps against the periods (USB's 48
// frames against 64: 3 periods), few enough that a clock the nominal
// slope does not yet follow (before minSpanNS) drifts little within it.
const envelopeN = 64

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
// off the line starts it afresh (a late one, lateJump: the stream's, so
// kept).
func (g *gridFit) reset(nominal, minJump float64) {
	*g = gridFit{nominal: nominal, minJump: minJump, lateJump: g.lateJump}
}

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
		jump := g.minJump
		if r > 0 {
			jump = max(jump, g.lateJump)
		}
		switch {
		case max(r, -r) > max(8*g.resid, jump):
			g.reset(g.nominal, g.minJump)
		case g.fitted() && r > max(4*g.resid, g.minJump/8):
			return // an interrupt that came late: not the card's clock
		default:
			g.resid += (max(r, 0) - g.resid) / min(g.n, 64)
		}
	}
	if g.n == 0 {
		g.x0, g.y0 = x, y
	}
	dx, dy := float64(x-g.x0), float64(y-g.y0)
	g.recent[int(g.n)%envelopeN] = [2]float64{dx, dy}
	g.span = max(g.span, dx)
	g.n++
	ddx := dx - g.mx
	g.mx += ddx / g.n
	g.my += (dy - g.my) / g.n
	g.sxx += ddx * (dx - g.mx)
	g.sxy += ddx * (dy - g.my)
	g.low = 0
	b := g.slope()
	for _, p := range g.recent[:min(int(g.n), envelopeN)] {
		g.low = min(g.low, p[1]-g.line(p[0], b))
	}
}

// fitted reports whether the slope is the points' own, not the nominal.
func (g *gridFit) fitted() bool { return g.n >= 2 && g.sxx != 0 && g.span*g.nominal >= minSpanNS }

// slope is the fitted ns per frame.
func (g *gridFit) slope() float64 {
	if !g.fitted() {
		return g.nominal
	}
	return min(max(g.sxy/g.sxx, g.nominal*(1-maxDrift)), g.nominal*(1+maxDrift))
}

// line is the least-squares line of slope b at dx frames from the first
// point, ns from it.
func (g *gridFit) line(dx, b float64) float64 { return g.my + b*(dx-g.mx) }

// at is the instant the card's clock reaches position x on the grid; 0
// before the first point.
func (g *gridFit) at(x uint64) int64 {
	if g.n == 0 {
		return 0
	}
	return g.y0 + int64(g.line(float64(int64(x-g.x0)), g.slope())+g.low)
}

// paceFrames is the span of frames a pace is given for (ns per
// paceFrames frames): integers fine enough for any rate.
const paceFrames = 1024

// clockOff is how far a card's pace may be from its nominal rate for the
// fitted grid to hold it (gridHolds); the pace is the median of ~15
// spans of updates, each end as coarse as the card's pointer steps (USB's
// 1 ms transfers), so it is not exact to the crystal's ppm.
const clockOff = 0.05

// paceSpan keeps the last updates seen at the wakeups (position and
// time), so that a pace is measured over paceSpanN of them rather than
// one: each end of a span is off by up to a pointer step and the update's
// delay (USB's 1 ms transfers, completed up to a transfer late, against
// 1.3 ms periods: a pace of one period was off by up to 75 %, and the
// median of 15 such by more than clockOff, which took the grid away now
// and then and dated those periods from their update, before the card's
// clock). Over paceSpanN periods the ends' error is that much smaller,
// and the median of the spans still ignores an odd late update, as each
// update ends one span and begins one.
type paceSpan struct {
	ring [paceSpanN][2]int64
	n    int
}

const paceSpanN = 16

func (p *paceSpan) reset() { p.n = 0 }

func (p *paceSpan) add(pos uint64, ts int64) {
	p.ring[p.n%paceSpanN] = [2]int64{int64(pos), ts}
	p.n++
}

// oldest is the earliest update kept: where the pace to the newest
// update starts. Not until paceSpanN are kept since the (re)start: the
// spans of the first few updates after each restart were as short as a
// period, and where restarts come every few dozen periods (ES1370 at
// 2×64 under qemu) enough of them in the median read the card a quarter
// fast (TestPaceAcrossRestarts).
func (p *paceSpan) oldest() (pos uint64, ts int64, ok bool) {
	if p.n < paceSpanN {
		return 0, 0, false
	}
	o := p.ring[p.n%paceSpanN]
	return uint64(o[0]), o[1], true
}

// pace is the card's ns per frame, as its pointer moved between the last
// wakeups (the median), or nominal until the first span is (paceSpan).
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

// granularity is the pointer's step: the greatest common divisor of the
// advances when it is minStep frames or more (USB's 48-frame transfers
// seen as advances of 240 and 288 frames against 256-frame periods; a
// DMA's blocks; a BATCH card's periods), else their median (a pointer
// read anywhere in its period, HD-Audio's, whose advances share no
// divisor: one step is then what the interrupt moves it). 0 until three
// are known.
func (st *stepStats) granularity() uint64 {
	n := min(st.n, len(st.ring))
	if n < 3 {
		return 0
	}
	g := st.ring[0]
	for _, v := range st.ring[1:n] {
		for v != 0 {
			g, v = v, g%v
		}
	}
	if g >= minStep {
		return g
	}
	return st.typical()
}

// minStep is the finest pointer step granularity takes for a card's: a
// divisor smaller than that is the advances' chance, not the pointer's.
const minStep = 16

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
