//go:build jack

package jack

import (
	"strings"
	"testing"

	"latencytest/internal/bintest"
	"latencytest/internal/jacktest"
	"latencytest/rundata"
)

// bin is the command built with the jack tag, once, when a test first
// needs it (internal/bintest).
var bin *bintest.Binary

func TestMain(m *testing.M) { bintest.Main(m, &bin, "jack") }

// Downstream the jack driver is one driver more: run.json has the
// server's shape as granted (its 256-frame cycles though --period asked
// 64) and a period per cycle, the samples file every period, each woken
// at or after its cycle's start; a stall injected by run --test-stall
// comes back as an xrun of its length.
func TestRunThroughJack(t *testing.T) {
	jacktest.Start(t, 48000, 256)
	dir := bin.Results(t, "--driver", "jack", "--tests", "idle", "--period", "64", "--duration", "3s", "--test-stall", "200:50ms")
	run, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Driver != "jack" || run.Rate != 48000 || run.PeriodFrames != 256 || run.Periods != 2 {
		t.Fatalf("run.json: driver %q, %d Hz, %d×%d; want jack, the server's 48000 Hz and 256 frames, 2 periods", run.Driver, run.Rate, run.PeriodFrames, run.Periods)
	}
	if !strings.Contains(strings.Join(run.DriverNotes, "\n"), "--period 64: the JACK server runs 256-frame cycles") {
		t.Errorf("driver notes do not say the period was the server's: %q", run.DriverNotes)
	}
	ph := run.Phases[0]
	s := bintest.ReadSamples(t, dir, ph)
	if int64(len(s)) != ph.Periods {
		t.Fatalf("samples file has %d periods, run.json %d", len(s), ph.Periods)
	}
	// 3 s of 256-frame cycles are 562.5; the stall's 50 ms (9.4 cycles)
	// are missed, reported as an xrun. The periods cannot be more; with
	// the cycles missed, reported in xruns, they are all of them (an
	// xrun the server reported of a cycle the client did not miss, its
	// own lateness or the client running past the next cycle's start
	// under the 80 % DSP load on a busy machine, counts a cycle too).
	periodNS := 256e9 / 48000
	var missed int64
	var stall int64
	for _, p := range s {
		if p.Woke < p.Due {
			t.Fatalf("period %d woke before its cycle began", p.Index)
		}
		missed += int64(float64(p.Xrun)/periodNS + 0.5)
		if p.Index > 200 && p.Index <= 203 {
			stall = max(stall, p.Xrun)
		}
	}
	if n := ph.Periods + missed; n < 562*95/100 || ph.Periods > 563 {
		t.Errorf("%d periods and %d cycles missed in 3 s, want 562 ± 5 %%", ph.Periods, missed)
	}
	if stall < 45e6 || stall > 60e6 {
		t.Errorf("xrun after the 50 ms stall at period 200: %d ns, want about 50 ms", stall)
	}
	t.Logf("%d periods, %d xruns, latency µs: p50 %.0f p99 %.0f max %.0f; headroom min %.0f µs", ph.Periods, ph.Xruns, ph.Latency.P50, ph.Latency.P99, ph.Latency.Max, ph.HeadroomMinUS)
}
