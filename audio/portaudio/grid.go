//go:build portaudio

package portaudio

import "math"

// grid is the ideal callback grid: the instants (CLOCK_MONOTONIC ns) at
// which each period became due, had nothing been late. A callback's
// lateness is its wakeup minus its grid instant, as JACK's delayed usecs
// are the poll wakeup minus the instant the period was expected.
//
// The grid is a line, due(c) = pivT + (c − pivC)·periodNS, through a pivot
// (pivT, pivC): the cycle index and wakeup of the earliest callback seen
// relative to the line, so that the line is the lower envelope of the
// wakeups (a callback can be late, never early). Its slope comes from the
// stream's frame clock when the host API has one (JACK: jack_frame_time,
// which PortAudio hands over as timeInfo.currentTime): a least-squares fit
// of wakeup instants against frame-clock readings taken at the same
// instant, so the slope is the real duration of a frame on
// CLOCK_MONOTONIC — drift corrected, and untouched by how late the
// callbacks are. Without a frame clock the slope stays nominal.
//
// The zero value is not usable; see newGrid.
type grid struct {
	frames    int64   // frames per period
	nominal   float64 // nominal ns per frame
	nsFrame   float64 // fitted ns per frame
	current   bool    // callbacks always serve the cycle in progress (JACK)
	started   bool    //
	c         int64   // cycle index of the last callback
	pivT      float64 // pivot instant, ns
	pivC      int64   // pivot cycle index
	recovered bool    // the last callback came after missed cycles

	// Least-squares sums over (frame clock, wakeup) pairs, both taken
	// relative to the first pair so that the sums stay well conditioned.
	x0, y0              float64
	n, sx, sy, sxx, sxy float64
}

// minFitPairs is how many frame-clock readings the slope fit needs before
// it replaces the nominal rate.
const minFitPairs = 16

// maxDrift bounds the fitted rate: a frame clock more than 1 % off nominal
// is not a clock drifting but a server at another rate, and is ignored.
const maxDrift = 0.01

func newGrid(rate, frames int, current bool) *grid {
	ns := 1e9 / float64(rate)
	return &grid{frames: int64(frames), nominal: ns, nsFrame: ns, current: current}
}

// periodNS is the fitted length of one period.
func (g *grid) periodNS() float64 { return g.nsFrame * float64(g.frames) }

// due returns the grid instant of cycle c.
func (g *grid) due(c int64) float64 { return g.pivT + float64(c-g.pivC)*g.periodNS() }

// next places a callback that woke at woke on the grid and returns the
// instant its period became due and how many whole periods the stream
// missed since the previous callback. clock is the stream's frame clock
// at the callback in frames, or NaN when the host API has none.
//
// Cycle assignment: when callbacks always serve the cycle in progress (JACK
// calls each client once per server cycle and never queues cycles for a
// late one), the callback belongs to the latest cycle that has begun, and
// any cycles in between were missed. Otherwise (ALSA, OSS: the buffer
// holds several periods and late callbacks catch up in a burst) each
// callback is the next period.
func (g *grid) next(woke int64, clock float64) (due int64, missed int64) {
	t := float64(woke)
	if !g.started {
		g.started = true
		g.pivT, g.pivC, g.c = t, 0, 0
		g.x0, g.y0 = clock, t
		return woke, 0
	}
	g.fit(clock, t)
	c := g.c + 1
	if g.current {
		if begun := g.pivC + int64(math.Floor((t-g.pivT)/g.periodNS())); begun > c {
			c = begun
		}
	}
	d := g.due(c)
	switch {
	case t >= d:
		// Late or on time: the usual case.
	case g.recovered && g.current:
		// After missed cycles JACK may run the client twice within one
		// cycle, the first call being the leftover activation. The
		// second belongs to the same cycle as the first.
		c = g.c
		d = math.Min(g.due(c), t)
	default:
		// Earlier than the line allows: the line was too late (its
		// phase came from a callback that was itself late, or the
		// stream restarted). Move the line down to this callback.
		g.pivT, g.pivC = t, c
		d = t
	}
	missed = max(c-g.c-1, 0)
	g.recovered = missed > 0
	g.c = c
	return int64(d), missed
}

// restart re-anchors the grid at a callback that woke at woke: after an
// xrun, a buffered host API restarts the stream and the periods run on a
// new grid, as the timer driver's do.
func (g *grid) restart(woke int64) {
	g.pivT, g.pivC = float64(woke), g.c
}

// fit adds one (frame clock, wakeup) pair to the slope fit.
func (g *grid) fit(clock, t float64) {
	if math.IsNaN(clock) || math.IsNaN(g.x0) {
		return
	}
	x, y := clock-g.x0, t-g.y0
	g.n++
	g.sx += x
	g.sy += y
	g.sxx += x * x
	g.sxy += x * y
	if g.n < minFitPairs {
		return
	}
	den := g.n*g.sxx - g.sx*g.sx
	if den <= 0 {
		return
	}
	// Keep the line continuous at the current cycle while the slope
	// changes: re-pivot at the current cycle's grid instant first.
	b := (g.n*g.sxy - g.sx*g.sy) / den
	if math.Abs(b/g.nominal-1) > maxDrift {
		return
	}
	g.pivT, g.pivC = g.due(g.c), g.c
	g.nsFrame = b
}
