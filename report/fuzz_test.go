package report

import (
	"math"
	"testing"

	"latencytest/cyclictest"
	"latencytest/internal/fuzzseed"
	"latencytest/rundata"
)

// FuzzParseCyclictest feeds cyclictest's two formats, starting from real
// files (testdata/cyclictest: rt-tests 2.x --histfile, -H and --json). A
// file may be refused, never panic or allocate beyond its content (a range
// of at most rundata.MaxHistUS bins a side); what is accepted must hold
// together and render as a table row.
func FuzzParseCyclictest(f *testing.F) {
	fuzzseed.Add(f, "testdata/cyclictest/*.json", "testdata/cyclictest/*.hist")
	f.Add([]byte(`{"cmdline": "cyclictest -h 9000000000000000000", "thread": {"0": {"histogram": {"3": 1}, "cycles": 2, "min": 3, "max": 9, "avg": 5}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := cyclictest.Parse(b)
		if err != nil {
			return
		}
		h := c.Hist
		if h.RangeUS > rundata.MaxHistUS {
			t.Fatalf("range %d", h.RangeUS)
		}
		if in := h.CountIn(math.MinInt64, math.MaxInt64); in+h.Overflow+h.Underflow != h.Count {
			t.Fatalf("bins %d + overflow %d != count %d", in, h.Overflow, h.Count)
		}
		p := ctPhase("x", c)
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
