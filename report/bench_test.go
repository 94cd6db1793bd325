package report

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"latencytest/report/synth"
)

// BenchmarkRender1h renders a synthetic one-hour run from disk: 2.7 M
// periods of 64 frames at 48 kHz over the seven classic phases, with xruns
// in the hackbench phase. The goal is under 2 s and an index.html under
// 2 MB (docs/benchmarks.md).
func BenchmarkRender1h(b *testing.B) {
	dir := b.TempDir()
	c := synth.Default()
	c.Phases = synth.Classic()
	c.PhaseLength = time.Hour / time.Duration(len(c.Phases))
	r, err := synth.Write(dir, c)
	if err != nil {
		b.Fatal(err)
	}
	var periods int64
	for _, p := range r.Phases {
		periods += p.Periods
	}
	if periods < 2_690_000 {
		b.Fatalf("fixture has %d periods, want an hour's 2.7 M", periods)
	}
	for b.Loop() {
		if err := Render(dir); err != nil {
			b.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, IndexFile))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size()), "html-bytes")
	b.ReportMetric(float64(periods), "periods")
}
