package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"latencytest/internal/decide"
	"latencytest/rundata"
)

// The plotters here draw in canvas units rather than per data point: a
// figure is a few hundred points wide, so each draws at most one stroke per
// column however many periods or bins it holds.

// Envelope draws a min/max band: at each canvas column, a vertical stroke
// from the lowest to the highest value of the buckets falling in it.
// Values above Clip are drawn to Clip, so one stall does not flatten the rest.
type Envelope struct {
	X, Lo, Hi []float64 // bucket start, minimum and maximum
	XMax      float64   // end of the last bucket
	Clip      float64
	Color     color.Color
}

// Plot implements plot.Plotter.
func (e *Envelope) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var path vg.Path
	col := math.Inf(-1)
	var lo, hi float64
	flush := func() {
		if math.IsInf(col, -1) {
			return
		}
		y0, y1 := trY(min(lo, e.Clip)), trY(min(hi, e.Clip))
		if y1-y0 < 0.6 {
			y1 = y0 + 0.6 // a flat stretch still shows as a line
		}
		x := vg.Length(col) + 0.5
		path.Move(vg.Point{X: x, Y: y0})
		path.Line(vg.Point{X: x, Y: y1})
	}
	for i := range e.X {
		x := math.Floor(float64(trX(e.X[i])))
		if x != col {
			flush()
			col, lo, hi = x, e.Lo[i], e.Hi[i]
			continue
		}
		lo, hi = min(lo, e.Lo[i]), max(hi, e.Hi[i])
	}
	flush()
	c.SetLineStyle(draw.LineStyle{Color: e.Color, Width: 1.05})
	c.Stroke(path)
}

// DataRange implements plot.DataRanger.
func (e *Envelope) DataRange() (xmin, xmax, ymin, ymax float64) {
	if len(e.X) == 0 {
		return 0, 1, 0, 1
	}
	ymax = 0
	for _, v := range e.Hi {
		ymax = max(ymax, v)
	}
	return e.X[0], e.XMax, 0, min(ymax, e.Clip)
}

// HLine is a horizontal reference line with its label at the right end,
// or the left one when LabelLeft is set (to keep two near lines apart).
type HLine struct {
	Y         float64
	Label     string
	LabelLeft bool
	Style     draw.LineStyle
	Text      draw.TextStyle
}

// Plot implements plot.Plotter.
func (h *HLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.Y)
	if !c.ContainsY(y) {
		return
	}
	c.StrokeLine2(h.Style, c.Min.X, y, c.Max.X, y)
	if h.Label != "" {
		t := h.Text
		t.XAlign, t.YAlign = draw.XRight, draw.YBottom
		pt := vg.Point{X: c.Max.X - 3, Y: y + 1.5}
		if h.LabelLeft {
			pt.X = c.Min.X + 4 + t.Width(h.Label)
		}
		labelBackground(c, p, t, pt, h.Label)
		c.FillText(t, pt, h.Label)
	}
}

// labelBackground clears the plot's background behind a right-aligned,
// bottom-aligned label, so data drawn before it does not garble it.
func labelBackground(c draw.Canvas, p *plot.Plot, t draw.TextStyle, pt vg.Point, label string) {
	if p.BackgroundColor == nil {
		return
	}
	w, h := t.Width(label), t.Height(label)
	var r vg.Path
	r.Move(vg.Point{X: pt.X - w - 2, Y: pt.Y - 0.5})
	r.Line(vg.Point{X: pt.X + 1, Y: pt.Y - 0.5})
	r.Line(vg.Point{X: pt.X + 1, Y: pt.Y + h})
	r.Line(vg.Point{X: pt.X - w - 2, Y: pt.Y + h})
	r.Close()
	c.SetColor(p.BackgroundColor)
	c.Fill(r)
}

// VLine is a vertical reference line with its label near the top, or at
// LabelY (a fraction of the height from the bottom) when set.
type VLine struct {
	X      float64
	Label  string
	LabelY float64
	// LabelLeft puts the label left of the line, for a line near the
	// right edge.
	LabelLeft bool
	Style     draw.LineStyle
	Text      draw.TextStyle
}

// Plot implements plot.Plotter.
func (v *VLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(v.X)
	if !c.ContainsX(x) {
		return
	}
	c.StrokeLine2(v.Style, x, c.Min.Y, x, c.Max.Y)
	if v.Label != "" {
		t := v.Text
		t.XAlign, t.YAlign = draw.XLeft, draw.YTop
		y := c.Max.Y - 2
		if v.LabelY > 0 {
			y = c.Min.Y + vg.Length(v.LabelY)*(c.Max.Y-c.Min.Y)
		}
		lx := x + 2
		if v.LabelLeft {
			t.XAlign = draw.XRight
			lx = x - 2
		}
		c.FillText(t, vg.Point{X: lx, Y: y}, v.Label)
	}
}

// PerSecondLine draws a figure given per second of the phase as steps,
// each second a level stroke across it, broken where a second has none
// (NaN): the loopback's round trip over the latency-over-time figure, so
// that one that grows under load shows beside the wakeups that made it.
type PerSecondLine struct {
	Y     rundata.PerSecond
	Style draw.LineStyle
}

// Plot implements plot.Plotter.
func (l *PerSecondLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var lines [][]vg.Point
	var cur []vg.Point
	for s, v := range l.Y {
		if math.IsNaN(v) {
			if len(cur) > 0 {
				lines, cur = append(lines, cur), nil
			}
			continue
		}
		y := trY(v)
		cur = append(cur, vg.Point{X: trX(float64(s)), Y: y}, vg.Point{X: trX(float64(s + 1)), Y: y})
	}
	if len(cur) > 0 {
		lines = append(lines, cur)
	}
	c.StrokeLines(l.Style, c.ClipLinesXY(lines...)...)
}

// Marks draws a small triangle hanging from the top of the plot at each X,
// at most one per canvas column: the xruns of a phase. They stay out of the
// data below, so a phase with hundreds of xruns is still readable.
type Marks struct {
	X     []float64
	Color color.Color
	// Below draws them on the bottom edge, pointing up, so that a second
	// kind of event (the breaks a loopback heard) stands apart from the
	// xruns on the top edge.
	Below bool
}

// Plot implements plot.Plotter.
func (m *Marks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	var tri vg.Path
	last := math.Inf(-1)
	for _, xv := range m.X {
		x := vg.Length(math.Floor(float64(trX(xv)))) + 0.5
		if float64(x) == last || !c.ContainsX(x) {
			continue
		}
		last = float64(x)
		edge, tip := c.Max.Y, c.Max.Y-7
		if m.Below {
			edge, tip = c.Min.Y, c.Min.Y+7
		}
		tri.Move(vg.Point{X: x - 3, Y: edge})
		tri.Line(vg.Point{X: x + 3, Y: edge})
		tri.Line(vg.Point{X: x, Y: tip})
		tri.Close()
	}
	c.SetColor(m.Color)
	c.Fill(tri)
}

// Hist draws a latency histogram of 1 µs bins on a log count axis: at each
// canvas column, the largest bin count falling in it, so a spike of one
// microsecond stays as tall as it is. Overflow (values past the last bin)
// is drawn as a bar of its own at OverflowX when non-zero.
type Hist struct {
	H         *rundata.Histogram
	OverflowX float64 // where to draw the overflow bar, in µs
	Color     color.Color
	// Outline draws the top edge only, for overlaying several histograms.
	Outline bool
}

// Plot implements plot.Plotter.
func (h *Hist) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	base := c.Min.Y
	top := func(n uint64) vg.Length {
		if n == 0 {
			return base
		}
		return max(base, min(c.Max.Y, trY(float64(n))))
	}
	// A step is a run of bins drawn as one: a wide bin on its own, or the
	// narrow bins sharing a column, at the height of the fullest.
	type step struct {
		x0, x1 vg.Length
		n      uint64
	}
	var steps []step
	first, last, _ := h.H.Span()
	for j := first; j <= last; j++ {
		n := h.H.Bin(j)
		lo, hi := float64(j), float64(j+1)
		if hi <= p.X.Min {
			continue
		}
		lo = max(lo, p.X.Min) // a log axis starts above 0
		x0, x1 := trX(lo), min(trX(hi), c.Max.X)
		if x0 >= c.Max.X {
			break
		}
		if k := len(steps) - 1; k >= 0 && steps[k].x1-steps[k].x0 < 1 {
			steps[k].x1 = x1
			steps[k].n = max(steps[k].n, n)
			continue
		}
		steps = append(steps, step{x0, x1, n})
	}
	var path vg.Path
	if h.Outline {
		for i, s := range steps {
			y := top(s.n)
			if i == 0 {
				path.Move(vg.Point{X: s.x0, Y: y})
			} else {
				path.Line(vg.Point{X: s.x0, Y: y})
			}
			path.Line(vg.Point{X: s.x1, Y: y})
		}
		c.SetLineStyle(draw.LineStyle{Color: h.Color, Width: 1.1})
		c.Stroke(path)
	} else {
		for _, s := range steps {
			if s.n == 0 {
				continue
			}
			y := top(s.n)
			x1 := max(s.x1, s.x0+0.8) // a lone bin stays visible
			path.Move(vg.Point{X: s.x0, Y: base})
			path.Line(vg.Point{X: x1, Y: base})
			path.Line(vg.Point{X: x1, Y: y})
			path.Line(vg.Point{X: s.x0, Y: y})
			path.Close()
		}
		c.SetColor(h.Color)
		c.Fill(path)
	}
	if h.H.Overflow > 0 {
		x := trX(h.OverflowX)
		var bar vg.Path
		y := top(h.H.Overflow)
		bar.Move(vg.Point{X: x - 2, Y: base})
		bar.Line(vg.Point{X: x + 2, Y: base})
		bar.Line(vg.Point{X: x + 2, Y: y})
		bar.Line(vg.Point{X: x - 2, Y: y})
		bar.Close()
		c.SetColor(h.Color)
		c.Fill(bar)
	}
}

// Thumbnail implements plot.Thumbnailer for legends.
func (h *Hist) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(draw.LineStyle{Color: h.Color, Width: 2.5}, c.Min.X, y, c.Max.X, y)
}

// RunMaxima draws a figure of each run of a repeated phase (its largest
// latency, its p99.9) as a dot in the phase's column, and their median as
// a short bar: the run-to-run spread people compare kernels by. With
// Intervals, a whisker beside a column spans where the runs put that
// column's figure: the first column's median times the 95 % interval of
// the ratio to it (internal/decide), so that the whisker clears the first
// column's median (a dashed line across) exactly when the runs decide a
// difference.
type RunMaxima struct {
	Columns [][]float64 // per column, each run's figure
	// Intervals are per column [lo, hi] in the figure's unit, or NaNs
	// for none; nil: no whiskers.
	Intervals [][2]float64
	Color     color.Color
}

// Plot implements plot.Plotter.
func (r *RunMaxima) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	dot := draw.GlyphStyle{Color: r.Color, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	bar := draw.LineStyle{Color: r.Color, Width: vg.Points(1.5)}
	whisker := draw.LineStyle{Color: r.Color, Width: vg.Points(1)}
	if len(r.Intervals) > 0 && len(r.Columns) > 0 && len(r.Columns[0]) > 0 {
		// The first column's median across the plot: what each whisker
		// clears or not.
		ref := draw.LineStyle{Color: r.Color, Width: vg.Points(0.5), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
		y := trY(decide.Median(r.Columns[0]))
		c.StrokeLine2(ref, trX(-0.5), y, trX(float64(len(r.Columns))-0.5), y)
	}
	for i, col := range r.Columns {
		x := trX(float64(i))
		for _, v := range col {
			c.DrawGlyph(dot, vg.Point{X: x, Y: trY(v)})
		}
		if len(col) > 0 {
			y := trY(decide.Median(col))
			c.StrokeLine2(bar, x-vg.Points(9), y, x+vg.Points(9), y)
		}
		if i < len(r.Intervals) && !math.IsNaN(r.Intervals[i][0]) {
			wx, lo, hi := x+vg.Points(14), trY(r.Intervals[i][0]), trY(r.Intervals[i][1])
			c.StrokeLine2(whisker, wx, lo, wx, hi)
			c.StrokeLine2(whisker, wx-vg.Points(3), lo, wx+vg.Points(3), lo)
			c.StrokeLine2(whisker, wx-vg.Points(3), hi, wx+vg.Points(3), hi)
		}
	}
}

// DataRange implements plot.DataRanger.
func (r *RunMaxima) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, col := range r.Columns {
		for _, v := range col {
			ymin, ymax = math.Min(ymin, v), math.Max(ymax, v)
		}
	}
	for _, iv := range r.Intervals {
		if !math.IsNaN(iv[0]) {
			ymin, ymax = math.Min(ymin, iv[0]), math.Max(ymax, iv[1])
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 0, 1
	}
	return -0.5, float64(len(r.Columns)) - 0.5, math.Min(0, ymin), ymax + 0.05*(ymax-math.Min(0, ymin)) // room for the top dot
}
