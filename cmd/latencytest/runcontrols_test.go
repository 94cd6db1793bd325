package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/rundata"
)

// --loops N ends each phase after exactly N periods, as cyclictest -l
// counts its loops: run.json, the samples file and the T: line agree, in
// every repetition, and without --duration nothing else ends the phase.
func TestRunLoopsCountsExactly(t *testing.T) {
	const loops = 250
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--repeat", "2", "--loops", fmt.Sprint(loops),
		"--cpu-load", "0", "--periods", "16", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	if run.Loops != loops || len(run.Phases) != 2 || run.Interrupted {
		t.Fatalf("run.json: loops %d, %d phases, interrupted %v; want %d, 2, false", run.Loops, len(run.Phases), run.Interrupted, loops)
	}
	for _, ph := range run.Phases {
		samples := readSamples(t, out, ph)
		if ph.Periods != loops || len(samples) != loops || samples[loops-1].Index != loops-1 {
			t.Errorf("%s: %d periods in run.json, %d in the samples file; want %d", ph.Label(), ph.Periods, len(samples), loops)
		}
		if ph.CutShort || ph.Break != nil {
			t.Errorf("%s: cut short %v, break %+v", ph.Label(), ph.CutShort, ph.Break)
		}
	}
	if n := strings.Count(r.stdout, fmt.Sprintf("C:%8d", loops)); n != 2 {
		t.Errorf("%d T: lines with C:%d, want 2:\n%s", n, loops, r.stdout)
	}
}

// --loops without --duration lifts only the duration's bound: every
// other flag is still checked (bad input, exit 2, nothing written).
func TestRunLoopsWithoutDurationChecksTheRest(t *testing.T) {
	for _, args := range [][]string{{"--repeat", "0"}, {"--stream", "both"}, {"--period", "8"}} {
		out := filepath.Join(t.TempDir(), "run")
		r := latencytest(t, append([]string{"run", "--driver", "timer", "--tests", "idle", "--loops", "10", "--out", out}, args...)...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "latencytest run: "+args[0]) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming %s", args, r.code, r.stderr, args[0])
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: %s was written", args, out)
		}
	}
}

// --break-above ends the run at the first wakeup later than the limit, as
// cyclictest -b: the stall hook makes period 100 200 ms late (the buffer
// of 64 periods of 256 frames, 341 ms, keeps it from being an xrun), the
// phase ends with that period last, the second repetition never runs, and
// the terminal, the T: line's notes and run.json say where it broke.
func TestRunBreakAboveStopsAtFirstLateWakeup(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--repeat", "2", "--duration", "10s",
		"--break-above", "100ms", "--test-stall", "100:200ms", "--cpu-load", "0", "--period", "256", "--periods", "64",
		"--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	if run.BreakAboveNS != 100e6 || len(run.Phases) != 1 || run.Interrupted || !run.Broke() {
		t.Fatalf("run.json: break_above_ns %d, %d phases, interrupted %v; want 1e8, 1 phase (the run broke in it), false",
			run.BreakAboveNS, len(run.Phases), run.Interrupted)
	}
	ph := run.Phases[0]
	samples := readSamples(t, out, ph)
	for _, s := range samples[:len(samples)-1] {
		if s.Latency() > 100e6 {
			t.Fatalf("period %d woke %.1f ms late and the run went on", s.Index, float64(s.Latency())/1e6)
		}
	}
	last := samples[len(samples)-1]
	b := ph.Break
	if b == nil || b.Period != 100 || last.Index != 100 || b.LatencyNS != last.Latency() || last.Latency() < 200e6 {
		t.Fatalf("break %+v, last sample period %d %.1f ms late; want period 100, ≥ 200 ms, the same in both", b, last.Index, float64(last.Latency())/1e6)
	}
	if ph.Periods != 101 {
		t.Errorf("%d periods in run.json, want 101 (0 to the one that broke)", ph.Periods)
	}
	if want := fmt.Sprintf("[idle] break: period 100 woke %d µs late, above --break-above 100000 µs", b.LatencyNS/1000); !strings.Contains(r.stderr, want) {
		t.Errorf("terminal lacks %q:\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stdout, "broke: period 100") {
		t.Errorf("summary lacks the break:\n%s", r.stdout)
	}
}

// With a --period list, a break ends the list too: no size after the one
// that broke is measured, as cyclictest -b ends the program.
func TestRunBreakAboveEndsPeriodList(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sizes")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "10s", "--period", "256,512",
		"--break-above", "100ms", "--test-stall", "100:200ms", "--cpu-load", "0", "--periods", "64",
		"--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if b := readRun(t, filepath.Join(out, "256-frames")).Phases[0].Break; b == nil || b.Period != 100 {
		t.Errorf("256 frames: break %+v, want at period 100", b)
	}
	if _, err := os.Stat(filepath.Join(out, "512-frames")); !os.IsNotExist(err) {
		t.Errorf("512 frames measured after the break (%v)", err)
	}
}

// --break-above with --trace keeps the window of the wakeup that broke,
// as cyclictest -b does with its tracer: spikes.json explains that very
// period even though it is below --trace-above (the tracer's threshold
// is lowered to the break's, and run.json says so). The late wakeup is
// the stall hook's at period 200, 30 ms; the break is at 10 ms, which
// this machine's noise at SCHED_FIFO does not reach in 1 s.
func TestRunBreakAboveKeepsTraceWindow(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "10s", "--affinity", "0",
		"--trace", "--trace-above", "50ms", "--break-above", "10ms", "--test-stall", "200:30ms",
		"--cpu-load", "0", "--period", "256", "--periods", "64", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	if run.Trace == nil || !run.Trace.Enabled {
		t.Fatalf("run.json trace %+v (the test needs root and tracefs)", run.Trace)
	}
	if run.Trace.AboveNS != 10e6 {
		t.Errorf("trace above_ns %d, want 1e7 (--break-above's, below --trace-above's 50 ms)", run.Trace.AboveNS)
	}
	b := run.Phases[0].Break
	if b == nil || b.Period != 200 {
		t.Fatalf("break %+v, want at period 200", b)
	}
	ss, err := rundata.ReadSpikes(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range ss {
		if sp.Phase == 0 && sp.Period == b.Period {
			if sp.LatencyNS != b.LatencyNS || (len(sp.Causes) == 0 && sp.UnexplainedNS == 0) {
				t.Errorf("the break's spike: %.2f ms late (break %.2f ms), causes %v, unexplained %d ns",
					float64(sp.LatencyNS)/1e6, float64(b.LatencyNS)/1e6, sp.Causes, sp.UnexplainedNS)
			}
			return
		}
	}
	t.Errorf("spikes.json has no spike at period %d among its %d", b.Period, len(ss))
}
