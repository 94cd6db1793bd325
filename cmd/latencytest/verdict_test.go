package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A 30 ms stall at 4 × 256 frames (5.33 ms periods): the verdict is the
// buffer in which the stalled period's write would have come in time, 1 +
// ⌈30 ms / 5.33 ms⌉ = 7 periods (or more, should the machine add to the
// stall), exactly the one the samples' latest write needs, and the
// terminal says it.
func TestRunVerdict(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "2s", "--cpu-load", "0",
		"--period", "256", "--periods", "4", "--test-stall", "100:30ms", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	ph := run.Phases[0]
	period := int64(256) * 1e9 / 48000
	var late int64
	for _, s := range readSamples(t, out, ph) {
		late = max(late, s.Woke+s.DSP-s.Due)
	}
	want := 1 + (late+period-1)/period
	if ph.Safe == nil || int64(ph.Safe.Periods) != want || want < 7 || ph.Safe.MarginNS != (want-1)*period-late {
		t.Fatalf("safe %+v, want %d periods (latest write %.2f ms after its period was due)", ph.Safe, want, float64(late)/1e6)
	}
	if line := fmt.Sprintf("verdict: 256 frames × 4 (21.3 ms) held under no load; idle needs × %d", want); !strings.Contains(r.stdout, line) {
		t.Errorf("no line %q in\n%s", line, r.stdout)
	}
}
