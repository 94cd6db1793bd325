package main

import (
	"encoding/json"
	"fmt"
	"math"
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

	"latencytest/internal/bintest"
	"latencytest/report"
	"latencytest/report/synth"
)

func synthRun(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	c := synth.Default()
	c.PhaseLength = 2 * time.Second
	c.Hostname = host
	if _, err := synth.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	return dir
}

// oneLine checks a bad-input failure: exit 2 and a single line on stderr.
func oneLine(t *testing.T, r result, what string) {
	t.Helper()
	if r.code != 2 {
		t.Errorf("%s: exit %d, want 2 (stderr %q)", what, r.code, r.stderr)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 || r.stderr == "" {
		t.Errorf("%s: stderr is not one line: %q", what, r.stderr)
	}
}

// synthRuns writes n synthetic runs named NAME-1 … NAME-n under dir,
// seeds from seed, each phase's latencies scaled by scale: one kernel
// measured n times.
func synthRuns(t *testing.T, dir, name string, n int, seed uint64, scale float64) []string {
	t.Helper()
	var dirs []string
	for i := range n {
		c := synth.Default()
		c.PhaseLength, c.Hostname, c.Seed = time.Second, name, seed+uint64(i)
		c.Phases = []synth.Phase{synth.Idle()}
		c.Phases[0].MedianUS *= scale
		c.Phases[0].SpikeUS *= scale
		d := filepath.Join(dir, fmt.Sprintf("%s-%d", name, i+1))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := synth.Write(d, c); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// Several results directories given to one label are its runs, and
// compare decides from their spread: --fail-if-worse exits 1 for a kernel
// decided worse, 0 for one decided not worse, and -json carries each
// decision. A glob names them as well as a list.
func TestCompareDecidesFromRuns(t *testing.T) {
	dir := t.TempDir()
	good := synthRuns(t, dir, "good", 5, 1, 1)
	bad := synthRuns(t, dir, "bad", 5, 11, 3)
	out, js := filepath.Join(dir, "cmp.html"), filepath.Join(dir, "cmp.json")
	r := latencytest(t, "compare", "good="+filepath.Join(dir, "good-*"), "bad="+strings.Join(bad, ","), "-o", out, "-json", js, "--fail-if-worse", "10%")
	if r.code != 1 || !strings.Contains(r.stderr, "idle: bad's p99.9 against good's: worse by more than 10 %") {
		t.Fatalf("bad against good: exit %d, want 1:\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rk report.Ranking
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rk) != nil || len(rk.Phases) != 1 {
		t.Fatalf("-json: %v", err)
	}
	ph := rk.Phases[0]
	if s := ph.Sources[0]; s.Runs != 5 || len(s.RunFigures["p999_us"]) != 5 || ph.Best != "good" || ph.Worst != "bad" {
		t.Errorf("good: %d runs, ranking best %q worst %q", s.Runs, ph.Best, ph.Worst)
	}
	var p999 *report.Decision
	for i, d := range ph.Sources[1].VsFirst {
		if d.Figure == "p999_us" {
			p999 = &ph.Sources[1].VsFirst[i]
		}
	}
	if p999 == nil || p999.Word != "worse" || len(p999.Interval) != 2 || p999.Interval[0] <= 1.1 || p999.RunsA != 5 || p999.RunsB != 5 {
		t.Errorf("bad's p99.9 against good's: %+v", p999)
	}
	if !strings.Contains(r.stdout, "against good (B/A, 95 % interval over the runs") {
		t.Errorf("terminal without the decisions:\n%s", r.stdout)
	}
	if r := latencytest(t, "compare", "bad="+strings.Join(bad, ","), "good="+strings.Join(good, ","), "-o", out, "--fail-if-worse", "10%"); r.code != 0 {
		t.Errorf("good against bad: exit %d, want 0:\n%s", r.code, r.stderr)
	}
	oneLine(t, latencytest(t, "compare", "good="+filepath.Join(dir, "none-*"), "-o", out), "a glob matching nothing")
	// A run of one source measured otherwise is said not like with like.
	c := synth.Default()
	c.PhaseLength, c.Frames, c.Phases = time.Second, 128, []synth.Phase{synth.Idle()}
	odd := filepath.Join(dir, "odd")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := synth.Write(odd, c); err != nil {
		t.Fatal(err)
	}
	if r := latencytest(t, "compare", "good="+strings.Join(append(good, odd), ","), "-o", out); r.code != 0 ||
		!strings.Contains(r.stdout, "not like with like: good's runs: buffer differs:") {
		t.Errorf("a run measured otherwise among good's: exit %d\n%s", r.code, r.stdout)
	}
}

func TestReportCommand(t *testing.T) {
	dir := synthRun(t, "host-a")
	r := latencytest(t, "report", dir)
	if r.code != 0 {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"index.html", "stats.csv"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	oneLine(t, latencytest(t, "report"), "report without a directory")
	oneLine(t, latencytest(t, "report", dir, dir), "report with two directories")
	empty := t.TempDir()
	oneLine(t, latencytest(t, "report", empty), "report of a directory without run.json")
	if _, err := os.Stat(filepath.Join(empty, "index.html")); !os.IsNotExist(err) {
		t.Error("report of a bad directory wrote index.html")
	}
}

func TestCompareCommand(t *testing.T) {
	a, b := synthRun(t, "host-a"), synthRun(t, "host-b")
	out := filepath.Join(t.TempDir(), "cmp.html")
	// Flags after the inputs, as the usage line shows.
	r := latencytest(t, "compare", a, b, "-o", out)
	if r.code != 0 {
		t.Fatalf("compare: exit %d: %s", r.code, r.stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(page), "host-b") {
		t.Fatalf("compare page missing or without the second run: %v", err)
	}
	// NAME=PATH labels a source; the ranking is on the terminal too, a
	// row per source in each phase, the JSON's figures.
	js0 := filepath.Join(t.TempDir(), "rank.json")
	r = latencytest(t, "compare", "before="+a, "after="+b, "-o", out, "-json", js0)
	var rk report.Ranking
	if b, err := os.ReadFile(js0); r.code != 0 || err != nil || json.Unmarshal(b, &rk) != nil || len(rk.Phases) == 0 {
		t.Fatalf("compare with labels: exit %d: %s", r.code, r.stderr)
	}
	for _, ph := range rk.Phases {
		for _, src := range ph.Sources {
			if src.Skipped != "" {
				continue
			}
			// The table rounds as the page does: three figures, at
			// most 0.5 % or 0.05 µs off.
			row := regexp.MustCompile(`(?m)^  ` + src.Label + ` +` + strconv.Itoa(src.Runs) + ` +([0-9.]+) `)
			m := row.FindAllStringSubmatch(r.stdout, -1)
			var v float64
			if len(m) == len(rk.Phases) {
				v, _ = strconv.ParseFloat(m[slices.IndexFunc(rk.Phases, func(p report.RankedPhase) bool { return p.Phase == ph.Phase })][1], 64)
			}
			if d := math.Abs(v - src.WorstMaxUS); d > 0.005*src.WorstMaxUS+0.05 {
				t.Errorf("phase %s, %s: worst max %v on the terminal, %v in the JSON:\n%s", ph.Phase, src.Label, v, src.WorstMaxUS, r.stdout)
			}
		}
		if src := ph.Sources[0].Label; src != "before" {
			t.Errorf("phase %s: first source %q, want the label before", ph.Phase, src)
		}
	}
	// run --label names a run where it is compared.
	lab := filepath.Join(t.TempDir(), "labelled")
	if r := latencytest(t, "run", "--driver", "timer", "--tests", "idle", "--duration", "1s", "--label", "with patch", "--out", lab, "--no-report", "--quiet"); r.code != 0 {
		t.Fatalf("run --label: exit %d: %s", r.code, r.stderr)
	}
	if r := latencytest(t, "compare", lab, a, "-o", out); r.code != 0 || !strings.Contains(r.stdout, "\n  with patch ") {
		t.Errorf("compare of a run --label: exit %d:\n%s", r.code, r.stdout)
	}
	// --fail-if-worse against the first source, one run each: the
	// synthetic run's idle max is 16 µs, a real one's far more, but one
	// run against one cannot tell (git bisect's skip), and says so.
	if r := latencytest(t, "compare", a, lab, "-o", out, "--fail-if-worse", "10%"); r.code != 125 ||
		!strings.Contains(r.stderr, "latencytest compare: idle: with patch's p99.9 against") || !strings.Contains(r.stderr, "cannot tell") || !strings.Contains(r.stderr, "run --repeat 5") {
		t.Errorf("compare --fail-if-worse, one run each: exit %d: %s", r.code, r.stderr)
	}
	oneLine(t, latencytest(t, "compare", lab, a, "-o", out, "--fail-if-worse", "ten"), "--fail-if-worse ten")
	ct := filepath.Join("..", "..", "report", "testdata", "cyclictest")
	r = latencytest(t, "compare", "-phase", "idle", a, filepath.Join(ct, "idle.hist"), filepath.Join(ct, "hackbench.json"), "-o", out)
	if r.code != 0 {
		t.Fatalf("compare with cyclictest files: exit %d: %s", r.code, r.stderr)
	}
	// A cyclictest terminal log, and the ranking as JSON.
	js := filepath.Join(t.TempDir(), "cmp.json")
	log := filepath.Join("..", "..", "cyclictest", "testdata", "cyclictest-log", "loop-q.txt")
	r = latencytest(t, "compare", "-phase", "idle", a, log, "-o", out, "-json", js)
	if b, err := os.ReadFile(js); r.code != 0 || err != nil || !strings.Contains(string(b), `"max_us": [`) || !strings.Contains(r.stdout, js) {
		t.Fatalf("compare -json: exit %d: %s; %s", r.code, r.stderr, b)
	}

	junk := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(junk, []byte("hello\n"), 0o644)
	bad := filepath.Join(t.TempDir(), "never.html")
	for what, args := range map[string][]string{
		"no input":        {"compare", "-o", bad},
		"missing dir":     {"compare", a, filepath.Join(a, "nope"), "-o", bad},
		"unknown format":  {"compare", junk, "-o", bad},
		"unknown flag":    {"compare", a, "-x", "-o", bad},
		"empty -o":        {"compare", a, "-o", ""},
		"-json in no dir": {"compare", a, "-o", bad, "-json", filepath.Join(a, "nope", "x.json")},
	} {
		oneLine(t, latencytest(t, args...), what)
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Fatalf("%s: wrote the output anyway", what)
		}
	}
}

// An output path that is not a regular file is written through or
// refused, never renamed over (internal/atomicfile): a directory given as
// -o is one line of bad input with nothing written (it was exit 1,
// "renameat ... file exists"); standard output, as /dev/stdout is, takes
// the JSON alone, the table going to standard error, so that
// "-json /dev/stdout | jq" works; a FIFO is written through to its
// reader. /proc/self/fd/1 stands for /dev/stdout: the old code renamed
// over the name, which in /proc fails rather than replacing the real
// /dev/stdout.
func TestCompareOutputPaths(t *testing.T) {
	a := synthRun(t, "host-a")
	before := listing(t, a)
	r := latencytest(t, "compare", a, "-o", a)
	oneLine(t, r, "-o a results directory")
	if !strings.Contains(r.stderr, "-o "+a+": bad output path, a directory") {
		t.Errorf("-o a directory: %q does not say it", r.stderr)
	}
	if after := listing(t, a); !slices.Equal(before, after) {
		t.Errorf("-o a directory: it now holds %v, before %v", after, before)
	}
	out := filepath.Join(t.TempDir(), "cmp.html")
	oneLine(t, latencytest(t, "compare", a, "-o", out, "-json", a), "-json a directory")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("-json a directory: the page was written anyway")
	}
	r = latencytest(t, "compare", a, "-o", out, "-json", "/proc/self/fd/1")
	var rk report.Ranking
	if err := json.Unmarshal([]byte(r.stdout), &rk); r.code != 0 || err != nil || len(rk.Phases) == 0 {
		t.Errorf("-json to standard output: exit %d, %v; stdout %q, stderr %q", r.code, err, r.stdout, r.stderr)
	}
	fifo := filepath.Join(t.TempDir(), "page")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	page := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		page <- b
	}()
	if r := latencytest(t, "compare", a, "-o", fifo); r.code != 0 {
		t.Errorf("-o a FIFO: exit %d: %s", r.code, r.stderr)
	}
	select {
	case b := <-page:
		if !strings.Contains(string(b), "host-a") {
			t.Errorf("-o a FIFO: its reader read %d bytes without the run", len(b))
		}
	case <-time.After(10 * time.Second):
		t.Error("-o a FIFO: its reader read nothing")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("-o a FIFO: it is now %v, %v", fi.Mode().Type(), err)
	}
}

func TestCheckCommand(t *testing.T) {
	r := latencytest(t, "check")
	if r.code != 0 {
		t.Fatalf("check: exit %d: %s", r.code, r.stderr)
	}
	line := regexp.MustCompile(`(?m)^(OK|WARN|INFO) +\S`)
	if n := len(line.FindAllString(r.stdout, -1)); n < 10 {
		t.Errorf("check printed %d findings:\n%s", n, r.stdout)
	}
	if !regexp.MustCompile(`(?m)^\d+ OK, \d+ WARN, \d+ INFO$`).MatchString(r.stdout) {
		t.Errorf("no summary line:\n%s", r.stdout)
	}
	// A warning says why and how to fix it.
	if strings.Contains(r.stdout, "\nWARN") && !strings.Contains(r.stdout, "      fix: ") {
		t.Errorf("a WARN without its fix:\n%s", r.stdout)
	}
	oneLine(t, latencytest(t, "check", "-bogus"), "check with an unknown flag")
	oneLine(t, latencytest(t, "check", "extra"), "check with an argument")
}

// Ctrl-C during `report` leaves no temporary file, and an index.html only
// if it is complete; whenever the signal lands.
func TestReportInterrupt(t *testing.T) {
	dir := t.TempDir()
	c := synth.Default()
	c.Phases = synth.Classic()
	c.PhaseLength = time.Minute
	if _, err := synth.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	for _, delay := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond, 120 * time.Millisecond} {
		os.Remove(filepath.Join(dir, "index.html"))
		cmd := exec.Command(binary, "report", dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code != 130 && code != -1 {
			t.Errorf("delay %v: exit %d (%v), want 0, 130 or killed by the signal; its stderr: %s", delay, code, err, stderr.String())
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("delay %v: temporary file %s left behind", delay, e.Name())
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "index.html")); err == nil && !strings.HasSuffix(string(b), "</html>\n") {
			t.Errorf("delay %v: index.html is incomplete", delay)
		}
	}
}

// Files that are damaged, made up or not files at all: report and compare
// refuse each with exit 2 and one line naming the file, and never hang.
func TestHostileInputFiles(t *testing.T) {
	good := synthRun(t, "host-a")
	ct := filepath.Join("..", "..", "report", "testdata", "cyclictest")
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dirWith := func(name string, runJSON []byte) string {
		d := filepath.Join(tmp, name)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "run.json"), runJSON, 0o644)
		return d
	}
	malformed := dirWith("malformed", []byte(`{"schema": 1, "phases": [`))
	newer := dirWith("newer", []byte(`{"schema": 99}`))
	fifoDir := filepath.Join(tmp, "fifo")
	os.MkdirAll(fifoDir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "run.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(tmp, "ct.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(ct, "idle.json"))
	if err != nil {
		t.Fatal(err)
	}
	hugeH := write("hugeh.json", regexp.MustCompile(`-h *[0-9]+`).ReplaceAllString(string(js), "-h 9000000000000000000"))
	hist, err := os.ReadFile(filepath.Join(ct, "idle.hist"))
	if err != nil {
		t.Fatal(err)
	}
	negOverflow := write("neg.hist", regexp.MustCompile(`# Histogram Overflows: *[0-9]+`).ReplaceAllString(string(hist), "# Histogram Overflows: -1"))
	// A results directory whose samples file is a FIFO: refused, naming it,
	// as a FIFO run.json is (it was drawn without graphs, exit 0, and
	// report --text said nothing).
	fifoSamples := synthRun(t, "host-b")
	bins, _ := filepath.Glob(filepath.Join(fifoSamples, "*.samples"))
	if len(bins) == 0 {
		t.Fatal("the synthetic run has no samples file")
	}
	os.Remove(bins[0])
	if err := syscall.Mkfifo(bins[0], 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "never.html")
	cases := map[string]struct {
		args []string
		want string // in the error line
	}{
		"report malformed run.json":       {[]string{"report", malformed}, filepath.Join(malformed, "run.json")},
		"compare malformed run.json":      {[]string{"compare", good, malformed, "-o", out}, filepath.Join(malformed, "run.json")},
		"report newer schema":             {[]string{"report", newer}, "schema 99"},
		"report FIFO run.json":            {[]string{"report", fifoDir}, "FIFO"},
		"compare FIFO run.json":           {[]string{"compare", fifoDir, "-o", out}, "FIFO"},
		"compare FIFO file":               {[]string{"compare", fifo, "-o", out}, "FIFO"},
		"report FIFO samples file":        {[]string{"report", fifoSamples}, bins[0] + ": not a regular file (a FIFO)"},
		"report --text FIFO samples file": {[]string{"report", "--text", fifoSamples}, bins[0] + ": not a regular file (a FIFO)"},
		"compare FIFO samples file":       {[]string{"compare", good, fifoSamples, "-o", out}, bins[0] + ": not a regular file (a FIFO)"},
		"compare device":                  {[]string{"compare", "/dev/zero", "-o", out}, "device"},
		"compare -h 9e18":                 {[]string{"compare", hugeH, "-o", out}, "hugeh.json"},
		"compare overflows -1":            {[]string{"compare", negOverflow, "-o", out}, "neg.hist"},
	}
	for what, c := range cases {
		r := latencytestWithin(t, 20*time.Second, c.args...)
		oneLine(t, r, what)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: %q does not name %q", what, r.stderr, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: wrote the output anyway", what)
		}
		if _, err := os.Stat(filepath.Join(fifoSamples, "index.html")); !os.IsNotExist(err) {
			t.Fatalf("%s: rendered the run with the FIFO samples file anyway", what)
		}
	}
}

// latencytestWithin is latencytest with a deadline: a reader that blocks
// (on a FIFO, a device) fails the test instead of hanging it, with what
// the child had said on stderr.
func latencytestWithin(t *testing.T, d time.Duration, args ...string) result {
	t.Helper()
	r, err := bintest.Within(d, binary, args...)
	if err != nil {
		t.Fatal(err)
	}
	return result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}
}
