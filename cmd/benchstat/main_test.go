package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/report"
)

// ranking writes a compare -json ranking whose phase "cyclictest" holds
// rounds NAME.R with the given p99s (p99.9 twice it, max four times).
func ranking(t *testing.T, dir string, p99s map[string][]float64) string {
	t.Helper()
	ph := report.RankedPhase{Phase: report.DefaultCyclictestPhase}
	for name, xs := range p99s {
		for i, x := range xs {
			p99, p999 := x, 2*x
			ph.Sources = append(ph.Sources, report.RankedSource{Label: name + "." + string(rune('1'+i)), Runs: 1, Periods: 10000,
				P99US: &p99, P999US: &p999, MaxUS: []float64{4 * x}, WorstMaxUS: 4 * x})
		}
	}
	data, err := json.Marshal(report.Ranking{Phases: []report.RankedPhase{ph}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rank.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The rounds are read by label from compare's ranking and paired in
// order; the CPU seconds from the script's files; the A/A beside them.
func TestRatioFromRanking(t *testing.T) {
	dir := t.TempDir()
	rank := ranking(t, dir, map[string][]float64{
		"lt": {30, 60, 45, 90}, "ct": {20, 40, 30, 60}, "ct2": {20, 40, 30, 60},
	})
	os.WriteFile(filepath.Join(dir, "lt.cpu"), []byte("0.1 0.1\n0.2 0.2\n0.3 0.1\n0.2 0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ct.cpu"), []byte("0.2\n0.4\n0.4\n0.2\n"), 0o644)
	var out, errOut strings.Builder
	code := run([]string{"-rank", rank, "-cpu-dir", dir, "-a", "lt", "-b", "ct", "-aa", "ct2,ct", "-label", "latencytest/cyclictest"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"latencytest/cyclictest, the median of 4 per-round ratios",
		"p99 1.50 [1.50, 1.50] (goal: ≤ 1.05: not met); A/A 1.00 [1.00, 1.00]",
		"max 1.50 [1.50, 1.50]; A/A 1.00 [1.00, 1.00] (goal: the intervals overlap: not met)",
		"CPU per period (start-up counted) 1.00 [1.00, 1.00]",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	// The steady benchmark's CPU seconds leave the start-up out, and say so.
	out.Reset()
	if code := run([]string{"-rank", rank, "-cpu-dir", dir, "-a", "lt", "-b", "ct", "-cpu-how", "once running"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "CPU per period (once running) 1.00 [1.00, 1.00]") {
		t.Errorf("-cpu-how: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"-rank", rank, "-cpu-dir", dir, "-a", "lt"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "4 rounds,    40000 periods; median p99     52 µs") || !strings.Contains(out.String(), "worst max    360 µs") ||
		!strings.Contains(out.String(), "CPU per period 30.00 µs") {
		t.Errorf("one tool's rounds: exit %d\n%s", code, out.String())
	}
}

// Bad input is one line and exit code 2, naming what is wrong.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	rank := ranking(t, dir, map[string][]float64{"a": {1, 2}, "b": {1}})
	os.WriteFile(filepath.Join(dir, "a.cpu"), []byte("0.1\nlots\n"), 0o644)
	notJSON := filepath.Join(dir, "x.json")
	os.WriteFile(notJSON, []byte("nope"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-a", "a"}, "usage"},
		{[]string{"-rank", rank, "-a", "a", "-b", "b"}, "2 rounds against 1"},
		{[]string{"-rank", rank, "-a", "c"}, "no source c.1"},
		{[]string{"-rank", rank, "-a", "a", "-b", "a", "-aa", "a"}, "-aa \"a\""},
		{[]string{"-rank", rank, "-a", "a", "-b", "a", "-goals", "1.05"}, "-goals \"1.05\""},
		{[]string{"-rank", rank, "-a", "a", "-cpu-dir", dir}, "a.cpu: \"lots\""},
		{[]string{"-rank", notJSON, "-a", "a"}, "not compare -json's output"},
		{[]string{"-rank", rank, "-a", "a", "-phase", "idle"}, "no phase \"idle\""},
	} {
		var out, errOut strings.Builder
		code := run(tc.args, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
