//go:build portaudio

package portaudio

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/rundata"
)

// buildLatencytest builds the command with the portaudio tag into dir.
func buildLatencytest(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "latencytest")
	cmd := exec.Command("go", "build", "-tags", "portaudio", "-o", exe, "latencytest/cmd/latencytest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags portaudio: %v\n%s", err, out)
	}
	return exe
}

// runLatencytest runs `latencytest run` against the test's JACK server and
// returns the results directory.
func runLatencytest(t *testing.T, args ...string) string {
	t.Helper()
	tmp := t.TempDir()
	exe := buildLatencytest(t, tmp)
	out := filepath.Join(tmp, "results")
	args = append([]string{"run", "--driver", "portaudio", "--device", "jack", "--period", "64", "--tests", "idle", "--out", out, "--no-report", "--quiet"}, args...)
	cmd := exec.Command(exe, args...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("latencytest %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func readSamples(t *testing.T, dir string, ph rundata.Phase) []rundata.Sample {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, ph.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sr, err := rundata.NewSampleReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var s []rundata.Sample
	for {
		var p rundata.Sample
		if err := sr.Next(&p); errors.Is(err, io.EOF) {
			return s
		} else if err != nil {
			t.Fatal(err)
		}
		s = append(s, p)
	}
}

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
	if ph.Periods < 3750*98/100 || ph.Periods > 3750*102/100 {
		t.Fatalf("phase %s: %d periods in 5 s, want 3750 ± 2 %%", ph.Name, ph.Periods)
	}
	s := readSamples(t, dir, ph)
	if int64(len(s)) != ph.Periods {
		t.Fatalf("samples file has %d periods, run.json %d", len(s), ph.Periods)
	}
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
	t.Logf("%d periods, latency µs: min %.0f p50 %.0f p99 %.0f max %.0f; %d xruns", ph.Periods, ph.Latency.Min, ph.Latency.P50, ph.Latency.P99, ph.Latency.Max, ph.Xruns)
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
	for _, p := range readSamples(t, dir, ph) {
		if p.Index > 1000 && p.Index <= 1003 {
			stall = max(stall, p.Xrun)
		}
	}
	if stall < 40e6 || stall > 80e6 {
		t.Fatalf("xrun after the 50 ms stall at period 1000: %d ns, want about 50 ms", stall)
	}
}
