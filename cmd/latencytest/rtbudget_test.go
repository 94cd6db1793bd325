package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/internal/rtbudget"
)

func budget(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rtbudget.Path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// waitBudget waits up to 3 s for the budget to read want.
func waitBudget(t *testing.T, want, when string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if budget(t) == want {
			return
		}
	}
	t.Errorf("%s: sched_rt_runtime_us %s, want %s", when, budget(t), want)
}

// run --lift-rt-budget: no budget while the run measures, the old one back
// when it ends, and also when the run is killed with SIGKILL mid-phase.
func TestRunLiftRTBudget(t *testing.T) {
	was := budget(t)
	if was == "-1" {
		t.Fatalf("sched_rt_runtime_us is already -1 here: the test needs a budget to lift (sysctl kernel.sched_rt_runtime_us=950000)")
	}
	t.Cleanup(func() { os.WriteFile(rtbudget.Path, []byte(was), 0) })
	for _, kill := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command(binary, "run", "--driver", "timer", "--lift-rt-budget", "--tests", "idle", "--duration", "2s",
			"--cpu-load", "0", "--out", out, "--no-report", "--quiet")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitBudget(t, "-1", "during the run")
		if kill {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			waitBudget(t, was, "after a SIGKILL of the run")
			continue
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		if got := budget(t); got != was {
			t.Errorf("after the run: %s, want %s back", got, was)
		}
		if b := readRun(t, out).RTBudget; b == nil || !b.Lifted || b.Was != was {
			t.Errorf("run.json rt_budget %+v, want lifted from %s", b, was)
		}
		if !strings.Contains(stderr.String(), "sched_rt_runtime_us "+was+" → -1") {
			t.Errorf("the terminal does not say the budget was lifted:\n%s", stderr.String())
		}
	}
}
