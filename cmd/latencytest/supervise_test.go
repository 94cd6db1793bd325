package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The run's children (internal/child) as the CLI shows them: in a PID
// namespace, with their powers, on Ctrl-C.

// needRoot fails under CI (which runs as root) and skips elsewhere.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root (unshare --pid)")
		}
		t.Skip("needs root (unshare --pid)")
	}
}

// As PID 1 of a PID namespace (a container) the run works: the engine
// tells its parent from init by the pid it was given, and the orphans of
// a load's command are reaped.
func TestRunAsPID1(t *testing.T) {
	needRoot(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", binary, "run", "--driver", "timer",
		"--tests", "idle,exec", "--exec-cmd", "sleep 0.3 & sleep 0.1", "--duration", "1s", "--periods", "8",
		"--out", out, "--no-report", "--quiet")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, se.String())
	}
	run := readRun(t, out)
	if len(run.Phases) != 2 {
		t.Fatalf("%d phases", len(run.Phases))
	}
	for _, ph := range run.Phases {
		if ph.Skipped != "" || ph.Periods < 500 || ph.StressorStats["error"] != nil {
			t.Errorf("%s: skipped %q, %d periods, stats %v", ph.Name, ph.Skipped, ph.Periods, ph.StressorStats)
		}
	}
	if runs := asFloat(run.Phases[1].StressorStats["runs"]); runs < 1 {
		t.Errorf("exec: %v runs", run.Phases[1].StressorStats)
	}
}

// The command of --exec-cmd finds no pipe of ours among its descriptors:
// only its stdin, stdout and stderr, and what it opens itself.
func TestExecCmdHasNoReportPipe(t *testing.T) {
	list := filepath.Join(t.TempDir(), "fds")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "exec", "--exec-cmd", "ls -l /proc/self/fd/ >"+list,
		"--duration", "1s", "--periods", "8", "--out", filepath.Join(t.TempDir(), "run"), "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue
		}
		seen++
		fd, _ := strconv.Atoi(f[len(f)-3])
		// A descriptor this test inherited itself (from whatever started
		// it) is not the run's to close.
		if own, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); own == f[len(f)-1] {
			continue
		}
		if fd > 2 && strings.HasPrefix(f[len(f)-1], "pipe:") {
			t.Errorf("the command inherited descriptor %d, a pipe:\n%s", fd, b)
		}
	}
	if seen < 3 {
		t.Errorf("listing has %d descriptors:\n%s", seen, b)
	}
}

// started runs latencytest with args and waits until its stderr says
// line; it returns the command and its stderr so far (complete after
// Wait).
// streamLine begins the timer driver's first line, said as its stream
// opens: a run waited for by it is measuring. (A phase's own "[idle]"
// lines come with its first xrun, or at its end: a machine quiet enough
// to have none would see the run over first.)
const streamLine = "timer (CLOCK_MONOTONIC):"

func started(t *testing.T, env []string, line string, args ...string) (*exec.Cmd, *watchedOutput) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	se := &watchedOutput{line: line, seen: make(chan struct{})}
	cmd.Stderr = se // exec copies into it, and Wait waits for the copy
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-se.seen:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no %q on stderr within 10 s", line)
	}
	return cmd, se
}

// watchedOutput keeps a process's output and says when a line has come.
type watchedOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line string
	seen chan struct{}
	once sync.Once
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.line) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// exitCode waits for cmd and returns its exit code and how long it took
// from since.
func exitCode(t *testing.T, cmd *exec.Cmd, since time.Time) (int, time.Duration) {
	t.Helper()
	err := cmd.Wait()
	took := time.Since(since)
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), took
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, took
}

// running lists the live processes whose command line contains word.
func running(word string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(word)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Ctrl-C while a load starts (an Xvfb that takes its time) stops the run
// within a second; no phase runs afterwards and nothing is left running.
func TestInterruptWhileLoadStarts(t *testing.T) {
	bin := t.TempDir()
	const marker = "31.4159"
	if err := os.WriteFile(filepath.Join(bin, "Xvfb"), []byte("#!/bin/sh\nexec sleep "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd, se := started(t, []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "DISPLAY="}, "[x11] starting the x11 load",
		"run", "--driver", "timer", "--tests", "x11,idle", "--duration", "1s", "--out", out, "--no-report", "--quiet")
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	code, took := exitCode(t, cmd, sent)
	t.Logf("stopped %v after the Ctrl-C", took)
	if took > time.Second {
		t.Errorf("the run took %v to stop", took)
	}
	if code != 130 {
		t.Errorf("exit %d, want 130: %s", code, se.String())
	}
	if run := readRun(t, out); !run.Interrupted || len(run.Phases) != 0 {
		t.Errorf("interrupted %v, phases %+v; want no phase", run.Interrupted, run.Phases)
	}
	if strings.Contains(se.String(), "[idle]") {
		t.Errorf("a phase ran after the interrupt: %s", se.String())
	}
	if left := running(marker); len(left) > 0 {
		t.Errorf("the Xvfb being started is still running: %v", left)
	}
}

// The second Ctrl-C is never swallowed: while the first waits for an
// engine that does not stop, it exits at once, killing the children and
// removing their temporary directories.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	tmp := t.TempDir()
	const marker = "27.1828"
	cmd, se := started(t, []string{"TMPDIR=" + tmp}, "[exec] starting the exec load",
		"run", "--driver", "timer", "--tests", "exec", "--exec-cmd", "sleep "+marker, "--test-stall", "100:30s",
		"--duration", "30s", "--out", filepath.Join(t.TempDir(), "run"), "--no-report")
	eng := engineOf(t, cmd.Process.Pid)
	time.Sleep(500 * time.Millisecond) // the engine is inside its stall
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(repeatWindow + 200*time.Millisecond) // sooner, it is the same stop
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	code, took := exitCode(t, cmd, sent)
	t.Logf("exited %v after the second Ctrl-C", took)
	if took > time.Second {
		t.Errorf("the run took %v to exit after the second Ctrl-C", took)
	}
	if code != 130 {
		t.Errorf("exit %d, want 130: %s", code, se.String())
	}
	deadline := time.Now().Add(time.Second)
	for (alive(eng) || len(running(marker)) > 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(eng) {
		t.Errorf("engine %d still running", eng)
	}
	if left := running(marker); len(left) > 0 {
		t.Errorf("the load's command is still running: %v", left)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("temporary files left in %s: %v", tmp, ents)
	}
}

// An engine that does not stop on SIGTERM (here: stalled for an hour) gets
// SIGKILL after the grace period, and the run ends with what it measured.
func TestStuckEngineKilled(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cmd, se := started(t, nil, streamLine,
		"run", "--driver", "timer", "--tests", "idle", "--test-stall", "100:1h", "--duration", "30s",
		"--out", out, "--no-report")
	eng := engineOf(t, cmd.Process.Pid)
	time.Sleep(time.Second)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	code, took := exitCode(t, cmd, sent)
	t.Logf("stopped %v after the Ctrl-C (grace %v)", took, engineGraceForTest)
	if took > engineGraceForTest+time.Second {
		t.Errorf("the run took %v to stop", took)
	}
	if code != 130 || !strings.Contains(se.String(), "did not stop within") {
		t.Errorf("exit %d: %s", code, se.String())
	}
	if alive(eng) {
		t.Errorf("engine %d still running", eng)
	}
	run := readRun(t, out)
	if !run.Interrupted || len(run.Phases) != 1 || run.Phases[0].Periods < 90 {
		t.Fatalf("interrupted %v, phases %+v", run.Interrupted, run.Phases)
	}
}

// engineGraceForTest is runner's engineGrace.
const engineGraceForTest = 2 * time.Second
