//go:build !race

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Not under the race detector: its shadow memory is faulted in on first
// use, by the loop's thread too, so the loop does take page faults there.

// The engine's loop thread takes no page fault and runs no signal handler
// while it measures, even through an xrun and the stream's recovery (a
// stall injected at period 1500, 2 s into the run): set-up touched its
// stack and locked the program's code, and the thread blocks every
// asynchronous signal. Needs SCHED_FIFO (root) to tell the loop's thread
// from the runtime's.
func TestEngineLoopThreadIsQuiet(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(binary, "run", "--driver", "timer", "--tests", "idle", "--duration", "4s",
		"--cpu-load", "50", "--periods", "4", "--test-stall", "1500:200ms", "--out", out, "--no-report", "--quiet")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	eng := engineOf(t, cmd.Process.Pid)
	time.Sleep(time.Second)
	loop, faults0 := fifoThread(t, eng)
	before := monotonic()
	if loop == 0 {
		t.Skip("no SCHED_FIFO thread in the engine (not root?)")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGURG, syscall.SIGCHLD} {
		var mask uint64
		fmt.Sscanf(taskStatusField(eng, loop, "SigBlk"), "%x", &mask)
		if mask&(1<<(sig-1)) == 0 {
			t.Errorf("%v not blocked on the loop's thread (SigBlk %016x)", sig, mask)
		}
	}
	if size, rss := codeResidency(t, eng); size == 0 || rss != size {
		t.Errorf("%d of the program's %d kB of code resident", rss, size)
	}
	time.Sleep(2300 * time.Millisecond)
	_, faults1 := fifoThread(t, eng)
	after := monotonic()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, se.String())
	}
	if faults1 != faults0 {
		t.Errorf("%d page faults on the loop's thread while it measured", faults1-faults0)
	}
	run := readRun(t, out)
	ss := readSamples(t, out, run.Phases[0])
	if len(ss) <= 1500 || ss[1500].Xrun == 0 || ss[1500].Due < before || ss[1500].Woke > after {
		t.Fatalf("no xrun at period 1500 between the two readings")
	}
}

// fifoThread finds the engine's SCHED_FIFO thread and its page faults
// (minor and major) so far; 0 when there is none.
func fifoThread(t *testing.T, pid int) (tid int, faults int64) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue
		}
		// After the command: state is field 3; minflt 10, majflt 12,
		// policy 41.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 38 && f[38] == "1" { // SCHED_FIFO
			var minflt, majflt int64
			fmt.Sscan(f[7], &minflt)
			fmt.Sscan(f[9], &majflt)
			fmt.Sscan(task.Name(), &tid)
			return tid, minflt + majflt
		}
	}
	return 0, 0
}

func taskStatusField(pid, tid int, name string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
	return fieldOf(b, name)
}

// codeResidency is the size and the resident part, kB, of the mapping of
// the engine's code (the executable's r-xp mapping).
func codeResidency(t *testing.T, pid int) (size, rss int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-") && f[1] == "r-xp" && f[5] == binary:
			in = true
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4:
			in = false
		case in && len(f) == 3 && f[0] == "Size:":
			fmt.Sscan(f[1], &size)
		case in && len(f) == 3 && f[0] == "Rss:":
			fmt.Sscan(f[1], &rss)
		}
	}
	return size, rss
}
