//go:build vm

package ktrace

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/rundata"
)

// vmBinary is latencytest in the VM's initramfs (scripts/vmtest).
const vmBinary = "/bin/latencytest"

const rtRuntime = "/proc/sys/kernel/sched_rt_runtime_us"

// budgetUS is the real-time budget the test sets, of the default period of
// a second.
const budgetUS = "200000"

// TestVMRTThrottling forces RT throttling: a real-time budget of a fifth
// of every second, and an audio thread that wants 80 % of its CPU. The
// kernel stops the thread for the rest of each second once the budget is
// used up; the tracer must name that as RT throttling (not as the kernel's
// latency, nor as the idle CPU or the threads that ran meanwhile), count
// it in the phase, and say so on the terminal. The budget is restored.
//
// A fifth, not a half: the DSP loop is calibrated as the engine starts,
// while the VM's other vCPU starts the run's other processes, and under
// TCG that can make it far lighter than asked. A CI rehearsal (3 Dec 2026)
// measured 31.7 % of the CPU for --cpu-load 80, below a budget of half,
// and the thread was never throttled (logWhyNotThrottled).
func TestVMRTThrottling(t *testing.T) {
	old, err := os.ReadFile(rtRuntime)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(rtRuntime, old, 0); err != nil {
			t.Errorf("restore %s to %s: %v", rtRuntime, bytes.TrimSpace(old), err)
		}
	})
	if err := os.WriteFile(rtRuntime, []byte(budgetUS), 0); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x")
	cmd := exec.Command(vmBinary, "run", "--driver", "timer", "--tests", "idle", "--duration", "4s", "--cpu-load", "80",
		"--affinity", "1", "--period", "256", "--periods", "4", "--trace", "--no-report", "--quiet", "--out", out)
	// The events of a spike the two accounts disagree on, and the state
	// of a trace with no switch of the audio thread in a window.
	cmd.Env = append(os.Environ(), "LATENCYTEST_TRACE_DEBUG=1")
	b, err := cmd.CombinedOutput()
	t.Logf("latencytest %s\n%s", strings.Join(cmd.Args[1:], " "), b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rundata.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rundata.ReadSpikes(out)
	if err != nil {
		t.Fatal(err)
	}
	// Each throttled stretch is what is left of a second once a fifth of
	// it went to real-time work: hundreds of ms, while the thread waits for
	// its period or does its period's work (then the period woke in time
	// and its xrun's window runs to the end of the work). Every spike
	// window that long must owe most of it to the throttling.
	long := 0
	for _, sp := range ss {
		w := sp.WindowNS()
		if w < 100e6 {
			continue
		}
		long++
		n, ns := rundata.Throttled([]rundata.Spike{sp}, sp.Phase)
		if n != 1 || ns < w/2 {
			js, _ := json.Marshal(sp)
			t.Logf("spike: %s", js)
			t.Errorf("period %d, %.1f ms late, %.1f ms window: RT throttling %.1f ms of it, want most; causes %v", sp.Period, float64(sp.LatencyNS)/1e6, float64(w)/1e6, float64(ns)/1e6, sp.Causes)
		}
	}
	if long == 0 {
		logWhyNotThrottled(t, r, out)
		t.Fatalf("no spike of 100 ms or more in 4 s at a budget of %s µs a second: was the thread throttled? %d spikes", budgetUS, len(ss))
	}
	ph := r.Phases[0]
	if ph.RTThrottled < long || ph.RTThrottledNS < int64(long)*50e6 {
		t.Errorf("run.json: rt_throttled %d, %d ns; want at least the %d long spikes", ph.RTThrottled, ph.RTThrottledNS, long)
	}
	if !strings.Contains(string(b), "RT throttled:") {
		t.Errorf("the terminal does not say RT throttled")
	}
}

// logWhyNotThrottled logs what decides whether the kernel throttles the
// audio thread: its policy and CPU as obtained, the budget now, and the
// CPU its DSP work really took per period (a loop calibrated while the
// emulator ran slow is lighter than asked). A run that was never
// throttled once left none of this to read.
func logWhyNotThrottled(t *testing.T, r *rundata.Run, out string) {
	budget, _ := os.ReadFile(rtRuntime)
	period, _ := os.ReadFile("/proc/sys/kernel/sched_rt_period_us")
	t.Logf("obtained %+v (refused %q); sched_rt_runtime_us %s of sched_rt_period_us %s",
		r.RT.Obtained, r.RT.Refused, bytes.TrimSpace(budget), bytes.TrimSpace(period))
	ph := r.Phases[0]
	ss, err := rundata.ReadSamples(filepath.Join(out, ph.SamplesFile))
	if err != nil || len(ss) < 2 {
		t.Logf("samples: %v", err)
		return
	}
	var dsp int64
	for _, s := range ss {
		dsp += s.DSP
	}
	span := ss[len(ss)-1].Woke - ss[0].Woke
	t.Logf("cpu loop %+v; the DSP work took %.1f %% of the %.2f s from the first wakeup to the last",
		ph.CPULoop, 100*float64(dsp)/float64(span), float64(span)/1e9)
}
