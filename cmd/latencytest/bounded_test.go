package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/rundata"
)

// timed runs latencytest with args and returns how it ended and how long
// it took. A run still going after hangAfter is killed (and so fails as
// not one line, exit 2): a watchdog for a hang, not a claim of speed,
// which on 2 shared cores under the race detector no wall-clock limit
// could decide (a refusal that takes 0.3 s alone took 5.3 s in CI's
// loaded race run).
func timed(t *testing.T, args ...string) (result, time.Duration) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(hangAfter, func() { cmd.Process.Kill() })
	defer timer.Stop()
	cmd.Wait()
	took := time.Since(start)
	return result{code: cmd.ProcessState.ExitCode(), stdout: so.String(), stderr: se.String()}, took
}

const hangAfter = 60 * time.Second

// Inputs made to cost are refused with one line, exit 2: compare
// of 32 MB of newlines, report of a 16 MB run.json of empty phases or of
// empty checks (their memory: report.TestHostileInputsBounded), report
// with a FIFO as spikes.json (blocked for ever before).
func TestHostileInputsBounded(t *testing.T) {
	tmp := t.TempDir()
	newlines := filepath.Join(tmp, "newlines.txt")
	if err := os.WriteFile(newlines, bytes.Repeat([]byte("\n"), 32<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dirWith := func(name, runJSON string) string {
		d := filepath.Join(tmp, name)
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, rundata.RunFile), []byte(runJSON), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	many := func(key string) string {
		n := (rundata.MaxRunFileBytes - 64) / 3
		return `{"schema": 1, "` + key + `": [` + strings.Repeat("{},", n-1) + `{}]}`
	}
	phases := dirWith("phases", many("phases"))
	checks := dirWith("checks", many("checks"))
	spikes := synthRun(t, "host-a")
	if err := syscall.Mkfifo(filepath.Join(spikes, rundata.SpikesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"compare", newlines, "-o", filepath.Join(tmp, "c.html")}, "unknown format"},
		{[]string{"report", phases}, "more than 128 phases"},
		{[]string{"report", checks}, "more than 16384 elements"},
		{[]string{"report", spikes}, "spikes.json: not a regular file (a FIFO)"},
	} {
		r, took := timed(t, c.args...)
		t.Logf("%s %s: exit %d in %v: %s", c.args[0], filepath.Base(c.args[1]), r.code, took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
		oneLine(t, r, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.says) {
			t.Errorf("%v: %q does not say %q", c.args, r.stderr, c.says)
		}
	}
	if _, err := os.Stat(filepath.Join(spikes, "index.html")); err == nil {
		t.Errorf("report wrote index.html despite the FIFO")
	}
}
