package cyclictest

import (
	"bytes"
	"math"
	"testing"

	"latencytest/internal/fuzzseed"
	"latencytest/rundata"
)

// The fuzz targets feed cyclictest's formats hostile bytes, starting from
// real files (testdata/: latencytest's and cyclictest's histogram files,
// cyclictest's terminal logs). A reader may refuse its input, never panic,
// loop forever or allocate beyond what the input holds; what it accepts
// must hold together.

// histPerByte is what reading cyclictest's histogram text may allocate
// per byte besides the histogram's pages (heldBytes): a line's fields and
// one count per column per line (measured: 12.7 a byte for 100000 rows).
const histPerByte = 24

// heldBytes is what a histogram's bins hold: 8 KB a page.
func heldBytes(h *rundata.Histogram) int { return h.Pages() * 8 << 10 }

func FuzzParseHistFile(f *testing.F) {
	fuzzseed.Add(f, "testdata/*.hist")
	f.Fuzz(func(t *testing.T, b []byte) {
		var hf *HistFile
		var err error
		fuzzseed.Bounded(t, len(b), histPerByte, func() int {
			if hf, err = ParseHistFile(b); err != nil {
				return 0
			}
			return heldBytes(hf.Hist)
		})
		if err != nil {
			return
		}
		h := hf.Hist
		if in := h.CountIn(math.MinInt64, math.MaxInt64); in+h.Overflow+h.Underflow != h.Count {
			t.Fatalf("bins %d + overflow %d + underflow %d != count %d", in, h.Overflow, h.Underflow, h.Count)
		}
		if h.RangeUS > rundata.MaxHistUS {
			t.Fatalf("range %d", h.RangeUS)
		}
		// Memory follows the content: a page of bins at most per line.
		if pages := h.Pages(); pages > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d pages of bins from %d lines", pages, bytes.Count(b, []byte("\n"))+1)
		}
		if h.Count > 0 {
			st := h.Stats()
			for _, p := range []float64{st.P50, st.P90, st.P99, st.P999, st.P9999} {
				if p < st.Min || p > st.Max {
					t.Fatalf("percentile %g outside [%g, %g]", p, st.Min, st.Max)
				}
			}
		}
		// What was accepted encodes and reads back to the same counts
		// (for ranges a real file has: a million rows take a second).
		if h.RangeUS > 10_000 {
			return
		}
		back, err := ParseHistFile(EncodeHistFile([]*rundata.Histogram{h}))
		if err != nil {
			t.Fatalf("re-reading an accepted histogram: %v", err)
		}
		if back.Hist.Count != h.Count || back.Hist.Overflow != h.Overflow || back.Hist.Underflow != h.Underflow {
			t.Fatalf("round trip: count %d/%d overflow %d/%d", back.Hist.Count, h.Count, back.Hist.Overflow, h.Overflow)
		}
	})
}
