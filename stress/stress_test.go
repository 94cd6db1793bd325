package stress

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as latencytest: `TESTBIN stress NAME ...` is the
// stressor child Start runs, and `TESTBIN stress-helper NAME ...` is a
// parent that starts a stressor, reports it and waits to be SIGKILLed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "stress":
			os.Exit(Main(os.Args[0], os.Args[2:], os.Stdout, os.Stderr))
		case "stress-helper":
			os.Exit(stressHelper(os.Args[2], os.Args[3:]))
		}
	}
	// Orphans of a killed parent come to us, as they would to init, so that
	// the tests can reap them (PID 1 of a container may not).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "PR_SET_CHILD_SUBREAPER:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// helperReport is what stressHelper prints once its stressor runs.
type helperReport struct {
	Pid int `json:"pid"`
}

func stressHelper(name string, args []string) int {
	p, err := Start(context.Background(), os.Args[0], name, args, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Wait for a throughput report, so the load is really at work.
	for p.Progress() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	_ = json.NewEncoder(os.Stdout).Encode(helperReport{Pid: p.Pid()})
	select {} // until killed
}

// testLoads are the stressors with settings small enough for a test; the
// disk stressors work in dir.
func testLoads(dir string) map[string][]string {
	return map[string][]string{
		"x11":        {"--xvfb"},
		"proc":       nil,
		"disk-write": {"--dir", dir, "--size", "32M"},
		"disk-copy":  {"--dir", dir, "--size", "16M"},
		"disk-read":  {"--dir", dir, "--size", "16M"},
		"hackbench":  {"-g", "1", "-f", "10", "-l", "20"},
		"fork":       {"--parallel", "2"},
		"cpu":        {"--threads", "2"},
		"memory":     {"--size", "32M"},
		"net":        {"--conns", "2"},
		"exec":       {"--cmd", "sleep 0.05; echo done >/dev/null"},
	}
}

// needXvfb fails under CI (scripts/setup test installs xvfb) and skips
// elsewhere when Xvfb is missing.
func needXvfb(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Xvfb is missing (scripts/setup test installs the xvfb package)")
		}
		t.Skip("Xvfb is missing; install the xvfb package (scripts/setup test)")
	}
}

// count is the work done in a stats map: the value under its unit.
func count(st map[string]any) float64 {
	unit, _ := st["unit"].(string)
	v, _ := st[strings.ToLower(unit)].(float64)
	return v
}

func TestRegistryCoversEveryStressor(t *testing.T) {
	r := NewRegistry()
	want := []string{"cpu", "disk-copy", "disk-read", "disk-write", "exec", "fork", "hackbench", "memory", "net", "proc", "x11"}
	if got := r.Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	loads := testLoads(t.TempDir())
	for _, n := range want {
		if _, ok := loads[n]; !ok {
			t.Errorf("no test settings for stressor %s", n)
		}
	}
}

// Each stressor starts, reports work within 2 s, and after Stop leaves no
// process in its group and no file.
func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	for name, args := range testLoads(dir) {
		t.Run(name, func(t *testing.T) {
			if name == "x11" {
				needXvfb(t)
			}
			p, err := Start(context.Background(), os.Args[0], name, append([]string{"--interval", "100ms"}, args...), nil, nil)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			deadline := time.Now().Add(2 * time.Second)
			for count(p.Progress()) <= 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			sameComm(t, p.Pid(), Comm(name), name == "hackbench" || name == "fork")
			progress := p.Progress()
			st, err := p.Stop()
			if err != nil {
				t.Errorf("Stop: %v", err)
			}
			if count(progress) <= 0 {
				t.Errorf("no work reported within 2 s: %v (stderr: %s)", progress, p.p.LastStderr())
			}
			if count(st) <= 0 {
				t.Errorf("final stats count no work: %v", st)
			}
			if e, ok := st["error"]; ok {
				t.Errorf("the load failed when stopped: %v", e)
			}
			if _, ok := st[strings.ToLower(st["unit"].(string))+"_per_s"]; !ok {
				t.Errorf("final stats have no rate: %v", st)
			}
			assertGone(t, p.Pid(), dir, false)
		})
	}
}

// The same when the parent that started the stressor is SIGKILLed.
func TestParentKilled(t *testing.T) {
	dir := t.TempDir()
	for name, args := range testLoads(dir) {
		t.Run(name, func(t *testing.T) {
			if name == "x11" {
				needXvfb(t)
			}
			helper := exec.Command(os.Args[0], append([]string{"stress-helper", name}, args...)...)
			helper.Stderr = os.Stderr
			out, err := helper.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadBytes('\n')
			if err != nil {
				helper.Process.Kill()
				helper.Wait()
				t.Fatalf("helper: %v", err)
			}
			var rep helperReport
			if err := json.Unmarshal(line, &rep); err != nil {
				t.Fatalf("helper said %q: %v", line, err)
			}
			if pids, _ := child.GroupPIDs(rep.Pid); len(pids) == 0 {
				t.Fatalf("stressor group %d is empty while running", rep.Pid)
			}
			if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			helper.Wait()
			// The stressor and any orphan of its group are ours now
			// (subreaper): reap them as they exit.
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				pids, _ := child.GroupPIDs(rep.Pid)
				if len(pids) == 0 {
					break
				}
				for _, pid := range pids {
					var ws unix.WaitStatus
					unix.Wait4(pid, &ws, unix.WNOHANG, nil)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The dead parent's (empty) directory stays, for the next run
			// to remove.
			assertGone(t, rep.Pid, dir, true)
		})
	}
}

// assertGone checks that process group pgid is empty and that dir holds
// no file of a stressor (and no directory of one, unless emptyDirs).
func assertGone(t *testing.T, pgid int, dir string, emptyDirs bool) {
	t.Helper()
	pids, err := child.GroupPIDs(pgid)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) > 0 {
		var states []string
		for _, pid := range pids {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			states = append(states, string(b))
		}
		t.Errorf("processes left in group %d: %v", pgid, states)
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	if dir == "" {
		return
	}
	left, _ := filepath.Glob(filepath.Join(dir, "latencytest-*"))
	if emptyDirs {
		left, _ = filepath.Glob(filepath.Join(dir, "latencytest-*", "*"))
	}
	for _, f := range left {
		t.Errorf("left behind: %s", f)
		os.RemoveAll(f)
	}
}

// A killed disk stressor's file is removed by the next one, and a running
// one's is not.
func TestDiskLeftoversRemoved(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, fmt.Sprintf("%s%d-write-123", filePrefix, dead.Process.Pid))
	alive := filepath.Join(dir, fmt.Sprintf("%s%d-write-456", filePrefix, os.Getpid()))
	for _, f := range []string{left, alive} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Start(context.Background(), os.Args[0], "disk-write", []string{"--dir", dir, "--size", "4M"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stop(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover of dead pid %d not removed", dead.Process.Pid)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("file of a live process removed: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("dir holds %d files after stop, want 1 (the live process's)", len(ents))
	}
}

// A stressor that cannot start says why, as bad input, and leaves nothing.
func TestStartCannotRun(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no Xvfb
	_, err := Start(context.Background(), os.Args[0], "x11", []string{"--display", ""}, nil, nil)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "no X server") {
		t.Fatalf("Start x11 without X server and Xvfb: err = %v, want a usage error about no X server", err)
	}
	_, err = Start(context.Background(), os.Args[0], "disk-read", []string{"--dir", "/nonexistent/dir"}, nil, nil)
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "--dir") {
		t.Fatalf("Start disk-read on a missing dir: err = %v", err)
	}
}

// An exec stressor whose command never succeeds still stops cleanly and
// says how often it failed.
func TestExecFailures(t *testing.T) {
	p, err := Start(context.Background(), os.Args[0], "exec", []string{"--cmd", "exit 3"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	st, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := st["failures"].(float64); f < 1 {
		t.Errorf("failures = %v, want at least 1 (stats %v)", st["failures"], st)
	}
	if count(st) != 0 {
		t.Errorf("runs = %v, want 0 for a failing command", count(st))
	}
	assertGone(t, p.Pid(), "", false)
}

// Ctrl-C on a stressor run by hand keeps what was measured (the average
// line) and leaves no process and no file.
func TestInterruptByHand(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "stress", "disk-write", "--dir", dir, "--size", "8M", "--interval", "100ms")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a shell's job
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	first, err := r.ReadString('\n')
	if err != nil || !strings.Contains(first, "MB/s") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("first line %q, %v; want a throughput line", first, err)
	}
	// Ctrl-C reaches the terminal's foreground group.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after Ctrl-C: %v (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(string(rest), "MB/s on average") {
		t.Errorf("no average line after Ctrl-C; output:\n%s%s", first, rest)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left in %s: %v", dir, ents)
	}
	assertGone(t, cmd.Process.Pid, "", false)
}

// sameComm checks that every thread of process pid runs as comm, and with
// forks that a process it forked does too: the tracer names the load's
// tasks by it, even those gone before /proc could be asked.
func sameComm(t *testing.T, pid int, comm string, forks bool) {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/comm", pid))
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != comm {
			t.Errorf("%s: %q, want %q", f, strings.TrimSpace(string(b)), comm)
		}
	}
	if len(tasks) == 0 {
		t.Errorf("no thread of process %d", pid)
	}
	for deadline := time.Now().Add(2 * time.Second); forks; {
		for _, c := range childrenOf(pid) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
			if err != nil {
				continue
			}
			if got := strings.TrimSpace(string(b)); got != comm {
				t.Errorf("process %d forked by the load: %q, want %q", c, got, comm)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("no process forked by %d seen in 2 s", pid)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// childrenOf lists the processes whose parent is pid now.
func childrenOf(pid int) []int {
	var kids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(w); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}
