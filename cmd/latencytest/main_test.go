package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/audio/timer"
	"latencytest/internal/bintest"
	"latencytest/internal/child"
	"latencytest/internal/procfile"
	"latencytest/internal/racetest"
	"latencytest/rundata"
)

// built is latencytest built for these tests (internal/bintest), and binary
// its path: `run` starts the engine as a process of the same binary, so
// the tests drive the real thing.
var (
	built  *bintest.Binary
	binary string
)

func TestMain(m *testing.M) {
	if os.Getenv("LT_CULPRIT") == "1" {
		runCulprit() // the trace test's known culprit (trace_test.go)
		return
	}
	var err error
	if built, err = bintest.New(); err == nil {
		binary, err = built.Build()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := built.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func latencytest(t *testing.T, args ...string) result {
	t.Helper()
	r := built.Run(t, args...)
	return result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}
}

func readRun(t *testing.T, dir string) *rundata.Run { return bintest.ReadRun(t, dir) }

func readSamples(t *testing.T, dir string, ph rundata.Phase) []rundata.Sample {
	return bintest.ReadSamples(t, dir, ph)
}

func TestBadFlagsExit2WritingNothing(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--rate", "100"}, "--rate"},
		{[]string{"--rate", "abc"}, "--rate"},
		{[]string{"--no-such-flag"}, "--no-such-flag"},
		{[]string{"--disk-size", "5Q", "--tests", "disk-write"}, "--disk-size"},
		{[]string{"--hackbench-groups", "0", "--tests", "hackbench"}, "--hackbench-groups"},
		{[]string{"--period", "8"}, "--period"},
		{[]string{"--repeat", "0"}, "--repeat"},
		{[]string{"--repeat", "1001"}, "--repeat"},
		{[]string{"--repeat", "130", "--tests", "idle"}, "at most 128"},
		{[]string{"--repeat", "65", "--tests", "idle,proc"}, "130 phases"},
		{[]string{"--periods", "1"}, "--periods"},
		{[]string{"--cpu-load", "101"}, "--cpu-load"},
		{[]string{"--cpu-load", "-1"}, "--cpu-load"},
		{[]string{"--prio", "100"}, "--prio"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--duration", "soon"}, "--duration"},
		{[]string{"--driver", "oss"}, "--driver"},
		{[]string{"--driver", "timer", "--device", "hw:0,0"}, "--device"},
		{[]string{"--tests", "idle,nosuch"}, "--tests"},
		{[]string{"--affinity", "0-999"}, "--affinity"},
		{[]string{"--stream", "both"}, "--stream"},
		{[]string{"--loopback"}, "--loopback"},
		{[]string{"--loopback", "--stream", "duplex", "--channels", "1"}, "--loopback"},
		{[]string{"--loopback", "--stream", "duplex", "--tone", "440"}, "--loopback"},
		{[]string{"--loopback", "--stream", "duplex"}, "--loopback"},
		{[]string{"--test-stall", "x"}, "--test-stall"},
		{[]string{"--test-stall", "5:1ms@x"}, "--test-stall"},
		{[]string{"--cpus", "x"}, "--cpus"},
		{[]string{"--cpus", "99999"}, "--cpus"},
		{[]string{"--cpus", "0", "--affinity", "0"}, "--cpus"},
		{[]string{"--loops", "-1"}, "--loops"},
		{[]string{"--loops", "x"}, "--loops"},
		{[]string{"--loops", "1000000001"}, "--loops"},
		{[]string{"--break-above", "-1ms"}, "--break-above"},
		{[]string{"--break-above", "soon"}, "--break-above"},
		{[]string{"--out", "/etc/hostname/out"}, "--out"},
		{[]string{"--histfile", "/etc/hostname/h.txt"}, "--histfile"},
		// runner.Config.Validate's, once run's own.
		{[]string{"--access", "direct"}, "--access"},
		{[]string{"--access", "rw"}, "--access rw: only with the ALSA driver"},
		{[]string{"--label", "a\nb"}, "--label"},
		{[]string{"--tone", "30000"}, "--tone 30000: allowed 0 (silence) to 24000 Hz"},
		{[]string{"--duration", "1ms"}, "--duration 1ms: shorter than one period"},
		{[]string{"--period", "64,100000"}, "--period 100000"},
		{[]string{"--histfile", t.TempDir()}, "--histfile"}, // a directory: refused before the run, not renamed over after it
		{[]string{"--max-xruns", "-1"}, "--max-xruns"},
		{[]string{"--test-glitch", "5:loud"}, "--test-glitch"},
		{[]string{"--test-glitch", "5:skip"}, "--test-glitch"},
		{[]string{"--test-glitch", "9:silence,3:silence"}, "--test-glitch"}, // -1 is the default's off, not a value to give (it was accepted silently)
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "out")
		args := append([]string{"run", "--driver", "timer", "--tests", "idle", "--duration", "1s", "--out", out}, c.args...)
		r := latencytest(t, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, r.code, r.stderr)
			continue
		}
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if !strings.Contains(lines[0], c.flag) {
			t.Errorf("%v: first line %q does not name %s", c.args, lines[0], c.flag)
		}
		if len(lines) != 1 {
			t.Errorf("%v: %d lines of error, want 1: %q", c.args, len(lines), r.stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) && !strings.HasPrefix(out, "/proc") {
			t.Errorf("%v: %s was written", c.args, out)
		}
	}
}

// The flag package says only "parse error" of a bad duration; the user is
// told the form allowed.
func TestBadDurationSaysForm(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--duration", "soon"},
		{"run", "--trace", "--trace-above", "nope"},
		{"monitor", "--rotate", "5"},
	} {
		r := latencytest(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, args[len(args)-2]) || !strings.Contains(r.stderr, "allowed a number and a unit") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	r := latencytest(t, "frobnicate")
	if r.code != 2 || !strings.Contains(r.stderr, "allowed") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// The main job end to end: periods counted = duration × rate / period.
func TestRunTimerIdleCountsPeriods(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	hist := filepath.Join(t.TempDir(), "hist.txt")
	// Sixteen periods of buffer and no DSP load: only a wakeup later than
	// 20 ms would be an xrun and restart the grid.
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "3s", "--cpu-load", "0", "--periods", "16", "--out", out, "--histfile", hist, "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	if run.Interrupted || len(run.Phases) != 1 {
		t.Fatalf("run: interrupted %v, %d phases", run.Interrupted, len(run.Phases))
	}
	ph := run.Phases[0]
	if ph.Latency.Max <= 0 || ph.Latency.Min > ph.Latency.P50 || ph.Latency.P50 > ph.Latency.P99 || ph.Latency.P99 > ph.Latency.Max {
		t.Errorf("latency stats out of order: %+v", ph.Latency)
	}
	if !run.Simulated || run.Driver != "timer" || run.PeriodFrames != 64 || run.Rate != 48000 {
		t.Errorf("run header: %+v", run)
	}
	samples := readSamples(t, out, ph)
	if int64(len(samples)) != ph.Periods {
		t.Errorf("samples file holds %d periods, run.json says %d", len(samples), ph.Periods)
	}
	// Every period of the 3 s is counted but those an xrun lost. An xrun
	// here is a wakeup 20 ms late, which this shared host's own stalls of
	// a vCPU can reach (docs/notes/benchmarks.md, "Where the tail comes from";
	// the race-detector CI run met one): each must be as long as the write
	// came after the buffer ran dry.
	const periodNS = int64(64) * 1e9 / 48000
	for _, s := range samples {
		if s.Xrun != 0 {
			t.Logf("xrun at period %d: woke %.2f ms after due, %.2f ms dry", s.Index, float64(s.Latency())/1e6, float64(s.Xrun)/1e6)
			if dry := timer.Xrun(s.Due, s.Woke, 16, periodNS); dry > s.Xrun {
				t.Errorf("period %d woke %d ns after due, %d ns after the buffer ran dry: its xrun is %d ns", s.Index, s.Latency(), dry, s.Xrun)
			}
		}
	}
	lost, _ := rundata.StreamLost(samples, periodNS)
	want := (3e9 - float64(lost)) / float64(periodNS)
	if d := float64(ph.Periods) - want; d > 0.02*want || d < -0.02*want {
		t.Errorf("counted %d periods, want %.0f ± 2 %% (3 s less %.1f ms lost to %d xruns)", ph.Periods, want, float64(lost)/1e6, ph.Xruns)
	}
	// The summary line, cyclictest style.
	if !strings.Contains(r.stdout, "T: idle") || !strings.Contains(r.stdout, fmt.Sprintf("C:%8d", ph.Periods)) {
		t.Errorf("summary: %q", r.stdout)
	}
	h, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(h), "# Histogram\n000000 ") || !strings.Contains(string(h), fmt.Sprintf("# Total: %09d", ph.Periods-int64(ph.Overflow))) {
		t.Errorf("histfile:\n%s", h)
	}
}

// A stall injected into the engine reads back at its length, at its
// period, as one xrun of the stall minus what the buffer held.
func TestRunStallReadsBack(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "2s", "--cpu-load", "0",
		"--period", "256", "--periods", "8", "--test-stall", "100:300ms", "--out", out, "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	ph := run.Phases[0]
	samples := readSamples(t, out, ph)
	s := samples[100]
	if lat := s.Latency(); lat < 300e6 || lat > 350e6 {
		t.Errorf("period 100: latency %.3f ms, want 300 ms", float64(lat)/1e6)
	}
	// At the right time: period 100 is due 101 periods after the start.
	period := int64(256) * 1e9 / 48000
	if d := s.Due - (ph.StartMonoNS + 101*period); d < -rundata.DueTolerance || d > rundata.DueTolerance {
		t.Errorf("period 100 due %d ns off its place on the grid", d)
	}
	checkOneXrun(t, run, samples, 300e6)
	if !strings.Contains(r.stderr, "underrun!!! (at least") {
		t.Errorf("no aplay-style underrun line in %q", r.stderr)
	}
}

// checkOneXrun asserts the run has exactly one xrun, of the stall minus
// the part of the buffer that was still queued (± 20 %). The tests give
// the buffer 8 periods so that the machine's own noise makes no other.
func checkOneXrun(t *testing.T, run *rundata.Run, samples []rundata.Sample, stall float64) {
	t.Helper()
	var xruns []rundata.Sample
	for _, s := range samples {
		if s.Xrun > 0 {
			xruns = append(xruns, s)
		}
	}
	if len(xruns) != 1 || run.Phases[0].Xruns != 1 {
		t.Fatalf("%d xruns in samples, %d in run.json, want exactly 1", len(xruns), run.Phases[0].Xruns)
	}
	want := stall - run.BufferUS*1000
	if x := float64(xruns[0].Xrun); x < 0.8*want || x > 1.2*want {
		t.Errorf("xrun %.3f ms, want %.3f ms ± 20 %%", x/1e6, want/1e6)
	}
}

// engineOf finds the engine process that the run process pid started.
func engineOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pids := children(pid, "__engine"); len(pids) > 0 {
			return pids[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no engine process under %d", pid)
	return 0
}

// children lists the processes whose parent is ppid and whose command line
// contains word.
func children(ppid int, word string) []int {
	var pids []int
	for pid, pp := range parents() {
		if pp != ppid {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if bytes.Contains(cmd, []byte(word)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parents maps every process to its parent, from one pass over /proc.
func parents() map[int]int {
	out := map[int]int{}
	ps, _ := child.Processes()
	for _, p := range ps {
		out[p.Pid] = p.PPid
	}
	return out
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	st, ok := procfile.ParseStat(stat)
	return ok && st.State != "Z"
}

// SIGSTOP of the engine process for 300 ms is one xrun of 300 ms minus the
// buffer, the stall the users reproduce by hand.
func TestRunSIGSTOPOfEngineIsOneXrun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "3s", "--cpu-load", "0",
		"--period", "256", "--periods", "8", "--out", out, "--no-report", "--quiet")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eng := engineOf(t, cmd.Process.Pid)
	time.Sleep(time.Second)
	// The stall is as long as the engine was stopped: timed here, since on
	// a loaded machine the sleep between the signals can overshoot.
	t0 := monotonic()
	syscall.Kill(eng, syscall.SIGSTOP)
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(eng, syscall.SIGCONT)
	stopped := monotonic() - t0
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, se.String())
	}
	run := readRun(t, out)
	checkOneXrun(t, run, readSamples(t, out, run.Phases[0]), float64(stopped))
}

// Ctrl-C keeps what was measured, marks the run interrupted, and leaves
// no process behind.
func TestRunInterruptKeepsMeasurement(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		out := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle,idle", "--duration", "30s", "--out", out, "--no-report")
		var se bytes.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eng := engineOf(t, cmd.Process.Pid)
		time.Sleep(racetest.Slow * 1500 * time.Millisecond)
		cmd.Process.Signal(sig)
		sent := time.Now()
		err := cmd.Wait()
		if took := time.Since(sent); took > 3*time.Second {
			t.Errorf("%v: the run took %v to stop", sig, took)
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
			t.Errorf("%v: exit %v, want 130", sig, err)
		}
		if alive(eng) {
			t.Errorf("%v: engine %d still running", sig, eng)
		}
		run := readRun(t, out)
		if !run.Interrupted || len(run.Phases) != 1 {
			t.Fatalf("%v: interrupted %v with %d phases, want true and 1", sig, run.Interrupted, len(run.Phases))
		}
		ph := run.Phases[0]
		if ph.Periods < 500 || int64(len(readSamples(t, out, ph))) != ph.Periods {
			t.Errorf("%v: kept %d periods", sig, ph.Periods)
		}
		if tmp, _ := filepath.Glob(filepath.Join(out, ".*tmp*")); len(tmp) > 0 {
			t.Errorf("%v: temporary files left: %v", sig, tmp)
		}
	}
}

// If the parent dies without a chance to clean up, the engine dies too.
func TestEngineDiesWithParent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "30s", "--out", out, "--quiet", "--no-report")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eng := engineOf(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(2 * time.Second)
	for alive(eng) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(eng) {
		syscall.Kill(eng, syscall.SIGKILL)
		t.Fatal("the engine outlived its parent")
	}
}

// Phases run in the order asked, each with its load's figures, and the
// loads leave no process behind. hackbench runs one group of 10 loops a
// round: on a loaded 2-core host (load average 7-24) two groups of 100,
// and of 20, completed no round in the 2 s phase in 3 of 12 tries (a
// round takes 0.15-0.26 s alone, and the first waits for 40 forks per
// group beside the engine), and the test needs some.
func TestRunPhasesWithLoads(t *testing.T) {
	if racetest.Enabled {
		// hackbench forks its 80 workers from a race-built process:
		// measured, 2 rounds in a 20 s phase (a round every 2.3 s
		// without -race on the same machine), none in this test's
		// phase. The figure would be the detector's, not the load's.
		t.Skip("hackbench's rounds under the race detector measure the detector")
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle,proc,hackbench", "--duration", "2s",
		"--hackbench-groups", "1", "--hackbench-loops", "10", "--periods", "8", "--out", out, "--no-report", "--quiet")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, se.String())
	}
	run := readRun(t, out)
	var names []string
	for _, ph := range run.Phases {
		names = append(names, ph.Name)
	}
	if strings.Join(names, ",") != "idle,proc,hackbench" {
		t.Fatalf("phases %v", names)
	}
	for _, ph := range run.Phases {
		if ph.Skipped != "" || ph.Periods < 1000 {
			t.Errorf("%s: skipped %q, %d periods", ph.Name, ph.Skipped, ph.Periods)
		}
	}
	if run.Phases[0].Stressor != "" || run.Phases[0].StressorStats != nil {
		t.Errorf("idle has a load: %q %v", run.Phases[0].Stressor, run.Phases[0].StressorStats)
	}
	if st := run.Phases[1].StressorStats; run.Phases[1].Stressor != "proc" || !(asFloat(st["files_per_s"]) > 0) {
		t.Errorf("proc stats %v", st)
	}
	if st := run.Phases[2].StressorStats; run.Phases[2].Stressor != "hackbench" || !(asFloat(st["rounds"]) > 0) {
		t.Errorf("hackbench stats %v", st)
	}
	// Each round's time on the terminal as hackbench prints it, the
	// same rounds as in run.json.
	var want []string
	rounds, _ := run.Phases[2].StressorStats["round_time_s"].([]any)
	for _, r := range rounds {
		want = append(want, fmt.Sprintf("[hackbench] Time: %.3f", asFloat(r)))
	}
	got := regexp.MustCompile(`(?m)^\[hackbench\] Time: .*$`).FindAllString(se.String(), -1)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("hackbench Time lines %q, want %q (the rounds in run.json)", got, want)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err == nil {
		t.Error("index.html written despite --no-report")
	}
	if left := children(pid, ""); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
	// Phases are written in run order, one samples file each.
	for i, ph := range run.Phases {
		if want := fmt.Sprintf("samples/%02d-%s.bin", i+1, ph.Name); ph.SamplesFile != want {
			t.Errorf("phase %d samples file %q, want %q", i, ph.SamplesFile, want)
		}
	}
}

func asFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

// A phase whose load cannot start here is skipped with the reason, and
// the run goes on.
func TestRunSkipsLoadThatCannotStart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "disk-write,idle", "--duration", "1s",
		"--disk-dir", filepath.Join(t.TempDir(), "gone"), "--out", out, "--no-report", "--quiet")
	if r.code == 0 {
		run := readRun(t, out)
		if len(run.Phases) != 2 || run.Phases[0].Skipped == "" || run.Phases[1].Periods == 0 {
			t.Fatalf("phases %+v", run.Phases)
		}
		if !strings.Contains(r.stderr, "[disk-write] skipped:") || !strings.Contains(r.stdout, "T: disk-write skipped:") {
			t.Errorf("the skip is not on the terminal: %q %q", r.stderr, r.stdout)
		}
		return
	}
	// A --disk-dir that is missing may also be refused up front.
	if r.code != 2 || !strings.Contains(r.stderr, "--disk-dir") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
