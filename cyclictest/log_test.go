package cyclictest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"latencytest/internal/fuzzseed"
)

func parseLogFile(t *testing.T, name string) []LogRun {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "cyclictest-log", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := ParseLog(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return runs
}

func maxes(runs []LogRun) [][]int64 {
	var out [][]int64
	for _, r := range runs {
		var m []int64
		for _, th := range r.Threads {
			m = append(m, th.MaxUS)
		}
		out = append(out, m)
	}
	return out
}

// Real output of Debian's cyclictest 2.40 in a while loop, the same pasted
// into a mail (wrapped at 72 columns, quoted), a live run's screen redraws
// captured with their escape sequences, and an older cyclictest's output
// (a policy line per run, no cpu_dma_latency line) with a wrapped Max.
func TestParseCyclictestLog(t *testing.T) {
	loop := [][]int64{{96}, {63}, {167}, {66}}
	for name, want := range map[string][][]int64{
		"loop-q.txt":       loop,
		"mail-wrapped.txt": loop,
		"live-t2.txt":      nil, // checked below: the last redraw of each run
		"old-policy.txt":   {{121}, {148}, {17812}},
	} {
		runs := parseLogFile(t, name)
		if want != nil && !reflect.DeepEqual(maxes(runs), want) {
			t.Errorf("%s: runs' max %v, want %v", name, maxes(runs), want)
		}
	}
	q := parseLogFile(t, "loop-q.txt")
	if want := (LogThread{Thread: 0, PID: 27972, Prio: 80, IntervalUS: 10000, Count: 30, MinUS: 25, ActUS: 38, AvgUS: 45, MaxUS: 96}); q[0].Threads[0] != want {
		t.Errorf("first thread %+v, want %+v", q[0].Threads[0], want)
	}
	live := parseLogFile(t, "live-t2.txt")
	if len(live) != 2 || len(live[0].Threads) != 2 || len(live[1].Threads) != 2 {
		t.Fatalf("live capture: %d runs %+v, want 2 runs of 2 threads", len(live), live)
	}
	for _, r := range live {
		if r.Threads[0].Count != 20 || r.Threads[1].Count != 19 || !strings.HasPrefix(r.Policy, "fifo: loadavg:") {
			t.Errorf("a run's last redraw: %+v", r)
		}
	}
	if old := parseLogFile(t, "old-policy.txt"); old[2].Line != 8 || old[2].Threads[0].PID != 7040 {
		t.Errorf("old format: %+v", old[2])
	}
}

func TestParseCyclictestLogErrors(t *testing.T) {
	for in, want := range map[string]string{
		"# /dev/cpu_dma_latency set to 0us\nT: 0 (12) P:80 I:1000 C: 5 Min: 3 Act: 4 Avg: x Max: 9\n": "line 2: not a cyclictest status line",
		"policy: fifo\n\nT: 0 (12) P:80 I:1000\n":                                                     "line 3: not a cyclictest status line",
		"T: 0 (12) P:80 I:1000 C: 5 Min: 3 Act: 4 Avg: 4 Max: 99999999999999999999\n":                 "line 1: value",
	} {
		_, err := ParseLog(strings.NewReader(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if IsLog([]byte(`{"thread": {}}`)) || !IsLog([]byte("> T: 0 (1) P:80")) {
		t.Error("IsLog")
	}
}

// logPerByte is what reading a log may allocate per byte: a status line's
// fields (measured: 6.3 a byte for a live -t2 log); a line it only skips
// costs nothing.
const logPerByte = 12

func FuzzParseCyclictestLog(f *testing.F) {
	for _, name := range []string{"loop-q.txt", "mail-wrapped.txt", "live-t2.txt", "old-policy.txt", "mail-before-after.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "cyclictest-log", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(bytes.Repeat([]byte("\n"), 256<<10)) // a line count costs nothing
	f.Fuzz(func(t *testing.T, b []byte) {
		var runs []LogRun
		var err error
		fuzzseed.Bounded(t, len(b), logPerByte, func() int {
			runs, err = ParseLog(bytes.NewReader(b))
			return 0
		})
		if err != nil {
			return
		}
		for _, r := range runs {
			if len(r.Threads) == 0 {
				t.Errorf("a run without threads: %+v", r)
			}
		}
	})
}

// A mail with the logs of two kernels under their headings is refused
// with where to split it; one kernel named twice, or none, is one source.
func TestParseLogSeveralKernels(t *testing.T) {
	run := func(pid int) string {
		return fmt.Sprintf("# /dev/cpu_dma_latency set to 0us\nT: 0 (%d) P:80 I:1000 C:   1000 Min:      3 Act:    5 Avg:    4 Max:     40\n", pid)
	}
	two := "Kernel 6.1.0-13-rt-amd64:\n" + run(10) + run(11) + "\nAnd on Linux host 6.6.7-arch1 #1 SMP PREEMPT_RT:\n" + run(12)
	_, err := ParseLog(strings.NewReader(two))
	if err == nil || !strings.Contains(err.Error(), "6.1.0-13-rt-amd64 at line 1, 6.6.7-arch1 at line 7") || !strings.Contains(err.Error(), "csplit -z FILE 7") {
		t.Errorf("two kernels: %v", err)
	}
	for name, log := range map[string]string{
		"one kernel, named twice": "uname -r: 6.1.0-13-rt-amd64\n" + run(10) + "again on kernel 6.1.0-13-rt-amd64\n" + run(11),
		"none named":              run(10) + run(11),
	} {
		if runs, err := ParseLog(strings.NewReader(log)); err != nil || len(runs) != 2 {
			t.Errorf("%s: %d runs, %v", name, len(runs), err)
		}
	}
}

// A mail that compares two kernels under headings that name no version
// ("Before the patch:", "After the patch:") holds two sources: each run
// carries its heading, and GroupByHeading keeps them apart. The prose
// above ("The numbers:") is a heading no run comes under.
func TestParseLogHeadingsSplitSources(t *testing.T) {
	runs := parseLogFile(t, "mail-before-after.txt")
	if want := [][]int64{{312, 287}, {405, 266}, {41, 38}, {52, 44}}; !reflect.DeepEqual(maxes(runs), want) {
		t.Fatalf("runs' max %v, want %v", maxes(runs), want)
	}
	srcs := GroupByHeading(runs)
	var got []string
	for _, s := range srcs {
		got = append(got, fmt.Sprintf("%s: %d runs", s.Heading, len(s.Runs)))
	}
	if want := []string{"Before the patch: 2 runs", "After the patch: 2 runs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sources %q, want %q", got, want)
	}
	for _, name := range []string{"loop-q.txt", "mail-wrapped.txt", "live-t2.txt", "old-policy.txt"} {
		if n := len(GroupByHeading(parseLogFile(t, name))); n != 1 {
			t.Errorf("%s: %d sources, want 1", name, n)
		}
	}
	// A wrapped status line's remainder is no heading.
	wrapped := "Before:\nT: 0 (12) P:80 I:1000 C: 5 Min: 3 Act: 4 Avg: 4 Max:\n  9\nAfter:\nT: 0 (13) P:80 I:1000 C: 5 Min: 3 Act: 4 Avg: 4 Max: 8\n"
	if srcs := GroupByHeading(mustParseLog(t, wrapped)); len(srcs) != 2 || srcs[0].Runs[0].Threads[0].MaxUS != 9 || srcs[1].Heading != "After" {
		t.Errorf("wrapped: %+v", srcs)
	}
}

func mustParseLog(t *testing.T, s string) []LogRun {
	t.Helper()
	runs, err := ParseLog(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
