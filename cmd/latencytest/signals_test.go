package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/report"
	"latencytest/report/synth"
	"latencytest/rundata"
)

// stalledRun starts a run whose engine stalls at its 50th period for 30 s
// and does not stop on SIGTERM, so that its stop in order takes the
// engine's 2 s grace: every signal sent meanwhile reaches a run that is
// stopping, and one taken as "stop at once" would show.
func stalledRun(t *testing.T, out string, flags ...string) (*exec.Cmd, *watchedOutput) {
	t.Helper()
	args := append([]string{"run", "--driver", "timer", "--tests", "idle", "--test-stall", "50:30s",
		"--duration", "30s", "--out", out}, flags...)
	cmd, se := started(t, nil, streamLine, args...)
	time.Sleep(300 * time.Millisecond) // past period 50: inside the stall
	return cmd, se
}

// stoppedInOrder checks a run that was stopped once, in order: exit 130,
// no "at once", run.json complete and interrupted with the periods
// measured before the stall, and (rendered) its report.
func stoppedInOrder(t *testing.T, what string, code int, se, out string, rendered bool) {
	t.Helper()
	if code != 130 || strings.Contains(se, "interrupted again") {
		t.Errorf("%s: exit %d, stderr %q; want 130, one stop in order", what, code, se)
	}
	run := readRun(t, out)
	if !run.Interrupted || run.Incomplete || len(run.Phases) != 1 || run.Phases[0].Periods < 40 {
		t.Errorf("%s: interrupted %v incomplete %v phases %+v", what, run.Interrupted, run.Incomplete, run.Phases)
	}
	if _, err := os.Stat(filepath.Join(out, report.IndexFile)); rendered && err != nil {
		t.Errorf("%s: no report: %v", what, err)
	}
}

// A supervisor's stop is one stop: timeout(1) sends SIGTERM to the run
// and then to its own process group, the run's too, and the run must not
// take the second for a second Ctrl-C. Three times with timeout itself,
// then the same two signals sent by hand 50 ms apart, which is what
// timeout does on a loaded machine at worst.
func TestSupervisorSignalIsOneStop(t *testing.T) {
	for i := range 3 {
		out := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command("timeout", "--preserve-status", "1", binary, "run", "--driver", "timer", "--tests", "idle",
			"--test-stall", "50:30s", "--duration", "30s", "--out", out, "--no-report")
		se := &strings.Builder{}
		cmd.Stderr = se
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
		stoppedInOrder(t, "timeout, try "+string(rune('1'+i)), cmd.ProcessState.ExitCode(), se.String(), out, false)
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd, se := stalledRun(t, out, "--no-report")
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	code, _ := exitCode(t, cmd, time.Now())
	stoppedInOrder(t, "SIGTERM twice 50 ms apart", code, se.String(), out, false)
}

// SIGHUP (the terminal closed) and SIGPIPE finish run.json and the report
// as SIGTERM does, and neither, repeated after the window in which a
// second SIGINT would stop at once, does so: they repeat by themselves.
func TestHangupAndPipeStopInOrder(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGPIPE} {
		out := filepath.Join(t.TempDir(), "run")
		cmd, se := stalledRun(t, out)
		cmd.Process.Signal(sig)
		time.Sleep(repeatWindow + 200*time.Millisecond)
		cmd.Process.Signal(sig)
		code, _ := exitCode(t, cmd, time.Now())
		stoppedInOrder(t, sig.String(), code, se.String(), out, true)
	}
}

// Output into a pipe whose reader has gone (`latencytest run 2>&1 | head
// -1`): the run is not killed by SIGPIPE at its next write but stops in
// order, with run.json complete and the report rendered.
func TestClosedPipeStopsInOrder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle,idle", "--duration", "1s", "--out", out)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // as head -1 exits after its line
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("killed by %v after its first line %q", ws.Signal(), line)
	}
	run := readRun(t, out)
	if run.Incomplete || len(run.Phases) == 0 || run.Phases[0].Periods == 0 {
		t.Errorf("exit %v; run.json incomplete %v, phases %+v", err, run.Incomplete, run.Phases)
	}
	if _, err := os.Stat(filepath.Join(out, report.IndexFile)); err != nil {
		t.Errorf("no report: %v", err)
	}
}

// bigRun is a results directory that takes seconds to render: 96 phases,
// each naming the same samples file of 10 minutes of periods.
func bigRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := synth.Default()
	c.PhaseLength = 10 * time.Minute
	c.Phases = c.Phases[1:]
	run, err := synth.Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	for len(run.Phases) < 96 {
		run.Phases = append(run.Phases, run.Phases[0])
	}
	if err := rundata.WriteRun(dir, run); err != nil {
		t.Fatal(err)
	}
	return dir
}

// report and compare stop within a second of SIGINT or SIGTERM, however
// long the rendering would take, and write nothing (no page, no
// temporary file) when stopped before their writes.
func TestReportAndCompareStopWithinASecond(t *testing.T) {
	dir := bigRun(t)
	before := listing(t, dir)
	page := filepath.Join(t.TempDir(), "c.html")
	for _, c := range []struct {
		sig  syscall.Signal
		args []string
	}{
		{syscall.SIGINT, []string{"report", dir}},
		{syscall.SIGTERM, []string{"compare", dir, dir, "-o", page}},
	} {
		cmd := exec.Command(binary, c.args...)
		se := &strings.Builder{}
		cmd.Stderr = se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		sent := time.Now()
		cmd.Process.Signal(c.sig)
		code, took := exitCode(t, cmd, sent)
		t.Logf("%s: exit %d %v after %v", c.args[0], code, took, c.sig)
		if code != 130 || !strings.Contains(se.String(), "interrupted: nothing written") {
			t.Fatalf("%s: exit %d, %q; want 130, stopped before writing (is the input too small now?)", c.args[0], code, se.String())
		}
		if took > time.Second {
			t.Errorf("%s: stopped %v after %v", c.args[0], took, c.sig)
		}
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Errorf("the directory changed:\n%v\n%v", before, after)
	}
	if ents, _ := os.ReadDir(filepath.Dir(page)); len(ents) != 0 {
		t.Errorf("compare wrote %v", ents)
	}
}
