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

// startLifted starts `run --lift-rt-budget` for d and waits for the budget
// to be lifted.
func startLifted(t *testing.T, d string) (*exec.Cmd, *strings.Builder, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--lift-rt-budget", "--tests", "idle", "--duration", d,
		"--cpu-load", "0", "--out", out, "--no-report", "--quiet")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitBudget(t, "-1", "during the run")
	return cmd, &stderr, out
}

// needBudget returns the budget, which the tests lift, and puts it back
// after the test whatever happens.
func needBudget(t *testing.T) string {
	t.Helper()
	was := budget(t)
	if was == "-1" {
		t.Fatalf("sched_rt_runtime_us is already -1 here: the test needs a budget to lift (sysctl kernel.sched_rt_runtime_us=950000)")
	}
	t.Cleanup(func() { os.WriteFile(rtbudget.Path, []byte(was), 0) })
	return was
}

// run --lift-rt-budget: no budget while the run measures, the old one back
// when it ends, and also when the run is killed with SIGKILL mid-phase.
func TestRunLiftRTBudget(t *testing.T) {
	was := needBudget(t)
	for _, kill := range []bool{false, true} {
		cmd, stderr, out := startLifted(t, "2s")
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

// Two overlapping runs with --lift-rt-budget: the budget stays lifted
// until the second ends, the second says (and records) the original as
// the value it replaced, not the first's -1, and the original is back
// after both.
func TestRunLiftRTBudgetOverlap(t *testing.T) {
	was := needBudget(t)
	first, _, _ := startLifted(t, "2s")
	second, stderr, out := startLifted(t, "4s")
	if err := first.Wait(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if got := budget(t); got != "-1" {
		t.Errorf("the first ended while the second measures: %s, want -1", got)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr.String())
	}
	if got := budget(t); got != was {
		t.Errorf("after both: %s, want %s back", got, was)
	}
	if b := readRun(t, out).RTBudget; b == nil || b.Was != was {
		t.Errorf("the second's run.json rt_budget %+v, want lifted from %s", b, was)
	}
}

// The budget guard itself killed with SIGKILL: the budget stays lifted
// (nothing runs to put it back) but its record says what it was, and
// `check --restore` puts that back.
func TestRunLiftRTBudgetGuardKilled(t *testing.T) {
	was := needBudget(t)
	run, _, _ := startLifted(t, "2s")
	guards := children(run.Process.Pid, rtBudgetCommand)
	if len(guards) != 1 {
		t.Fatalf("budget guards of the run: %v", guards)
	}
	syscall.Kill(guards[0], syscall.SIGKILL)
	run.Wait()
	if got := budget(t); got != "-1" {
		t.Fatalf("after the guard's SIGKILL: %s; the test expects the budget still lifted", got)
	}
	r := latencytest(t, "check", "--restore")
	if r.code != 0 || !strings.Contains(r.stdout, "rt-budget: put back ("+rtbudget.Path+" "+was+")") {
		t.Errorf("check --restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := budget(t); got != was {
		t.Errorf("after check --restore: %s, want %s", got, was)
	}
	if r := latencytest(t, "check", "--restore"); r.code != 0 || strings.TrimSpace(r.stdout) != "nothing to put back" {
		t.Errorf("check --restore again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
