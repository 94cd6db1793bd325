package report

import (
	"fmt"
	"html/template"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"latencytest/rundata"
)

// kindColors tell the causes of a spike apart in the timeline strips.
var kindColors = map[string]color.NRGBA{
	rundata.CauseIRQ:       {0xff, 0x5a, 0x5a, 0xff},
	rundata.CauseSoftIRQ:   {0xff, 0xb7, 0x4d, 0xff},
	rundata.CauseThread:    {0x4f, 0xc3, 0xf7, 0xff},
	rundata.CauseHeld:      {0xce, 0x82, 0xf0, 0xff},
	rundata.CauseThrottled: {0xff, 0x40, 0xb0, 0xff},
	rundata.CauseAudio:     {0x81, 0xe6, 0x84, 0xff},
	rundata.CauseIdle:      {0x70, 0x78, 0x80, 0xff},
	rundata.CauseStopped:   {0xb0, 0xa0, 0x60, 0xff},
	"":                     {0x3a, 0x3f, 0x44, 0xff}, // unexplained
}

// kindOrder is the legend's order.
var kindOrder = []struct{ kind, label string }{
	{rundata.CauseIRQ, "IRQ"}, {rundata.CauseSoftIRQ, "softirq"}, {rundata.CauseThread, "other thread"},
	{rundata.CauseHeld, "held the CPU"}, {rundata.CauseThrottled, "RT throttling"}, {rundata.CauseAudio, "audio thread"}, {rundata.CauseIdle, "idle"}, {rundata.CauseStopped, "machine stopped"}, {"", "unexplained"},
}

// causeLabel is how a cause reads in the culprit table.
func causeLabel(c rundata.Cause) string {
	switch c.Kind {
	case rundata.CauseHeld:
		return c.String() + " kept the CPU after the audio thread was woken"
	case rundata.CauseIdle:
		return "CPU idle (the wakeup itself came late)"
	case rundata.CauseThrottled:
		return "RT throttling: the real-time budget (sched_rt_runtime_us) was used up and the kernel stopped the audio thread"
	case rundata.CauseStopped:
		return "the machine was stopped: its CPU stayed idle with the audio thread runnable, the real-time budget not used up (the hypervisor did not run it; see steal time)"
	case "":
		return "unexplained (no trace event accounts for it)"
	}
	return c.String()
}

// culpritRow is one line of a phase's "what made it late" table.
type culpritRow struct {
	Kind, Label, Share, MS string
}

// culpritsListed bounds a phase's culprit table; the rest share a row.
const culpritsListed = 12

// culpritRows ranks a phase's culprits by their share of its spikes' time.
func culpritRows(ss []rundata.Spike) []culpritRow {
	cs, total := rundata.Culprits(ss)
	if len(cs) > culpritsListed {
		rest := rundata.Cause{Kind: "others", Name: fmt.Sprintf("%d other causes", len(cs)-culpritsListed+1)}
		for _, c := range cs[culpritsListed-1:] {
			rest.NS += c.NS
		}
		cs = append(cs[:culpritsListed-1:culpritsListed-1], rest)
	}
	var rows []culpritRow
	for _, c := range cs {
		rows = append(rows, culpritRow{Kind: c.Kind, Label: causeLabel(c),
			Share: fmt.Sprintf("%.0f %%", 100*float64(c.NS)/float64(max(total, 1))), MS: fmt.Sprintf("%.2f", float64(c.NS)/1e6)})
	}
	return rows
}

// Strips draws spikes as rows, the row's window from due (x = 0) to the
// wakeup in slices coloured by what held the CPU.
type Strips struct {
	Rows [][]rundata.Slice
}

// Plot implements plot.Plotter.
func (s *Strips) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, row := range s.Rows {
		y0, y1 := trY(float64(i)+0.15), trY(float64(i)+0.85)
		for _, sl := range row {
			x0, x1 := trX(float64(sl.StartNS)/1e6), trX(float64(sl.StartNS+sl.NS)/1e6)
			if x1-x0 < 0.5 {
				x1 = x0 + 0.5 // a slice too short to see still shows
			}
			c.FillPolygon(kindColors[sl.Kind], []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		}
	}
}

// DataRange implements plot.DataRanger.
func (s *Strips) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, row := range s.Rows {
		for _, sl := range row {
			xmax = max(xmax, float64(sl.StartNS+sl.NS)/1e6)
		}
	}
	return 0, max(xmax, 0.001), 0, float64(max(len(s.Rows), 1))
}

// swatch is a legend thumbnail of one colour.
type swatch color.NRGBA

// Thumbnail implements plot.Thumbnailer.
func (w swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(color.NRGBA(w), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// worstSpikes returns the n latest spikes, worst first.
func worstSpikes(ss []rundata.Spike, n int) []rundata.Spike {
	w := append([]rundata.Spike(nil), ss...)
	sort.SliceStable(w, func(i, j int) bool { return w[i].WindowNS() > w[j].WindowNS() })
	return w[:min(n, len(w))]
}

// spikeFigure is the timeline of a phase's worst spikes: what the audio
// thread's CPU did from each period's due instant until the thread ran.
func spikeFigure(ss []rundata.Spike, n int) (template.HTML, error) {
	w := worstSpikes(ss, n)
	if len(w) == 0 {
		return "", nil
	}
	p := newPlot("", "ms after the period was due", "")
	st := &Strips{}
	var ticks []plot.Tick
	// The worst at the top.
	for i := len(w) - 1; i >= 0; i-- {
		s := w[i]
		row := s.Strip
		if len(row) == 0 {
			row = []rundata.Slice{{Kind: "", NS: s.WindowNS()}}
		}
		ticks = append(ticks, plot.Tick{Value: float64(len(st.Rows)) + 0.5, Label: fmt.Sprintf("period %d, CPU %d", s.Period, s.CPU)})
		st.Rows = append(st.Rows, row)
	}
	p.Add(st)
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	for _, k := range kindOrder {
		p.Legend.Add(k.label, swatch(kindColors[k.kind]))
	}
	p.Legend.Top, p.Legend.Left = false, false
	return svgOf(p, figW, vg.Length(60+22*len(w)))
}

// spikesLost counts the spikes whose window lost trace events: their
// causes are what the kernel's buffer kept.
func spikesLost(ss []rundata.Spike) int {
	n := 0
	for _, sp := range ss {
		if sp.EventsLost {
			n++
		}
	}
	return n
}

// spikesHeard counts the spikes a glitch heard through the loopback fell
// in (rundata.LineUpTrace).
func spikesHeard(ss []rundata.Spike) int {
	n := 0
	for _, sp := range ss {
		if sp.Heard != nil {
			n++
		}
	}
	return n
}
