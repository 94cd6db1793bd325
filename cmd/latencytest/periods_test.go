package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"latencytest/rundata"
)

// run --period 256,512,1024: the suite once per size, each into a results
// directory of its own, and the floor per phase: the smallest size whose
// buffer held, as each run's verdict says.
func TestRunPeriodList(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sizes")
	r := latencytest(t, "run", "--driver", "timer", "--period", "1024,256,512", "--periods", "4", "--tests", "idle",
		"--duration", "1s", "--cpu-load", "0", "--out", out, "--quiet", "--no-report")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, rundata.FloorFile))
	if err != nil {
		t.Fatal(err)
	}
	var fl rundata.Floor
	if err := json.Unmarshal(b, &fl); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fl.Sizes, []int{1024, 256, 512}) || len(fl.Phases) != 1 {
		t.Fatalf("floor.json %s", b)
	}
	heldAt := map[int]bool{}
	for k, n := range fl.Sizes {
		run := readRun(t, filepath.Join(out, fmt.Sprintf("%d-frames", n)))
		if run.PeriodFrames != n || run.Periods != 4 || len(run.Phases) != 1 {
			t.Errorf("%d frames: run %d × %d, %d phases", n, run.PeriodFrames, run.Periods, len(run.Phases))
		}
		held := run.Phases[0].Held(4)
		if fl.Phases[0].Held[k] != held {
			t.Errorf("%d frames: floor.json says held %v, the run's verdict %v", n, fl.Phases[0].Held[k], held)
		}
		heldAt[n] = held
	}
	want := 0 // the smallest size above which every size held
	for _, n := range []int{1024, 512, 256} {
		if !heldAt[n] {
			break
		}
		want = n
	}
	if fl.Phases[0].FloorFrames != want {
		t.Errorf("floor %d frames, want %d", fl.Phases[0].FloorFrames, want)
	}
	if !strings.Contains(r.stdout, "floor (the smallest period size whose buffer held, and every larger one too): idle: ") {
		t.Errorf("no floor line:\n%s", r.stdout)
	}
	// Bad input: a size out of range, a list with --histfile or into a
	// directory that holds something; nothing written.
	used := t.TempDir()
	os.WriteFile(filepath.Join(used, "x"), nil, 0o644)
	for what, args := range map[string][]string{
		"size out of range": {"--period", "64,8"},
		"not a number":      {"--period", "64,abc"},
		"twice":             {"--period", "64,64"},
		"with --histfile":   {"--period", "64,128", "--histfile", filepath.Join(t.TempDir(), "h")},
		"used --out":        {"--period", "64,128", "--out", used},
	} {
		fresh := filepath.Join(t.TempDir(), "never")
		args = append([]string{"run", "--driver", "timer", "--tests", "idle", "--duration", "1s"}, args...)
		if !strings.Contains(strings.Join(args, " "), "--out") {
			args = append(args, "--out", fresh)
		}
		oneLine(t, latencytest(t, args...), what)
		if _, err := os.Stat(fresh); err == nil {
			t.Errorf("%s: wrote %s", what, fresh)
		}
	}
}
