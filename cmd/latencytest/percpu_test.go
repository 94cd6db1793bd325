package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"latencytest/cyclictest"
	"latencytest/internal/threads"
	"latencytest/rundata"
)

// run --cpus end to end: one SCHED_FIFO thread per CPU asked, each pinned
// to its CPU (its affinity read from /proc while the phase runs, and
// run.json's record of it the same thread); a stall injected into one
// CPU's loop shows in that CPU's figures and samples only; each CPU
// counts duration × rate / period periods, and the phase their sum; the
// terminal says where the threads are and has a T: line per CPU; the
// histogram file has a column per CPU, laid out as cyclictest -t's.
func TestRunCPUsPinnedStallOnItsCPUAndCounted(t *testing.T) {
	allowed, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Fatalf("allowed CPUs %v: the test needs two (CI machines have them)", allowed)
	}
	// The stalled CPU listed first: the threads are in the order asked,
	// not the CPUs' numbers.
	quiet, stalled := allowed[0], allowed[1]
	const stall = 100 * time.Millisecond
	out := filepath.Join(t.TempDir(), "out")
	hist := filepath.Join(t.TempDir(), "hist")
	// 5.3 ms periods, 32 of buffer (171 ms): neither the stall nor this
	// host's own vCPU stalls make an xrun, so no stream time is lost.
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "3s", "--cpu-load", "0",
		"--period", "256", "--periods", "32", "--cpus", fmt.Sprintf("%d,%d", stalled, quiet),
		"--test-stall", fmt.Sprintf("100:%v@%d", stall, stalled), "--out", out, "--histfile", hist, "--no-report")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	engine := engineOf(t, cmd.Process.Pid)
	var pinned map[string]string // tid -> Cpus_allowed_list of each SCHED_FIFO thread
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && len(pinned) < 2; time.Sleep(50 * time.Millisecond) {
		pinned = fifoThreads(engine)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if len(pinned) != 2 {
		t.Fatalf("engine's SCHED_FIFO threads and their CPUs: %v; want one on each of %d and %d", pinned, stalled, quiet)
	}
	ph := readRun(t, out).Phases[0]
	if len(ph.CPUs) != 2 || ph.CPUs[0].CPU != stalled || ph.CPUs[1].CPU != quiet {
		t.Fatalf("run.json cpus %+v, want %d then %d", ph.CPUs, stalled, quiet)
	}
	const periodNS = int64(256) * 1e9 / 48000
	var sum int64
	for _, c := range ph.CPUs {
		if got := pinned[strconv.Itoa(c.TID)]; got != strconv.Itoa(c.CPU) {
			t.Errorf("CPU %d: its thread %d ran on CPUs %q (from /proc), want %d", c.CPU, c.TID, got, c.CPU)
		}
		if o := c.RT.Obtained; !slices.Equal(o.Affinity, []int{c.CPU}) || o.Policy != "SCHED_FIFO" {
			t.Errorf("CPU %d: run.json says it obtained %+v", c.CPU, o)
		}
		samples := readSamples(t, out, c.Phase)
		if int64(len(samples)) != c.Periods {
			t.Errorf("CPU %d: samples file holds %d periods, run.json says %d", c.CPU, len(samples), c.Periods)
		}
		lost, _ := rundata.StreamLost(samples, periodNS)
		want := (3e9 - float64(lost)) / float64(periodNS)
		if d := float64(c.Periods) - want; d > 0.02*want || d < -0.02*want {
			t.Errorf("CPU %d: counted %d periods, want %.0f ± 2 %% (3 s less %.1f ms lost to %d xruns)", c.CPU, c.Periods, want, float64(lost)/1e6, c.Xruns)
		}
		sum += c.Periods
		worst := slices.MaxFunc(samples, func(a, b rundata.Sample) int { return int(a.Latency() - b.Latency()) })
		switch {
		case c.CPU == stalled && (worst.Index != 100 || worst.Latency() < int64(stall)):
			t.Errorf("CPU %d (stalled): worst wakeup period %d, %.1f ms; want period 100, ≥ %v", c.CPU, worst.Index, float64(worst.Latency())/1e6, stall)
		case c.CPU == quiet && worst.Latency() >= int64(stall)/2:
			t.Errorf("CPU %d (not stalled): period %d woke %.1f ms late: the other CPU's stall leaked here", c.CPU, worst.Index, float64(worst.Latency())/1e6)
		}
		line := fmt.Sprintf("T:%2d (%7d) P:80 I:5333 C:%8d ", c.CPU, c.TID, c.Periods)
		if !strings.Contains(stdout.String(), line) {
			t.Errorf("CPU %d: no line %q in the summary:\n%s", c.CPU, line, stdout.String())
		}
	}
	if want := fmt.Sprintf(", a thread pinned to each of CPUs %d,%d", stalled, quiet); !strings.Contains(stderr.String(), want) {
		t.Errorf("the stream's line does not say %q:\n%s", want, stderr.String())
	}
	if ph.Periods != sum || ph.SamplesFile != "" {
		t.Errorf("phase: %d periods, samples file %q; want the CPUs' %d and none of its own", ph.Periods, ph.SamplesFile, sum)
	}
	if ph.Latency.Max < stall.Seconds()*1e6 {
		t.Errorf("phase max %.0f µs: the stall on CPU %d is not in the figures of every CPU", ph.Latency.Max, stalled)
	}
	checkHistFileCPUs(t, hist, ph)
}

// checkHistFileCPUs reads run --cpus's histogram file back: a column per
// CPU in --cpus order, each with that CPU's periods and maximum, in the
// layout of cyclictest -t2 --histfile (rt-tests' own file, the fixture).
func checkHistFileCPUs(t *testing.T, path string, ph rundata.Phase) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hf, err := cyclictest.ParseHistFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(hf.PerColumn) != len(ph.CPUs) {
		t.Fatalf("histogram file has %d columns, want one per CPU (%d)", len(hf.PerColumn), len(ph.CPUs))
	}
	for k, c := range ph.CPUs {
		col := hf.PerColumn[k]
		maxUS := rundata.BinOf(int64(c.Latency.Max*1000 + 0.5))
		if col.Count != uint64(c.Periods) || rundata.BinOf(col.MaxNS) != maxUS {
			t.Errorf("column %d: %d periods, max %d µs; CPU %d has %d periods, max %d µs", k, col.Count, col.MaxNS/1000, c.CPU, c.Periods, maxUS)
		}
	}
	ref, err := os.ReadFile("../../cyclictest/testdata/cyclictest-2threads.hist")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := histLayout(b), histLayout(ref); !slices.Equal(got, want) {
		t.Errorf("histogram file's layout %q, want cyclictest's %q", got, want)
	}
}

// histLayout is a histogram file's shape: each "#" line's key with its
// number of values (the overflow cycle numbers aside), and each run of
// bin lines as its number of columns.
func histLayout(b []byte) []string {
	var shape []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		item := fmt.Sprintf("bins×%d", len(strings.Fields(line))-1)
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			k, v, _ := strings.Cut(rest, ":")
			item = strings.TrimSpace(k)
			if !strings.HasPrefix(item, "Thread") {
				item += fmt.Sprintf("×%d", len(strings.Fields(v)))
			}
		}
		if len(shape) == 0 || shape[len(shape)-1] != item {
			shape = append(shape, item)
		}
	}
	return shape
}

// fifoThreads is each SCHED_FIFO thread of pid with the CPUs it may run
// on, as the kernel has them.
func fifoThreads(pid int) map[string]string {
	got := map[string]string{}
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	for _, task := range tasks {
		if !fifo(pid, task.Name()) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "status"))
		if err == nil {
			got[task.Name()] = fieldOf(st, "Cpus_allowed_list")
		}
	}
	return got
}

// --cpus takes all, or a list of CPUs that exist and that the process
// may run on; anything else is bad input naming the flag and what is
// allowed.
func TestCPUsOf(t *testing.T) {
	possible := []int{0, 1, 2, 3}
	cases := []struct {
		in      string
		allowed []int
		want    []int
		err     string // in the error; "" for none
	}{
		{"all", []int{1, 3}, []int{1, 3}, ""},
		{"3,1", []int{1, 3}, []int{3, 1}, ""},
		{"1-3", possible, []int{1, 2, 3}, ""},
		{"2", []int{1, 3}, nil, "CPU 2 is not allowed to this process (its affinity allows 1,3)"},
		{"7", possible, nil, "no CPU 7 on this machine (CPUs 0-3)"},
		{"one", possible, nil, "allowed all or a CPU list"},
		{"", possible, nil, "allowed all or a CPU list"},
	}
	for _, c := range cases {
		got, err := cpusOf(c.in, c.allowed, possible)
		switch {
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("--cpus %q (allowed %v): %v, %v; want %v", c.in, c.allowed, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "--cpus ")):
			t.Errorf("--cpus %q (allowed %v): error %v; want --cpus … %s", c.in, c.allowed, err, c.err)
		}
	}
}

// Under run --cpus, --loops counts each CPU's periods, as cyclictest -l
// counts each thread's, and --break-above ends every CPU's loop and the
// run at the first late wakeup on any CPU, which is named.
func TestRunCPUsLoopsAndBreak(t *testing.T) {
	allowed, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Fatalf("allowed CPUs %v: the test needs two (CI machines have them)", allowed)
	}
	cpus := fmt.Sprintf("%d,%d", allowed[0], allowed[1])
	out := filepath.Join(t.TempDir(), "loops")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--loops", "300", "--cpu-load", "0", "--periods", "32",
		"--cpus", cpus, "--out", out, "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	ph := readRun(t, out).Phases[0]
	for _, c := range ph.CPUs {
		if c.Periods != 300 {
			t.Errorf("--loops 300: CPU %d counted %d periods", c.CPU, c.Periods)
		}
	}
	if len(ph.CPUs) != 2 || ph.Periods != 600 {
		t.Errorf("--loops 300 on 2 CPUs: %d CPUs, %d periods in all", len(ph.CPUs), ph.Periods)
	}

	out = filepath.Join(t.TempDir(), "break")
	r = latencytest(t, "run", "--driver", "timer", "--tests", "idle,idle", "--duration", "5s", "--cpu-load", "0", "--periods", "64",
		"--cpus", cpus, "--break-above", "150ms", "--test-stall", fmt.Sprintf("100:200ms@%d", allowed[1]), "--out", out, "--no-report")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	if len(run.Phases) != 1 {
		t.Fatalf("%d phases ran; the break should have ended the run in the first", len(run.Phases))
	}
	ph = run.Phases[0]
	if b := ph.Break; b == nil || b.Period != 100 || b.LatencyNS < 150e6 {
		t.Fatalf("phase break %+v, want period 100, ≥ 150 ms", b)
	}
	for _, c := range ph.CPUs {
		switch {
		case c.CPU == allowed[1] && (c.Break == nil || c.Break.Period != 100):
			t.Errorf("CPU %d (stalled): break %+v, want period 100", c.CPU, c.Break)
		case c.CPU != allowed[1] && c.Break != nil:
			t.Errorf("CPU %d broke too (%+v), without a stall", c.CPU, c.Break)
		case c.CPU != allowed[1] && c.Periods > 400:
			t.Errorf("CPU %d measured %d periods: it ran on after the other CPU broke at period 100", c.CPU, c.Periods)
		}
	}
}

// A run --cpus killed in its phase leaves each CPU's samples file and
// run.json's record of each thread (its tid, its affinity as obtained),
// and the report recovers the phase's figures from the files: stats.csv shows for
// each CPU as many periods as its file holds, and for the phase their
// sum.
func TestRunCPUsKilledIsRecovered(t *testing.T) {
	allowed, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Fatalf("allowed CPUs %v: the test needs two (CI machines have them)", allowed)
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "30s", "--cpu-load", "0", "--periods", "32",
		"--cpus", fmt.Sprintf("%d,%d", allowed[0], allowed[1]), "--out", out, "--no-report", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	engineOf(t, cmd.Process.Pid)
	time.Sleep(2 * time.Second) // a flush of each file at least
	cmd.Process.Kill()
	cmd.Wait()
	if r := latencytest(t, "report", out); r.code != 0 {
		t.Fatalf("report exit %d: %s", r.code, r.stderr)
	}
	ph := readRun(t, out).Phases[0]
	if !ph.Incomplete || len(ph.CPUs) != 2 {
		t.Fatalf("run.json: phase incomplete %v, %d CPUs; want the killed phase's two", ph.Incomplete, len(ph.CPUs))
	}
	csvPeriods := statsPeriods(t, out) // the phase's row, then a row per CPU
	if len(csvPeriods) != 3 {
		t.Fatalf("stats.csv: %d rows, want the phase's and one per CPU", len(csvPeriods))
	}
	var sum int64
	for k, c := range ph.CPUs {
		if c.TID == 0 || !slices.Equal(c.RT.Obtained.Affinity, []int{c.CPU}) {
			t.Errorf("CPU %d: the killed run's run.json has thread %d, affinity obtained %v; want where the thread ran", c.CPU, c.TID, c.RT.Obtained.Affinity)
		}
		n := int64(len(readSamples(t, out, c.Phase)))
		if n == 0 || csvPeriods[k+1] != n {
			t.Errorf("CPU %d: the report shows %d periods, its samples file holds %d", c.CPU, csvPeriods[k+1], n)
		}
		sum += n
	}
	if csvPeriods[0] != sum {
		t.Errorf("the phase: the report shows %d periods, its CPUs' files hold %d", csvPeriods[0], sum)
	}
}

// --affinity takes CPUs by the kernel's numbers: a process limited to
// CPUs 2 and 3 may pin to 3 (runtime.NumCPU, 2 there, once capped it at
// 1), and not to 1.
func TestAffinityByKernelNumbers(t *testing.T) {
	possible, allowed := []int{0, 1, 2, 3}, []int{2, 3}
	if got, err := cpuList("--affinity", "a CPU list", "3", allowed, possible); err != nil || !slices.Equal(got, []int{3}) {
		t.Errorf("--affinity 3 allowed 2,3: %v, %v; want [3]", got, err)
	}
	if _, err := cpuList("--affinity", "a CPU list", "1", allowed, possible); err == nil || !strings.HasPrefix(err.Error(), "--affinity 1: CPU 1 is not allowed") {
		t.Errorf("--affinity 1 allowed 2,3: %v; want CPU 1 not allowed", err)
	}
}
