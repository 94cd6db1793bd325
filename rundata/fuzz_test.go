package rundata

import (
	"bytes"
	"io"
	"testing"

	"latencytest/internal/fuzzseed"
)

// The fuzz targets feed each reader of the results format hostile bytes,
// starting from real files (testdata/: a timer-driver run's run.json and
// samples files; cyclictest's formats are package cyclictest's). A reader
// may refuse its input, never panic, loop forever or allocate beyond what
// the input holds; what it accepts must hold together.

func FuzzParseRun(f *testing.F) {
	fuzzseed.Add(f, "testdata/run/run.json")
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
	fuzzseed.Add(f, "testdata/run/samples/*.bin")
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
