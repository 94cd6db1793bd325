package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/procfile"
	"latencytest/internal/threads"
	"latencytest/runner"
)

// With the audio thread pinned (--affinity), latencytest's own work runs
// on the other CPUs: every thread of the parent and of the engine process
// but the audio thread, read from /proc while a phase runs; the audio
// thread on its CPU; the stressor on every CPU. run.json says where.
func TestRunKeepsOwnWorkOffAudioCPU(t *testing.T) {
	all, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("allowed CPUs %v: the test needs two", all)
	}
	audioCPU := all[len(all)-1]
	own := threads.Without(all, []int{audioCPU})
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "cpu", "--duration", "3s", "--affinity", strconv.Itoa(audioCPU),
		"--cpu-load", "0", "--period", "256", "--out", out, "--no-report")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Checked once the phase runs: its engine has its audio thread. The
	// phase starts after the system check and the engine's start, which
	// on a busy machine took more than the phase's 3 s: wait for it.
	var seen map[string]int
	var bad []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if seen, bad = checkTree(cmd.Process.Pid, threads.Format(all), threads.Format(own), strconv.Itoa(audioCPU)); seen["audio"] > 0 && seen["stress"] > 0 {
			break
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
	if seen["parent"] == 0 || seen["engine"] == 0 || seen["audio"] != 1 || seen["stress"] == 0 {
		t.Errorf("threads seen: %v; want the parent's, the engine's, one audio thread and the stressor's", seen)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if r := readRun(t, out); !reflect.DeepEqual(r.OwnCPUs, own) {
		t.Errorf("run.json own_cpus %v, want %v", r.OwnCPUs, own)
	}
	if !strings.Contains(stderr.String(), "latencytest's own work on "+threads.Format(own)) {
		t.Errorf("the terminal does not say where latencytest's own work ran:\n%s", stderr.String())
	}
}

// checkTree checks the CPU affinity of every thread of pid and its
// descendants, counts what it saw ("parent", "engine" and "stress"
// threads other than the audio thread, and "audio": the engine's
// SCHED_FIFO thread), and says which thread ran where it should not.
func checkTree(root int, all, own, audio string) (seen map[string]int, bad []string) {
	seen = map[string]int{}
	for _, pid := range append([]int{root}, descendants(root)...) {
		args, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		role := "parent"
		switch a := strings.Split(string(args), "\x00"); {
		case pid == root:
		case len(a) > 1 && a[1] == runner.EngineCommand:
			role = "engine"
		case len(a) > 1 && a[1] == "stress":
			role = "stress"
		default:
			continue // the stressor's own children
		}
		tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		for _, task := range tasks {
			// The policy is read before the affinity: the engine pins
			// its audio thread before making it real-time, so a thread
			// seen SCHED_FIFO is one already pinned when its affinity
			// is read after (read the other way round, a thread pinned
			// and raised between the two reads looks unpinned).
			rt := role == "engine" && fifo(pid, task.Name())
			st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "status"))
			if err != nil {
				continue
			}
			cpus := fieldOf(st, "Cpus_allowed_list")
			r, want := role, map[string]string{"parent": own, "engine": own, "stress": all}[role]
			if rt {
				r, want = "audio", audio
			}
			seen[r]++
			if cpus != want {
				bad = append(bad, fmt.Sprintf("%s thread %d/%s on CPUs %s, want %s", r, pid, task.Name(), cpus, want))
			}
		}
	}
	return seen, bad
}

// fifo reports whether the thread runs SCHED_FIFO (field 41 of stat).
func fifo(pid int, tid string) bool {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", tid, "stat"))
	if err != nil {
		return false
	}
	s, ok := procfile.ParseStat(st)
	return ok && s.Sched && s.Policy == unix.SCHED_FIFO
}

// The engine's threads but the loop's run with a coarse timer slack once
// set up, so that Go's sysmon wakes with other work; the loop keeps the
// slack it inherited. Run as SCHED_OTHER, where slack applies (a real-time
// thread has none): exactly one engine thread has the parent's slack, and
// it is the one that wakes every period.
func TestEngineTimerSlack(t *testing.T) {
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "3s", "--prio", "0",
		"--cpu-load", "0", "--out", filepath.Join(t.TempDir(), "out"), "--no-report", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	engine := engineOf(t, cmd.Process.Pid)
	time.Sleep(time.Second) // the loop runs
	type thread struct {
		tid           string
		slack, wakeup int64
	}
	var loops, others []thread
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(engine), "task"))
	for _, task := range tasks {
		slack, err1 := os.ReadFile(filepath.Join("/proc", task.Name(), "timerslack_ns"))
		sched, err2 := os.ReadFile(filepath.Join("/proc", strconv.Itoa(engine), "task", task.Name(), "schedstat"))
		if err1 != nil || err2 != nil {
			continue // ended meanwhile
		}
		th := thread{tid: task.Name()}
		th.slack, _ = strconv.ParseInt(strings.TrimSpace(string(slack)), 10, 64)
		if f := strings.Fields(string(sched)); len(f) == 3 {
			th.wakeup, _ = strconv.ParseInt(f[2], 10, 64)
		}
		if th.slack == int64(own) {
			loops = append(loops, th)
		} else {
			others = append(others, th)
		}
	}
	if len(loops) != 1 || len(others) == 0 {
		t.Fatalf("engine threads with the parent's slack %d ns: %v; others: %v; want the loop alone", own, loops, others)
	}
	for _, o := range others {
		if o.slack != int64(audio.OthersSlack) {
			t.Errorf("engine thread %s: timer slack %d ns, want %d", o.tid, o.slack, audio.OthersSlack)
		}
		if o.wakeup >= loops[0].wakeup {
			t.Errorf("engine thread %s woke %d times, the loop's (%s) %d: the parent's slack is not on the loop", o.tid, o.wakeup, loops[0].tid, loops[0].wakeup)
		}
	}
}
