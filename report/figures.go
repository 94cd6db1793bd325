package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"latencytest/rundata"
)

// The classic latencytest colours, on dark: latency white, buffer red,
// period yellow, CPU loop green.
var (
	colBG      = color.NRGBA{0x12, 0x15, 0x1a, 0xff}
	colFG      = color.NRGBA{0xd0, 0xd4, 0xda, 0xff}
	colGrid    = color.NRGBA{0x2c, 0x32, 0x3a, 0xff}
	colLatency = color.NRGBA{0xf4, 0xf4, 0xf4, 0xff}
	colBuffer  = color.NRGBA{0xff, 0x45, 0x45, 0xff}
	colPeriod  = color.NRGBA{0xff, 0xd7, 0x00, 0xff}
	colCPU     = color.NRGBA{0x3c, 0xe0, 0x5a, 0xff}
	colXrun    = color.NRGBA{0xff, 0x6a, 0x2a, 0xff}
	colGlitch  = color.NRGBA{0xc0, 0x6c, 0xff, 0xff} // a break heard in the loopback's sine
	colNominal = color.NRGBA{0x6e, 0xc6, 0xff, 0xff}
	colTrip    = color.NRGBA{0x4d, 0xd0, 0xc0, 0xff} // the loopback's round trip per second
)

// palette tells overlaid series apart; the first is the classic white.
var palette = []color.NRGBA{
	{0xf4, 0xf4, 0xf4, 0xff}, {0x4f, 0xc3, 0xf7, 0xff}, {0xff, 0xb7, 0x4d, 0xff}, {0x81, 0xe6, 0x84, 0xff},
	{0xce, 0x82, 0xf0, 0xff}, {0xff, 0x73, 0x73, 0xff}, {0xff, 0xf1, 0x76, 0xff}, {0x4d, 0xd0, 0xc0, 0xff},
	{0xf0, 0x62, 0x92, 0xff}, {0xa0, 0xb4, 0xc0, 0xff},
}

func paletteAt(i int) color.NRGBA { return palette[i%len(palette)] }

const (
	figW      = 760
	figHTime  = 230
	figHCPU   = 170
	figHHist  = 250
	figHHistO = 300
)

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot in the report's dark style.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = colBG
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.Title.TextStyle.Color = colFG
	p.Title.Padding = 4
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Color = colFG
		a.Tick.Color = colFG
		a.Tick.Label.Color = colFG
		a.Tick.Label.Font = font.From(sans, 9)
		a.Label.TextStyle.Color = colFG
		a.Label.TextStyle.Font = font.From(sans, 9.5)
		a.Padding = 2
	}
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks, plainTicks
	p.Legend.TextStyle.Color = colFG
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = 14
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: colGrid, Width: 0.5}
	g.Horizontal = draw.LineStyle{Color: colGrid, Width: 0.5}
	p.Add(g)
	return p
}

func labelStyle(c color.Color) draw.TextStyle {
	return draw.TextStyle{Color: c, Font: font.From(sans, 8.5), Handler: plot.DefaultTextHandler}
}

func refH(y float64, label string, c color.Color, dashed bool) *HLine {
	st := draw.LineStyle{Color: c, Width: 1}
	if dashed {
		st.Dashes = []vg.Length{4, 3}
	}
	return &HLine{Y: y, Label: label, Style: st, Text: labelStyle(c)}
}

func refV(x float64, label string, c color.Color) *VLine {
	return &VLine{X: x, Label: label, Style: draw.LineStyle{Color: c, Width: 1, Dashes: []vg.Length{4, 3}}, Text: labelStyle(c)}
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("25", not "25.00").
var plainTicks = plot.TickerFunc(func(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
})

// svgOf draws p as an SVG fragment to be inlined in the page. The SVG is
// generated here and its text is escaped by vgsvg, so it is trusted HTML.
func svgOf(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("draw figure: %w", err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i > 0 {
		out = out[i:] // drop the XML declaration, not allowed inside HTML
	}
	return template.HTML(out), nil
}

// timeFigure is the classic graph: latency over time as a min/max envelope,
// the period and the buffer as reference lines, a mark at each xrun. It
// returns a caption when the latency axis had to be clipped.
func timeFigure(pd *phaseData, periodMS, bufferMS float64) (template.HTML, string, error) {
	env := pd.env
	xs, lo, hi, marks, end := series(env, func(b *bucket) (float64, float64) { return float64(b.latMin), float64(b.latMax) })
	maxHi, minLo := 0.0, 0.0
	for i, v := range hi {
		maxHi = max(maxHi, v)
		minLo = min(minLo, lo[i]) // early wakeups (against a fitted grid) go below 0
	}
	top := max(1.25*bufferMS, 1.25*periodMS, 0.05)
	clip := math.Inf(1)
	caption := ""
	if maxHi > top {
		if maxHi > 4*bufferMS && bufferMS > 0 {
			clip = 4 * bufferMS
			top = clip * 1.02
			caption = fmt.Sprintf("Axis clipped at %s ms; the largest latency was %s ms.", fmtNum(clip), fmtNum(maxHi))
		} else {
			top = maxHi * 1.05
		}
	}
	trip := roundTripPerSecond(pd)
	for _, v := range trip {
		if !math.IsNaN(v) {
			top = max(top, v*1.05)
		}
	}
	p := newPlot("wakeup latency over time", "time (s)", "latency (ms)")
	p.Y.Min, p.Y.Max = max(minLo*1.05, -top), top
	p.X.Min, p.X.Max = 0, max(end, 1e-3)
	p.Add(&Envelope{X: xs, Lo: lo, Hi: hi, XMax: end, Clip: clip, Color: colLatency})
	// The reference lines go over the data, as in the classic graphs: a
	// spike through the buffer line is the thing to see.
	p.Add(refH(periodMS, fmt.Sprintf("period %s ms", fmtNum(periodMS)), colPeriod, false))
	p.Add(refH(bufferMS, fmt.Sprintf("buffer %s ms", fmtNum(bufferMS)), colBuffer, false))
	if len(trip) > 0 {
		p.Add(&PerSecondLine{Y: trip, Style: draw.LineStyle{Color: colTrip, Width: vg.Points(1.5)}})
	}
	if len(marks) > 0 {
		// The caption names the marks (and says when they are simulated):
		// a legend would sit on top of them.
		p.Add(&Marks{X: marks, Color: colXrun})
	}
	if len(pd.heardAt) > 0 {
		p.Add(&Marks{X: pd.heardAt, Color: colGlitch, Below: true})
	}
	s, err := svgOf(p, figW, figHTime)
	return s, caption, err
}

// roundTripPerSecond is a loopback phase's round trip per second (ms),
// nil for any other.
func roundTripPerSecond(pd *phaseData) rundata.PerSecond {
	if pd.Sound == nil {
		return nil
	}
	return pd.Sound.RoundTripPerSecond
}

// cpuFigure draws the CPU loop's real duration over time against its
// nominal duration and the period it must fit in.
func cpuFigure(pd *phaseData, periodMS float64) (template.HTML, error) {
	xs, lo, hi, _, end := series(pd.env, func(b *bucket) (float64, float64) { return float64(b.dspMin), float64(b.dspMax) })
	nominal := pd.CPULoop.NominalUS / 1000
	maxHi := 0.0
	for _, v := range hi {
		maxHi = max(maxHi, v)
	}
	top := max(1.1*periodMS, maxHi*1.05, 0.05)
	clip := math.Inf(1)
	if maxHi > 4*periodMS && periodMS > 0 {
		clip = 4 * periodMS
		top = clip * 1.02
	}
	p := newPlot("CPU loop duration over time", "time (s)", "duration (ms)")
	p.Y.Min, p.Y.Max = 0, top
	p.X.Min, p.X.Max = 0, max(end, 1e-3)
	p.Add(&Envelope{X: xs, Lo: lo, Hi: hi, XMax: end, Clip: clip, Color: colCPU})
	if nominal > 0 {
		h := refH(nominal, fmt.Sprintf("nominal %s ms", fmtNum(nominal)), colNominal, true)
		h.LabelLeft = true // the period's label is on the right
		p.Add(h)
	}
	p.Add(refH(periodMS, fmt.Sprintf("period %s ms", fmtNum(periodMS)), colPeriod, false))
	return svgOf(p, figW, figHCPU)
}

// series flattens an envelope for the plotters: bucket times, lows, highs,
// the times of buckets holding an xrun, and the end of the last bucket.
func series(e *envelope, f func(*bucket) (float64, float64)) (xs, lo, hi, marks []float64, end float64) {
	n := len(e.buckets)
	xs, lo, hi = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range e.buckets {
		b := &e.buckets[i]
		xs[i] = b.t
		lo[i], hi[i] = f(b)
		if b.xruns > 0 {
			marks = append(marks, b.t)
		}
	}
	if n > 0 {
		// The last bucket ends one bucket's span after it starts, pro rata.
		last := e.buckets[n-1]
		span := 0.0
		if n > 1 {
			span = (last.t - e.buckets[0].t) / float64(n-1) * float64(last.periods) / float64(e.per)
		}
		end = last.t + span
	}
	return
}

// histSeries is one histogram of an overlay.
type histSeries struct {
	label string
	h     *rundata.Histogram
	color color.NRGBA // zero: the palette colour of its position
}

// histFigure draws one histogram filled, or several as outlines with a
// legend, on a log count axis with the period and buffer marked when they
// fall in range. Overflowed values get a bar of their own past the last bin.
func histFigure(title string, ss []histSeries, periodUS, bufferUS float64, single color.NRGBA) (template.HTML, error) {
	e := extentOf(ss)
	p, ofX := histPlot(title, e)
	outline := len(ss) > 1
	for i, s := range ss {
		c := single
		if outline || c.A == 0 {
			c = paletteAt(i)
		}
		if s.color.A != 0 {
			c = s.color
		}
		h := &Hist{H: s.h, OverflowX: ofX * (1 + 0.006*float64(i)), Color: c, Outline: outline}
		p.Add(h)
		if outline {
			p.Legend.Add(s.label, h)
		}
	}
	if periodUS > 0 {
		p.Add(refV(periodUS, "period", colPeriod))
	}
	if bufferUS > 0 {
		p.Add(refV(bufferUS, "buffer", colBuffer))
	}
	if e.overflow {
		v := refV(e.binsEnd, "overflow "+strings.Join(e.ofFrom, ", ")+" µs", colFG)
		v.LabelY = 0.6 // below the legend
		v.LabelLeft = true
		p.Add(v)
	}
	h := vg.Length(figHHist)
	if outline {
		h = figHHistO // room for the legend
	}
	return svgOf(p, figW, h)
}

// histExtent is what the axes of a histogram figure must hold.
type histExtent struct {
	xmin, xmax float64  // µs: the lowest value (0 or below), one past the highest bin (10 at least)
	cmax       uint64   // the highest count, of a bin or of an overflow
	negatives  uint64   // values below 0 µs, underflow included
	overflow   bool     // some histogram has values past its range
	binsEnd    float64  // µs: the end of the widest overflowing histogram's bins
	ofFrom     []string // where each overflowing histogram ends, for the label
}

// extentOf measures the histograms of a figure, once, before any axis is
// laid out.
func extentOf(ss []histSeries) histExtent {
	e := histExtent{xmax: 10, cmax: 1}
	for _, s := range ss {
		last := -1.0
		s.h.Each(func(us int64, c uint64) {
			e.cmax = max(e.cmax, c)
			last = float64(us)
			if us < 0 {
				e.xmin = min(e.xmin, float64(us))
				e.negatives += c
			}
		})
		e.negatives += s.h.Underflow
		e.xmax = max(e.xmax, float64(last+1))
		e.cmax = max(e.cmax, s.h.Overflow)
		if s.h.Overflow > 0 {
			e.overflow = true
			e.binsEnd = max(e.binsEnd, float64(s.h.RangeUS))
			if f := "≥ " + fmtNum(float64(s.h.RangeUS)); !slices.Contains(e.ofFrom, f) {
				e.ofFrom = append(e.ofFrom, f)
			}
		}
	}
	return e
}

// histPlot lays out the axes for histograms of extent e: counts on a log
// axis, latency on a linear one or, past a millisecond, a log one, with
// room on the right for the overflow bars, drawn at ofX.
func histPlot(title string, e histExtent) (p *plot.Plot, ofX float64) {
	// Past a millisecond a linear axis squeezes the body of the
	// distribution, where most periods are, into a few columns.
	logX := e.xmax > 1000
	xmax := e.xmax
	if e.overflow {
		xmax = max(xmax, e.binsEnd)
	}
	xlabel := "latency (µs, 1 µs bins)"
	if logX {
		xmax *= 1.15
		ofX = xmax * 1.25
		if e.overflow {
			xmax *= 1.5
		}
		xlabel = "latency (µs, log scale, 1 µs bins)"
	} else {
		xmax *= 1.05
		ofX = xmax * 1.04
		if e.overflow {
			xmax *= 1.08
		}
	}
	if logX && e.negatives > 0 {
		// A log axis has no room below 0: say what it leaves out.
		title += fmt.Sprintf(" (%d values below 0 µs not drawn)", e.negatives)
	}
	p = newPlot(title, xlabel, "periods per bin")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0.7, math.Pow(10, math.Ceil(math.Log10(float64(e.cmax))+0.15))
	p.X.Min, p.X.Max = e.xmin*1.05, xmax
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min = 1
	}
	return p, ofX
}

// fmtNum prints a figure with the precision its size deserves.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "—"
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
