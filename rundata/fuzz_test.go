package rundata

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The fuzz targets feed each reader of the results format hostile bytes,
// starting from real files (testdata/: a timer-driver run's run.json and
// samples files, latencytest's and cyclictest's histogram files). A reader
// may refuse its input, never panic, loop forever or allocate beyond what
// the input holds; what it accepts must hold together.

func addSeeds(f *testing.F, pattern string) {
	f.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seed files %s (%v)", pattern, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseRun(f *testing.F) {
	addSeeds(f, "testdata/run/run.json")
	f.Add([]byte(`{"schema": 1, "phases": [{"name": "x", "periods": -1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRun(b)
		if err != nil {
			return
		}
		if r.Schema != SchemaVersion || len(r.Phases) > MaxPhases || r.PeriodUS < 0 || r.PeriodUS > 1e7 {
			t.Fatalf("accepted schema %d, %d phases, period %g µs", r.Schema, len(r.Phases), r.PeriodUS)
		}
	})
}

func FuzzSampleReader(f *testing.F) {
	addSeeds(f, "testdata/run/samples/*.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		sr, err := NewSampleReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Each period costs at least one 8-byte record: a reader that
		// returned more periods than that would be making them up.
		var s Sample
		n := 0
		for {
			err := sr.Next(&s)
			if err != nil {
				if err != io.EOF && n > len(b)/recordSize {
					t.Fatalf("%d periods from %d bytes", n, len(b))
				}
				break
			}
			n++
			if n > len(b)/recordSize {
				t.Fatalf("%d periods from %d bytes", n, len(b))
			}
			if s.Xrun < 0 {
				t.Fatalf("negative xrun %d accepted", s.Xrun)
			}
			if s.PollNS < 0 {
				t.Fatalf("negative poll wait %d accepted", s.PollNS)
			}
		}
	})
}

func FuzzParseHistFile(f *testing.F) {
	addSeeds(f, "testdata/*.hist")
	f.Fuzz(func(t *testing.T, b []byte) {
		hf, err := ParseHistFile(b)
		if err != nil {
			return
		}
		h := hf.Hist
		if in := h.CountIn(math.MinInt64, math.MaxInt64); in+h.Overflow+h.Underflow != h.Count {
			t.Fatalf("bins %d + overflow %d + underflow %d != count %d", in, h.Overflow, h.Underflow, h.Count)
		}
		if h.RangeUS > MaxHistUS {
			t.Fatalf("range %d", h.RangeUS)
		}
		// Memory follows the content: a page of bins at most per line.
		pages := 0
		for _, pg := range h.pages {
			if pg != nil {
				pages++
			}
		}
		if lines := bytes.Count(b, []byte("\n")) + 1; pages > lines {
			t.Fatalf("%d pages of bins from %d lines", pages, lines)
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
		back, err := ParseHistFile(EncodeHistFile([]*Histogram{h}))
		if err != nil {
			t.Fatalf("re-reading an accepted histogram: %v", err)
		}
		if back.Hist.Count != h.Count || back.Hist.Overflow != h.Overflow || back.Hist.Underflow != h.Underflow {
			t.Fatalf("round trip: count %d/%d overflow %d/%d", back.Hist.Count, h.Count, back.Hist.Overflow, h.Overflow)
		}
	})
}
