package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// startAt starts a sleeping process named name at SCHED_FIFO prio.
func startAt(t *testing.T, name string, prio int) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: 1, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(cmd.Process.Pid, &attr, 0); err != nil {
		t.Fatalf("SCHED_FIFO %d for %s: %v (the audit test needs root or CAP_SYS_NICE)", prio, name, err)
	}
	return cmd.Process.Pid
}

// The real-time task audit lists a real SCHED_FIFO 85 task and flags it
// against an audio thread at 80, and lists one at 70 without the flag.
func TestCheckAuditsRealTimeTasks(t *testing.T) {
	hi, lo := startAt(t, "rtaudit85", 85), startAt(t, "rtaudit70", 70)
	r := latencytest(t, "check", "--prio", "80")
	if r.code != 0 {
		t.Fatalf("check: exit %d: %s", r.code, r.stderr)
	}
	row := func(pid, prio int, name string) *regexp.Regexp {
		p := strconv.Itoa(pid)
		return regexp.MustCompile(`(?m)^(.) +` + p + ` +` + p + `  SCHED_FIFO +` + strconv.Itoa(prio) + `  \S+ +` + name + `$`)
	}
	if m := row(hi, 85, "rtaudit85").FindStringSubmatch(r.stdout); m == nil || m[1] != "!" {
		t.Errorf("FIFO 85 task not listed and flagged (%q):\n%s", m, r.stdout)
	}
	if m := row(lo, 70, "rtaudit70").FindStringSubmatch(r.stdout); m == nil || m[1] != " " {
		t.Errorf("FIFO 70 task not listed unflagged (%q):\n%s", m, r.stdout)
	}
	if !regexp.MustCompile(`(?m)^WARN +real-time tasks .*rtaudit85 \(` + strconv.Itoa(hi) + `\) FIFO 85`).MatchString(r.stdout) {
		t.Errorf("no warning naming the FIFO 85 task:\n%s", r.stdout)
	}
	// At 90 neither can run first.
	r = latencytest(t, "check", "--prio", "90")
	if m := row(hi, 85, "rtaudit85").FindStringSubmatch(r.stdout); m == nil || m[1] != " " {
		t.Errorf("at --prio 90 the FIFO 85 task is flagged (%q):\n%s", m, r.stdout)
	}
	oneLine(t, latencytest(t, "check", "--prio", "100"), "check --prio 100")
	oneLine(t, latencytest(t, "check", "--affinity", "x"), "check --affinity x")
}

// run.json records the audit made at the start of the run, judged for the
// run's own priority.
func TestRunRecordsRealTimeTasks(t *testing.T) {
	hi := startAt(t, "rtaudit85", 85)
	out := filepath.Join(t.TempDir(), "out")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "1s", "--prio", "80", "--out", out, "--no-report", "--quiet")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	for _, tk := range readRun(t, out).RTTasks {
		if tk.TID == hi {
			if tk.Comm != "rtaudit85" || tk.Priority != 85 || tk.Policy != "SCHED_FIFO" || !tk.Preempts {
				t.Errorf("recorded as %+v", tk)
			}
			return
		}
	}
	t.Errorf("run.json's rt_tasks lacks the FIFO 85 task %d", hi)
}
