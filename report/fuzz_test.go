package report

import (
	"bytes"
	"math"
	"testing"

	"latencytest/cyclictest"
	"latencytest/internal/fuzzseed"
	"latencytest/rundata"
)

// FuzzParseCyclictest feeds cyclictest's formats as compare reads them
// (format check, then --histfile, -H and --json, or the terminal log),
// starting from real files (testdata/cyclictest: rt-tests 2.x). A
// file may be refused, never panic or allocate beyond its content (a range
// of at most rundata.MaxHistUS bins a side); what is accepted must hold
// together and render as a table row.
// ctPerByte is what reading a cyclictest file may allocate per byte
// besides its histogram's pages (measured: 12.7 a byte for a histogram
// file of 100000 rows, 7.7 for --json of 100000 bins).
const ctPerByte = 24

func FuzzParseCyclictest(f *testing.F) {
	fuzzseed.Add(f, "testdata/cyclictest/*.json", "testdata/cyclictest/*.hist")
	f.Add([]byte(`{"cmdline": "cyclictest -h 9000000000000000000", "thread": {"0": {"histogram": {"3": 1}, "cycles": 2, "min": 3, "max": 9, "avg": 5}}}`))
	f.Add(bytes.Repeat([]byte("\n"), 256<<10)) // compare's format check costs nothing per line
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &compared{}
		var err error
		// The format check walks the lines where they are.
		fuzzseed.Bounded(t, len(b), 1, func() int { cyclictest.IsLog(b); return 0 })
		fuzzseed.Bounded(t, len(b), ctPerByte, func() int {
			if err = c.parseCyclictest(b); err != nil || c.ct == nil {
				return 0
			}
			return c.ct.Hist.Pages() * 8 << 10 // its bins, 8 KB a page
		})
		if err != nil || c.ct == nil {
			return
		}
		h := c.ct.Hist
		if h.RangeUS > rundata.MaxHistUS {
			t.Fatalf("range %d", h.RangeUS)
		}
		if in := h.CountIn(math.MinInt64, math.MaxInt64); in+h.Overflow+h.Underflow != h.Count {
			t.Fatalf("bins %d + overflow %d != count %d", in, h.Overflow, h.Count)
		}
		p := c.phases[0]
		for _, v := range []float64{p.Latency.P50, p.Latency.P99, p.Latency.P9999} {
			if h.Count > 0 && (v < p.Latency.Min || v > p.Latency.Max || math.IsNaN(v)) {
				t.Fatalf("percentile %g outside [%g, %g]", v, p.Latency.Min, p.Latency.Max)
			}
		}
		for _, w := range []float64{p.WithinUS100, p.WithinMS1} {
			if w < 0 || w > 100 {
				t.Fatalf("within share %g %%", w)
			}
		}
		row(p)
		statsRecord(p)
	})
}
