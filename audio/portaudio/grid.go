//go:build portaudio

package portaudio

import "math"

// grid places each callback on the ideal callback grid: the instant
// (CLOCK_MONOTONIC ns) at which its period became due, had nothing been
// late, as JACK's delayed usecs are a wakeup minus the instant the period
// was expected.
//
// The stream's frame counter numbers the periods: one per callback, plus
// the periods the stream missed. The grid maps it to time with a line,
// due(c) = pivT + (c − pivC)·period, fitted to the wakeups:
//
//   - Its phase is their lower envelope: the line goes through a pivot, the
//     earliest callback seen relative to it, since a callback can be late
//     but never early. It never moves up, so lateness that lasts (a whole
//     stress phase) stays visible.
//   - Its slope, the real length of a period on CLOCK_MONOTONIC (drift
//     corrected), is a least-squares line through the earliest callback
//     of every block of blockPeriods callbacks, forgetting with a time
//     constant of fitTau. Block minima sit close to the envelope, so
//     lateness hardly tilts the fit; a long time constant keeps a lasting
//     change of lateness from passing for drift. When the slope changes
//     the line turns about the pivot, a real callback, so the line never
//     runs below the envelope: a callback found early moves the pivot.
//
// What lateness against this line is: jitter. The line is fitted to the
// callbacks themselves, since PortAudio shows no hardware instant, so a
// delay every callback shares (buffering, a thread always late by the same
// amount) moves the line with it and does not show; what shows is how much
// later a callback woke than the earliest ones.
//
// Two kinds of host API number the periods differently. JACK (current)
// calls each client once per server cycle and keeps no backlog for a late
// one, so a callback serves the latest cycle that has begun and the cycles
// in between were missed (its lateness is therefore less than one period;
// more is missed cycles, which the driver counts as xruns); after missed cycles JACK may run the client
// twice within one cycle (the leftover activation, then the current one),
// and the second call belongs to the same cycle. A buffered host API
// (ALSA, OSS) holds several periods, so each callback is the next period,
// and the callbacks that prime the buffer at the start come early and
// move the line down until the stream settles; after an xrun it restarts
// the stream, and restart re-anchors the line.
type grid struct {
	frames  int     // frames per period
	nominal float64 // nominal period, ns
	period  float64 // fitted period, ns
	current bool    // callbacks serve the cycle in progress (JACK)
	lambda  float64 // forgetting factor per block

	n         int64   // callbacks seen
	c         int64   // period index of the last callback
	pivT      float64 // the line goes through (pivC, pivT)
	pivC      int64
	recovered bool  // the last callback came after missed periods
	restarts  int64 // times restart re-anchored the line

	// The current block's earliest callback relative to the line.
	settle       int // callbacks to leave out of the fit after a (re)start: the buffer primes
	inBlock      int
	minRes       float64
	minC         int64
	minT         float64
	c0, t0       float64 // origin of the fit, for well-conditioned sums
	w, mx, my    float64 // weighted least squares of minT on minC
	sxx, sxy     float64
	blocksFitted int
}

const (
	blockPeriods = 16    // callbacks per block of the slope fit
	fitTau       = 60.0  // s: time constant of the slope fit
	maxDrift     = 0.005 // the fitted period stays within 0.5 % of nominal: clocks drift by ppm, not by per cent
)

func newGrid(rate, frames int, current bool) *grid {
	p := float64(frames) * 1e9 / float64(rate)
	return &grid{
		frames:  frames,
		nominal: p,
		period:  p,
		current: current,
		lambda:  math.Exp(-blockPeriods * p / 1e9 / fitTau),
	}
}

// nsPerFrame is the fitted length of one frame.
func (g *grid) nsPerFrame() float64 { return g.period / float64(g.frames) }

func (g *grid) due(c int64) float64 { return g.pivT + float64(c-g.pivC)*g.period }

// next places a callback that woke at woke and returns the instant its
// period became due and how many whole periods the stream missed since the
// previous callback.
func (g *grid) next(woke int64) (due int64, missed int64) {
	t := float64(woke)
	g.n++
	if g.n == 1 {
		g.pivT, g.pivC, g.c = t, 0, 0
		g.c0, g.t0 = 0, t
		return woke, 0
	}
	c := g.c + 1
	if g.current {
		if begun := g.pivC + int64(math.Floor((t-g.pivT)/g.period)); begun > c {
			c = begun
		}
	}
	d := g.due(c)
	switch {
	case t >= d:
	case g.current && g.recovered:
		c = g.c
		d = math.Min(g.due(c), t)
	default:
		g.pivT, g.pivC = t, c
		d = t
	}
	missed = max(c-g.c-1, 0)
	g.recovered = missed > 0
	g.c = c
	g.observe(c, t, t-d)
	return int64(d), missed
}

// restart re-anchors the line at a callback that woke at woke, after a
// buffered host API restarted the stream: its periods run on a new grid,
// as the timer driver's do. The fit starts again; the slope is kept.
func (g *grid) restart(woke int64) {
	g.restarts++
	g.pivT, g.pivC = float64(woke), g.c
	g.w, g.mx, g.my, g.sxx, g.sxy, g.blocksFitted = 0, 0, 0, 0, 0, 0
	g.c0, g.t0 = float64(g.c), float64(woke)
	g.inBlock, g.settle = 0, 0
}

// observe keeps the block's earliest callback and, at the end of a block,
// adds it to the slope fit.
func (g *grid) observe(c int64, t, res float64) {
	if g.settle < blockPeriods {
		g.settle++
		return
	}
	if g.inBlock == 0 || res < g.minRes {
		g.minRes, g.minC, g.minT = res, c, t
	}
	g.inBlock++
	if g.inBlock < blockPeriods {
		return
	}
	g.inBlock = 0
	x, y := float64(g.minC)-g.c0, g.minT-g.t0
	w := g.lambda*g.w + 1
	dx, dy := x-g.mx, y-g.my
	k := g.lambda * g.w / w
	g.sxx = g.lambda*g.sxx + k*dx*dx
	g.sxy = g.lambda*g.sxy + k*dx*dy
	g.mx += dx / w
	g.my += dy / w
	g.w = w
	g.blocksFitted++
	if g.blocksFitted < 2 || g.sxx <= 0 {
		return
	}
	b := g.sxy / g.sxx
	g.period = min(max(b, g.nominal*(1-maxDrift)), g.nominal*(1+maxDrift))
}
