package main

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"latencytest/rundata"
)

// Every samples file of a run, replayed through rundata.Accumulator (as
// the report recovers a killed run's phase), gives back the phase the run
// wrote in run.json as it measured, field for field: the live run and a
// recovery share one set of rules. The samples file's own rounding is all
// that may differ, each by what the file format allows: a due instant by
// rundata.DueTolerance, a CPU loop by the file's DSP unit.
func TestReplayedSamplesGiveLivePhase(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	// Two phases, a stall long enough to be an xrun in each, and a CPU
	// loop so that its figures and the measured verdict are exercised.
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--repeat", "2", "--duration", "2s",
		"--cpu-load", "30", "--period", "256", "--periods", "2", "--test-stall", "100:20ms", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	if len(run.Phases) != 2 {
		t.Fatalf("%d phases, want 2", len(run.Phases))
	}
	for _, live := range run.Phases {
		if live.Xruns == 0 {
			t.Errorf("phase %s: no xrun from the 20 ms stall", live.Label())
		}
		got, unit, edge := replay(t, filepath.Join(out, live.SamplesFile), live)
		if d := got.EndMonoNS - live.EndMonoNS; d < -rundata.DueTolerance || d > rundata.DueTolerance {
			t.Errorf("phase %s: end %d ns, live %d", live.Label(), got.EndMonoNS, live.EndMonoNS)
		}
		// The file keeps a CPU loop in whole units, rounded down.
		if d := live.CPULoop.MaxUS*1000 - got.CPULoop.MaxUS*1000; d < 0 || d >= float64(unit) {
			t.Errorf("phase %s: CPU loop max %g µs, live %g µs (the file's unit is %d ns)", live.Label(), got.CPULoop.MaxUS, live.CPULoop.MaxUS, unit)
		}
		if d := live.CPULoop.MinUS*1000 - got.CPULoop.MinUS*1000; d < 0 || d >= float64(unit) {
			t.Errorf("phase %s: CPU loop min %g µs, live %g µs (the file's unit is %d ns)", live.Label(), got.CPULoop.MinUS, live.CPULoop.MinUS, unit)
		}
		if got.Safe == nil || live.Safe == nil || got.Safe.Periods != live.Safe.Periods ||
			got.Safe.MarginNS-live.Safe.MarginNS < 0 || got.Safe.MarginNS-live.Safe.MarginNS >= unit {
			t.Errorf("phase %s: verdict %+v, live %+v", live.Label(), got.Safe, live.Safe)
		}
		// A loop within a unit of the ±100 µs window's edges may fall
		// either side of it once rounded.
		if d := math.Abs(got.CPULoop.Within100USPct - live.CPULoop.Within100USPct); d > 100*float64(edge)/float64(live.Periods)+1e-9 {
			t.Errorf("phase %s: CPU loops within 100 µs %g %%, live %g %% (%d at the edge)", live.Label(), got.CPULoop.Within100USPct, live.CPULoop.Within100USPct, edge)
		}
		got.EndMonoNS, got.CPULoop.MaxUS, got.CPULoop.MinUS, got.Safe = live.EndMonoNS, live.CPULoop.MaxUS, live.CPULoop.MinUS, live.Safe
		got.CPULoop.Within100USPct = live.CPULoop.Within100USPct
		if !reflect.DeepEqual(got, live) {
			g, _ := json.Marshal(got)
			l, _ := json.Marshal(live)
			t.Errorf("phase %s replayed:\n%s\nlive:\n%s", live.Label(), g, l)
		}
	}
}

// replay rebuilds live's figures from its samples file at path: from a
// phase holding only what a samples file cannot say (its name, start,
// wall-clock instants, load and nominal CPU loop, the lateness against the
// grid, the machine's load average and steal), as run.json holds a killed
// run's phase. unit is the file's DSP
// unit, ns, and edge the number of periods whose CPU loop the file has
// within a unit of the ±100 µs window's edges.
func replay(t *testing.T, path string, live rundata.Phase) (got rundata.Phase, unit, edge int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sr, err := rundata.NewSampleReader(f)
	if err != nil {
		t.Fatal(err)
	}
	got = rundata.Phase{Name: live.Name, Repeat: live.Repeat, Stressor: live.Stressor,
		StartMonoNS: live.StartMonoNS, StartWall: live.StartWall, EndWall: live.EndWall,
		UpdateDelay: live.UpdateDelay, AfterUpdate: live.AfterUpdate, SamplesFile: live.SamplesFile, StressorStats: live.StressorStats,
		LoadAvg: live.LoadAvg, StealPct: live.StealPct,
		CPULoop: rundata.CPULoop{NominalUS: live.CPULoop.NominalUS}}
	nominal := rundata.NominalDSP(&live)
	unit = int64(sr.Header.DSPUnitNS)
	acc := rundata.NewAccumulator(sr.Header, nominal)
	var s rundata.Sample
	for {
		if err := sr.Next(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if d := max(s.DSP-nominal, nominal-s.DSP); d > 100_000-unit && d <= 100_000+unit {
			edge++
		}
		acc.Add(&s)
	}
	acc.Fill(&got)
	got.Lost = sr.Lost
	return got, unit, edge
}
