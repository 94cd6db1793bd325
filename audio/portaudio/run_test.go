//go:build portaudio

package portaudio

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/internal/bintest"
	"latencytest/rundata"
)

// runLatencytest runs `latencytest run` against the test's JACK server and
// returns the results directory.
func runLatencytest(t *testing.T, args ...string) string {
	t.Helper()
	return bin.Results(t, append([]string{"--driver", "portaudio", "--device", "jack", "--period", "64", "--tests", "idle"}, args...)...)
}

// bin is the command built with the portaudio tag, once, when a test
// first needs it (internal/bintest).
var bin *bintest.Binary

func TestMain(m *testing.M) { bintest.Main(m, &bin, "portaudio") }

// The acceptance run: five seconds of 64-frame periods from a JACK
// server at 48 kHz are 3750 periods, each with its latency recorded.
func TestRunThroughJack(t *testing.T) {
	startJack(t, 48000, 64)
	dir := runLatencytest(t, "--duration", "5s")
	run, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Phases) != 1 {
		t.Fatalf("%d phases, want 1", len(run.Phases))
	}
	ph := run.Phases[0]
	s := bintest.ReadSamples(t, dir, ph)
	if int64(len(s)) != ph.Periods {
		t.Fatalf("samples file has %d periods, run.json %d", len(s), ph.Periods)
	}
	checkOncePerCycle(t, s)
	if ph.Periods > 3750*102/100 {
		t.Fatalf("phase %s: %d periods in 5 s, want at most 3750 + 2 %%", ph.Name, ph.Periods)
	}
	// On a busy machine the client misses server cycles (with 80 % DSP
	// load only a fifth of each period is left for lateness), and those
	// are xruns, not periods: every one must be reported. The dummy
	// server, starved, also restarts its own schedule after a late
	// cycle without making the time up (docs/notes/gate.md), so the
	// count is judged against the time the callbacks spanned, with the
	// driver's restarts (FlagRestart), as the in-process tests judge
	// the driver's frame counter.
	counted, restarts := countedInSamples(s)
	checkCountedInTime(t, counted, s[len(s)-1].Woke-s[0].Woke, restarts)
	var late int
	for _, p := range s {
		if p.Woke < p.Due {
			t.Fatalf("period %d woke before it was due", p.Index)
		}
		if p.Woke > p.Due {
			late++
		}
	}
	if late == 0 || ph.Latency.Max <= 0 {
		t.Fatalf("no latency recorded: %+v", ph.Latency)
	}
	// Headroom: JACK's deadline for a callback is the next cycle, so the
	// least headroom is a period less the latest wakeup that was no
	// xrun (to within a frame, 21 µs), and never 0 on an idle phase
	// whose callbacks all woke within the period.
	periodUS := 64 * 1e6 / 48000.0
	var maxLate int64
	for _, p := range s {
		if p.Xrun == 0 {
			maxLate = max(maxLate, p.Latency())
		}
	}
	if want := periodUS - float64(maxLate)/1e3; ph.HeadroomMinUS <= 0 || ph.HeadroomMinUS > periodUS || math.Abs(ph.HeadroomMinUS-want) > 1e6/48000.0+1 {
		t.Fatalf("headroom_min_us %.1f, want a period (%.1f µs) less the latest wakeup without xrun (%.1f µs): %.1f", ph.HeadroomMinUS, periodUS, float64(maxLate)/1e3, want)
	}
	t.Logf("%d periods, latency µs: min %.0f p50 %.0f p99 %.0f max %.0f; headroom min %.0f µs; %d xruns", ph.Periods, ph.Latency.Min, ph.Latency.P50, ph.Latency.P99, ph.Latency.Max, ph.HeadroomMinUS, ph.Xruns)
}

// countedInSamples returns the periods from the first sample to the last,
// with those the xruns between them report missed, and how many times the
// driver restarted its grid. An xrun of m missed periods is m periods of
// the fitted period, within maxDrift of nominal.
func countedInSamples(s []rundata.Sample) (counted, restarts int64) {
	period := float64(64) * 1e9 / 48000 * (1 - maxDrift)
	counted = int64(len(s)) - 1
	for _, p := range s[1:] {
		counted += int64(float64(p.Xrun) / period)
	}
	for _, p := range s {
		if p.Flags&rundata.FlagRestart != 0 {
			restarts++
		}
	}
	return counted, restarts
}

// A 50 ms stall injected into the callback (run's test hook, applied by
// the engine inside the step) misses about 37 JACK cycles: the next
// periods report an xrun of about that length.
func TestRunStallThroughJack(t *testing.T) {
	startJack(t, 48000, 64)
	dir := runLatencytest(t, "--duration", "3s", "--test-stall", "1000:50ms")
	run, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	ph := run.Phases[0]
	if ph.Xruns < 1 {
		t.Fatalf("no xrun after a 50 ms stall: %+v", ph)
	}
	var stall int64
	for _, p := range bintest.ReadSamples(t, dir, ph) {
		if p.Index > 1000 && p.Index <= 1003 {
			stall = max(stall, p.Xrun)
		}
	}
	if stall < 40e6 || stall > 120e6 {
		t.Fatalf("xrun after the 50 ms stall at period 1000: %d ns, want about 50 ms", stall)
	}
}

// run --cpus pins a thread to each CPU; PortAudio's callback thread is
// PortAudio's to place: bad input, one line naming the flag, exit 2, and
// no results directory.
func TestRunCPUsRefused(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(bin.Path(t), "run", "--driver", "portaudio", "--cpus", "all", "--tests", "idle", "--duration", "1s", "--out", out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	msg := strings.TrimSpace(stderr.String())
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(msg, "--cpus") || strings.Contains(msg, "\n") {
		t.Fatalf("run --driver portaudio --cpus all: %v, stderr %q; want exit 2 and one line naming --cpus", err, msg)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written", out)
	}
}
