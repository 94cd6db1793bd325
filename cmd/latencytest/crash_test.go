package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/rundata"
)

// killRun is one run of TestKillAtRandomInstants.
type killRun struct {
	at    time.Duration // kill instant after the start
	tree  bool          // the whole process tree, not only the parent
	phase string        // the phase that was running ("" : none had started)
	lag   time.Duration // kill instant − the last period kept (running phase)
}

// A run killed with SIGKILL at any instant — the parent alone (its engine
// and loads die with it by PDEATHSIG) or the whole process tree at once —
// leaves a results directory the report renders, holding every period
// measured up to 1 s before the kill. LATENCYTEST_KILLS sets the number of
// kills (scripts/killtest runs many more for docs/reliability.md).
func TestKillAtRandomInstants(t *testing.T) {
	kills := 20
	if s := os.Getenv("LATENCYTEST_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	const phaseLen = time.Second
	args := []string{"run", "--driver", "timer", "--tests", "idle,hackbench,idle", "--duration", phaseLen.String(),
		"--hackbench-groups", "2", "--periods", "8", "--no-report", "--quiet"}
	var runs []killRun
	for i := range kills {
		k := killRun{at: time.Duration(rand.Int64N(int64(3 * time.Second))), tree: i%2 == 1}
		out := filepath.Join(t.TempDir(), "run")
		cmd := exec.Command(binary, append(args, "--out", out)...)
		var se bytes.Buffer
		cmd.Stderr = &se
		startMono := monotonic()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(k.at)
		tree := descendants(cmd.Process.Pid)
		killMono := monotonic()
		k.at = time.Duration(killMono - startMono) // the sleep may end late on a loaded machine
		// The parent first: killed after its children, it could still
		// see them die and write a run.json of its own.
		cmd.Process.Kill()
		if k.tree {
			for _, pid := range tree {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := cmd.Wait()
		for _, pid := range tree { // what PDEATHSIG has not ended yet
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if err == nil {
			t.Fatalf("kill %d at %v (tree %v %v): the run had already ended (%v); make the run longer\n%s", i, k.at, k.tree, tree, cmd.ProcessState, se.String())
		}
		checkKilled(t, out, killMono, len(tree) > 0, phaseLen, &k)
		runs = append(runs, k)
	}
	logKills(t, runs)
}

// checkKilled checks one killed run's results directory and fills k.
func checkKilled(t *testing.T, out string, killMono int64, started bool, phaseLen time.Duration, k *killRun) {
	t.Helper()
	if _, err := os.Stat(out); errors.Is(err, fs.ErrNotExist) {
		// The directory appears with run.json in it, before any child
		// process starts: no directory means nothing was measured.
		if started {
			t.Errorf("kill at %v (tree %v): no results directory, yet the run had started children", k.at, k.tree)
		}
		return
	}
	if r := latencytest(t, "report", out); r.code != 0 {
		t.Fatalf("kill at %v (tree %v): report exit %d: %s", k.at, k.tree, r.code, r.stderr)
	}
	run := readRun(t, out)
	if !run.Incomplete || !run.End.IsZero() {
		t.Errorf("kill at %v: run.json incomplete %v, end %v; want true and none", k.at, run.Incomplete, run.End)
	}
	csvPeriods := statsPeriods(t, out)
	for i, ph := range run.Phases {
		if ph.Skipped != "" {
			t.Errorf("kill at %v: phase %s skipped: %s", k.at, ph.Name, ph.Skipped)
			continue
		}
		ss := readSamples(t, out, ph)
		if csvPeriods[i] != int64(len(ss)) {
			t.Errorf("kill at %v: phase %d: the report shows %d periods, its samples file holds %d", k.at, i, csvPeriods[i], len(ss))
		}
		if !ph.Incomplete {
			if ph.Periods != int64(len(ss)) {
				t.Errorf("kill at %v: ended phase %d: run.json %d periods, samples file %d", k.at, i, ph.Periods, len(ss))
			}
			continue
		}
		if i != len(run.Phases)-1 {
			t.Errorf("kill at %v: incomplete phase %d is not the last", k.at, i)
		}
		k.phase = ph.Name
		checkKept(t, out, k, ph, ss, killMono, phaseLen)
	}
}

// checkKept checks that the incomplete phase kept every period due until
// 1 s before the kill, or before its end if it had ended.
func checkKept(t *testing.T, out string, k *killRun, ph rundata.Phase, ss []rundata.Sample, killMono int64, phaseLen time.Duration) {
	t.Helper()
	if len(ss) == 0 {
		// The parent writes the header, whose first due instant is when
		// it learnt the stream opened, before it takes any period; an
		// empty file means it had not learnt it yet.
		f, err := os.Open(filepath.Join(out, ph.SamplesFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := rundata.NewSampleReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if r.Header.FirstDue == 0 {
			k.phase += " (not open)"
			return
		}
		k.lag = time.Duration(killMono - r.Header.FirstDue)
		if k.lag > time.Second {
			t.Errorf("kill at %v (tree %v): phase %s ran %v and kept no period", k.at, k.tree, ph.Name, k.lag)
		}
		return
	}
	first, last := ss[0].Due, ss[len(ss)-1].Due
	end := min(killMono, first+int64(phaseLen))
	k.lag = time.Duration(end - last)
	if k.lag > time.Second {
		t.Errorf("kill at %v (tree %v): phase %s lost the last %v before the kill (%d periods kept)", k.at, k.tree, ph.Name, k.lag, len(ss))
	}
	// The same in periods, as the issue states it: when no xrun restarted
	// the period grid, periods kept ≥ (elapsed − 1 s) × rate / period.
	periodNS := int64(64) * 1e9 / 48000
	if xruns := slices.ContainsFunc(ss, func(s rundata.Sample) bool { return s.Xrun != 0 }); !xruns {
		if want := (end - first - int64(time.Second)) / periodNS; int64(len(ss)) < want {
			t.Errorf("kill at %v (tree %v): phase %s kept %d periods, want at least %d", k.at, k.tree, ph.Name, len(ss), want)
		}
	}
}

// statsPeriods reads the periods column of the report's stats.csv.
func statsPeriods(t *testing.T, dir string) []int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "stats.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("stats.csv: %v", err)
	}
	col := slices.Index(recs[0], "periods")
	var out []int64
	for _, r := range recs[1:] {
		n, _ := strconv.ParseInt(r[col], 10, 64)
		out = append(out, n)
	}
	return out
}

// logKills summarises the kills, the figures docs/reliability.md quotes.
func logKills(t *testing.T, runs []killRun) {
	for _, tree := range []bool{false, true} {
		var lags []time.Duration
		byPhase := map[string]int{}
		n := 0
		for _, k := range runs {
			if k.tree != tree {
				continue
			}
			n++
			byPhase[k.phase]++
			if k.phase != "" && !strings.HasSuffix(k.phase, "(not open)") {
				lags = append(lags, k.lag)
			}
		}
		slices.Sort(lags)
		what := "parent"
		if tree {
			what = "whole tree"
		}
		t.Logf("kill -9 of the %s: %d kills, %d during a phase (by running phase: %v)", what, n, len(lags), byPhase)
		if len(lags) > 0 {
			t.Logf("  measured but not kept before the kill: median %v, p90 %v, max %v",
				lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)*9/10].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
		}
	}
}

// descendants lists every process below pid from one pass over /proc,
// quick enough to take just before a kill.
func descendants(pid int) []int {
	kids := map[int][]int{}
	for p, pp := range parents() {
		kids[pp] = append(kids[pp], p)
	}
	var all []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		all = append(all, kids[queue[0]]...)
		queue = append(queue, kids[queue[0]]...)
	}
	return all
}

func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
