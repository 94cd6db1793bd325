package rundata

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"latencytest/internal/fuzzseed"
)

// The fuzz targets feed each reader of the results format hostile bytes,
// starting from real files (testdata/: a timer-driver run's run.json and
// samples files; cyclictest's formats are package cyclictest's). A reader
// may refuse its input, never panic, loop forever or allocate beyond what
// the input holds; what it accepts must hold together.

// runPerByte is what decoding run.json may allocate per byte: a phase's
// struct from a few bytes of JSON is the most (rundata.jsonShape).
const runPerByte = 128

func FuzzParseRun(f *testing.F) {
	fuzzseed.Add(f, "testdata/run/run.json")
	f.Add([]byte(`{"schema": 1, "phases": [{"name": "x", "periods": -1}]}`))
	// Values that cost hundreds of bytes each from three of JSON.
	for _, key := range []string{"phases", "checks"} {
		f.Add([]byte(`{"schema": 1, "` + key + `": [` + strings.Repeat("{},", 1<<15) + `{}]}`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r *Run
		var err error
		fuzzseed.Bounded(t, len(b), runPerByte, func() int { r, err = parseRun(b); return 0 })
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
		fuzzseed.Bounded(t, len(b), 8, func() int { readAllSamples(t, b); return 0 })
	})
}

// readAllSamples reads every period of a samples file held in b, checking
// what it reads.
func readAllSamples(t *testing.T, b []byte) {
	{
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
	}
}
