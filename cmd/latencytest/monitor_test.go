package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"latencytest/rundata"
	"latencytest/runner"
)

func TestMonitorBadFlags(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--rotate", "0"}, "--rotate"},
		{[]string{"--rotate", "500ms"}, "--rotate"},
		{[]string{"--keep", "-1"}, "--keep"},
		{[]string{"--listen", "nohost"}, "--listen"},
		{[]string{"--listen", "127.0.0.1:99999"}, "--listen"},
		{[]string{"--listen", "192.0.2.1:9101"}, "--listen"}, // an address this machine does not have
		{[]string{"--metrics-file", filepath.Join(dir, "none", "lt.prom")}, "--metrics-file"},
		{[]string{"--metrics-file", dir}, "--metrics-file"},
		{[]string{"--period", "64,128"}, "--period"},
		{[]string{"--driver", "nosuch"}, "--driver"},
		{[]string{"--cpu-load", "101"}, "--cpu-load"},
		{[]string{"--loopback", "--stream", "duplex"}, "--loopback"},
		{[]string{"--test-glitch", "5:loud"}, "--test-glitch"}, // the test hook, parsed as run parses it
		{[]string{"stray"}, "stray"},
		// The engine refuses the device: no metrics file, no address line.
		{[]string{"--device", "hw:0,0", "--metrics-file", filepath.Join(dir, "lt.prom"), "--listen", "0"}, "--device"},
	}
	for _, c := range cases {
		r := latencytest(t, append([]string{"monitor", "--out", out}, c.args...)...)
		oneLine(t, r, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.flag) {
			t.Errorf("%v: the message does not name %s: %q", c.args, c.flag, r.stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%v: left %v behind", c.args, entries)
		}
	}
}

// A monitor whose --out is an earlier run's results directory is refused
// as run refuses one (runner's holdsRun), with one line and the directory
// unchanged: it used to write its rotations inside it. A rotation of an
// earlier monitor is such a directory too.
func TestMonitorRefusesEarlierRun(t *testing.T) {
	earlier := synthRun(t, "host-a")
	before := listing(t, earlier)
	r := latencytestWithin(t, 30*time.Second, "monitor", "--driver", "timer", "--rotate", "1s", "--out", earlier)
	oneLine(t, r, "monitor --out an earlier run")
	if !strings.Contains(r.stderr, "--out "+earlier+": holds an earlier run") {
		t.Errorf("monitor --out an earlier run: %q", r.stderr)
	}
	if after := listing(t, earlier); !slices.Equal(before, after) {
		t.Errorf("monitor --out an earlier run: it now holds %v, before %v", after, before)
	}
}

// Rotations: one engine measures the whole time, and every period it
// measured is in exactly one results directory: each directory takes the
// periods due in its rotation, the first period of a directory is due one
// period after the previous directory's last (no gap at the boundary, no
// period twice), run.json's instants meet, and the directories' periods
// add up to the metrics' count. The last one, cut by Ctrl-C, is a complete
// run that report renders; the metrics file is valid and alone in its
// directory.
func TestMonitorRotation(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "res")
	prom := filepath.Join(dir, "prom", "lt.prom")
	if err := os.Mkdir(filepath.Dir(prom), 0o755); err != nil {
		t.Fatal(err)
	}
	const rotate = time.Second
	cmd, se := started(t, nil, "metrics: http://", "monitor", "--rotate", rotate.String(), "--keep", "0", "--out", out,
		"--listen", "127.0.0.1:0", "--metrics-file", prom)
	engines := map[int]bool{}
	for end := time.Now().Add(4500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for _, pid := range children(cmd.Process.Pid, "__engine") {
			engines[pid] = true
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if code, _ := exitCode(t, cmd, time.Now()); code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, se)
	}
	if len(engines) != 1 {
		t.Errorf("%d engine processes over the rotations (%v), want one", len(engines), engines)
	}
	names := rotations(t, out)
	if len(names) < 4 {
		t.Fatalf("%d rotations in 4.5 s of --rotate %v: %v", len(names), rotate, names)
	}
	var sum int64
	var prev *rundata.Run
	var last rundata.Sample
	for i, name := range names {
		run := readRun(t, filepath.Join(out, name))
		if len(run.Phases) != 1 || run.Phases[0].Name != "idle" || run.Incomplete {
			t.Fatalf("%s: phases %+v incomplete %v, want one complete idle phase", name, run.Phases, run.Incomplete)
		}
		ph := run.Phases[0]
		if last := i == len(names)-1; run.Interrupted != last {
			t.Errorf("%s: interrupted %v, want %v", name, run.Interrupted, last)
		}
		ss := readSamples(t, filepath.Join(out, name), ph)
		if int64(len(ss)) != ph.Periods || ph.Periods == 0 || ph.Lost != 0 {
			t.Fatalf("%s: %d samples, run.json says %d periods, %d lost", name, len(ss), ph.Periods, ph.Lost)
		}
		// Due instants are stored within rundata.DueTolerance.
		const tol = rundata.DueTolerance
		if ss[0].Due <= ph.StartMonoNS-tol || ss[len(ss)-1].Due > ph.StartMonoNS+int64(rotate)+tol {
			t.Errorf("%s: periods due %d to %d, outside its rotation (%d, %d]", name, ss[0].Due, ss[len(ss)-1].Due,
				ph.StartMonoNS, ph.StartMonoNS+int64(rotate))
		}
		if prev != nil {
			periodNS := int64(run.PeriodFrames) * 1e9 / int64(run.Rate)
			if d := prev.Phases[0].StartMonoNS + int64(rotate); ph.StartMonoNS != d {
				t.Errorf("%s: starts at %d, the previous directory ends at %d", name, ph.StartMonoNS, d)
			}
			if !run.Start.Equal(prev.End) || !ph.StartWall.Equal(prev.Phases[0].EndWall) {
				t.Errorf("%s: starts at %v (phase %v), the previous directory ends at %v (phase %v)", name,
					run.Start, ph.StartWall, prev.End, prev.Phases[0].EndWall)
			}
			// After an xrun the timer driver's grid starts afresh, later.
			gap := ss[0].Due - last.Due
			if last.Xrun == 0 && (gap < periodNS-2*tol || gap > periodNS+2*tol) || last.Xrun != 0 && gap <= periodNS {
				t.Errorf("%s: its first period is due %d ns after the previous directory's last (xrun %d), want one period, %d",
					name, gap, last.Xrun, periodNS)
			}
		}
		prev, last = run, ss[len(ss)-1]
		sum += ph.Periods
	}
	m := promFile(t, prom)
	if got := m["latencytest_periods_total"]; got != float64(sum) {
		t.Errorf("metrics file: %v periods, the directories %d", got, sum)
	}
	if got := m["latencytest_results_directories_total"]; got != float64(len(names)) {
		t.Errorf("metrics file: %v directories, there are %d", got, len(names))
	}
	// Prometheus's own linter reads it as valid exposition text.
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin, _ = os.Open(prom)
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics %s: %v\n%s", prom, err, b)
	}
	if entries, _ := os.ReadDir(filepath.Dir(prom)); len(entries) != 1 {
		t.Errorf("the metrics file's directory holds %v, want lt.prom alone", entries)
	}
	for _, n := range []string{names[1], names[len(names)-1]} { // one handed over, the interrupted one
		if r := latencytest(t, "report", filepath.Join(out, n)); r.code != 0 {
			t.Errorf("report of %s: exit %d: %s", n, r.code, r.stderr)
		}
	}
	args := []string{"compare"}
	for _, n := range names {
		args = append(args, filepath.Join(out, n))
	}
	if r := latencytest(t, append(args, "-o", filepath.Join(dir, "cmp.html"))...); r.code != 0 {
		t.Errorf("compare of the rotations: exit %d: %s", r.code, r.stderr)
	}
}

// `run --metrics-file` counts what run.json counts.
func TestRunMetricsFile(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "lt.prom")
	out := filepath.Join(dir, "run")
	r := latencytest(t, "run", "--driver", "timer", "--tests", "idle,idle", "--duration", "1s", "--cpu-load", "0",
		"--out", out, "--no-report", "--quiet", "--metrics-file", prom)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run := readRun(t, out)
	m := promFile(t, prom)
	if want := run.Phases[0].Periods + run.Phases[1].Periods; m["latencytest_periods_total"] != float64(want) {
		t.Errorf("metrics file: %v periods, run.json %d", m["latencytest_periods_total"], want)
	}
	if want := run.Phases[0].Xruns + run.Phases[1].Xruns; m["latencytest_xruns_total"] != float64(want) {
		t.Errorf("metrics file: %v xruns, run.json %d", m["latencytest_xruns_total"], want)
	}
}

// rotations lists a monitor's results directories in order; base holds
// nothing else.
func rotations(t *testing.T, base string) []string {
	t.Helper()
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	names, err := runner.Rotations(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(names, e.Name()) {
			t.Errorf("%s: %s is not a rotation's directory", base, e.Name())
		}
	}
	return names
}

// promFamilies parses a metrics file with Prometheus's own text parser.
func promFamilies(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return mfs
}

// promFile is a metrics file's counters and gauges of one series, by name.
func promFile(t *testing.T, path string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for name, mf := range promFamilies(t, path) {
		if len(mf.Metric) != 1 {
			continue
		}
		switch mt := mf.Metric[0]; {
		case mt.Counter != nil:
			m[name] = mt.Counter.GetValue()
		case mt.Gauge != nil:
			m[name] = mt.Gauge.GetValue()
		}
	}
	return m
}

// promByCause is a metrics file's spike counts by "kind/name".
func promByCause(t *testing.T, path string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	mf := promFamilies(t, path)["latencytest_spikes_total"]
	if mf == nil {
		return m
	}
	for _, mt := range mf.Metric {
		var kind, name string
		for _, l := range mt.Label {
			switch l.GetName() {
			case "kind":
				kind = l.GetValue()
			case "name":
				name = l.GetValue()
			}
		}
		m[kind+"/"+name] = mt.Counter.GetValue()
	}
	return m
}

// run's metrics flags: bad ones are one line, exit 2, nothing written.
func TestRunMetricsBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range [][]string{
		{"--listen", "nohost"},
		{"--metrics-file", filepath.Join(dir, "none", "lt.prom")},
		{"--period", "64,128", "--metrics-file", filepath.Join(dir, "lt.prom")},
		{"--device", "hw:0,0", "--metrics-file", filepath.Join(dir, "lt.prom"), "--listen", "0"},
	} {
		r := latencytest(t, append([]string{"run", "--driver", "timer", "--tests", "idle", "--duration", "1s", "--out", filepath.Join(dir, "out")}, c...)...)
		oneLine(t, r, strings.Join(c, " "))
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%v: left %v behind", c, entries)
		}
	}
}

// On a full disk (a tmpfs of 64 KB, mounted in a mount namespace of the
// monitor's own) monitor goes on measuring: a hand-over that finds no
// space removes the oldest results and says so, and every directory left
// holds a readable run.json (none is empty or half made). The directories
// are read through /proc/PID/root, the monitor's view.
func TestMonitorFullDisk(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	script := `mount -t tmpfs -o size=64k tmpfs "$1" && exec "$2" monitor --rotate 1s --keep 50 --out "$1/res"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", dir, binary)
	se := &watchedOutput{line: "no space left: removed the oldest results", seen: make(chan struct{})}
	cmd.Stderr = se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case <-se.seen:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no room made within 20 s: %s", se.String())
	}
	time.Sleep(2500 * time.Millisecond) // two more rotations on the full disk
	res := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "root", dir, "res")
	dirs, err := runner.Rotations(res)
	if err != nil || len(dirs) < 2 {
		t.Fatalf("rotations %v, %v; stderr %s", dirs, err, se.String())
	}
	for _, d := range dirs {
		if _, err := rundata.ReadRun(filepath.Join(res, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if ents, _ := os.ReadDir(res); len(ents) != len(dirs) {
		t.Errorf("beside the rotations: %v", ents)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code, _ := exitCode(t, cmd, time.Now()); code != 130 {
		t.Errorf("exit %d: %s", code, se.String())
	}
	if n := strings.Count(se.String(), "no space left: removed"); n < 2 {
		t.Errorf("room made %d times; want it on every rotation once full: %s", n, se.String())
	}
}

// systemd stops a service with SIGTERM, and SIGKILLs it after
// TimeoutStopSec: monitor killed so, 50 ms into its stop, keeps every
// rotation it completed, whole, and its last one readable (recovered
// from its samples, as a killed run's).
func TestMonitorSystemdStopKeepsRotations(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res")
	cmd, se := started(t, nil, "metrics: http://", "monitor", "--rotate", "1s", "--keep", "0", "--out", out, "--listen", "127.0.0.1:0")
	time.Sleep(3500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the unit's whole cgroup
	cmd.Process.Kill()
	cmd.Wait()
	names := rotations(t, out)
	if len(names) < 3 {
		t.Fatalf("%d rotations in 3.5 s of --rotate 1s: %v\n%s", len(names), names, se)
	}
	for i, name := range names {
		run := readRun(t, filepath.Join(out, name))
		if i < len(names)-1 && (run.Incomplete || len(run.Phases) != 1 || run.Phases[0].Periods == 0) {
			t.Errorf("%s: a completed rotation lost: incomplete %v, phases %+v", name, run.Incomplete, run.Phases)
		}
	}
	last := filepath.Join(out, names[len(names)-1])
	if r := latencytest(t, "report", "--text", last); r.code != 0 || !strings.Contains(r.stdout, "T: idle") {
		t.Errorf("the last rotation, killed: report --text exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}
