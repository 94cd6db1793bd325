//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// runTests runs every dir/*.test in name order and returns one failure
// description per failed binary ("" slice: all passed). Each runs in
// dir/NAME (where scripts/vmtest puts the package's testdata) when that
// exists, else in /tmp. after, if not nil, is called with the binary's
// name once it has exited.
func runTests(out io.Writer, dir string, cfg config, after func(name string)) []string {
	bins, err := filepath.Glob(filepath.Join(dir, "*.test"))
	if err != nil {
		return []string{err.Error()}
	}
	if len(bins) == 0 {
		msg := "no test binaries in " + dir
		fmt.Fprintf(out, "vminit: %s\n", msg)
		return []string{msg}
	}
	var failures []string
	passed, failed, skipped := 0, 0, 0
	for _, bin := range bins {
		res := runTest(out, bin, cfg)
		if after != nil {
			after(res.name)
		}
		passed, failed, skipped = passed+res.passed, failed+len(res.failed), skipped+res.skipped
		if f := res.failure(); f != "" {
			failures = append(failures, f)
		}
	}
	fmt.Fprintf(out, "vminit: %d test binaries: %d tests passed, %d failed, %d skipped; %d binaries failed\n",
		len(bins), passed, failed, skipped, len(failures))
	if passed+failed+skipped == 0 && len(failures) == 0 {
		// go test passes when -run matches nothing; a harness that says
		// PASS after running nothing hides a typo in -run.
		if cfg.Bench != "" {
			failures = append(failures, fmt.Sprintf("no benchmark ran (-bench %q)", cfg.Bench))
		} else {
			failures = append(failures, fmt.Sprintf("no test ran (-run %q)", cfg.Run))
		}
	}
	return failures
}

// testResult is what one test binary did.
type testResult struct {
	name    string   // the binary's base name
	err     error    // how it exited, nil for status 0
	failed  []string // names from its "--- FAIL: " lines
	panic   string   // its first "panic: " line, e.g. its -test.timeout firing
	passed  int      // its "--- PASS: " lines
	skipped int      // its "--- SKIP: " lines
	timed   bool     // killed for taking longer than the timeout
}

// failure describes a failed binary in one phrase, or returns "".
func (r testResult) failure() string {
	switch {
	case r.timed:
		return r.name + ": timed out"
	case r.err == nil && len(r.failed) == 0:
		return ""
	case len(r.failed) > 0:
		return r.name + ": " + strings.Join(r.failed, ", ")
	case r.panic != "":
		return r.name + ": " + r.panic
	}
	return r.name + ": " + r.err.Error()
}

// testArgs are the flags every test binary gets. The binary's own
// -test.timeout fires first and prints every goroutine's stack, which says
// far more about a hang than being killed does.
func testArgs(cfg config, name string) []string {
	args := []string{"-test.v", "-test.timeout=" + cfg.timeout.String()}
	if cfg.Bench != "" {
		return append(args, "-test.run=^$", "-test.bench="+cfg.Bench, "-test.benchtime=1x")
	}
	run := cfg.Run
	if run == "" {
		run = cfg.Tests[name]
	}
	if run != "" {
		args = append(args, "-test.run="+run)
	}
	return args
}

func runTest(out io.Writer, bin string, cfg config) testResult {
	name := filepath.Base(bin)
	res := testResult{name: name}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout+cfg.grace)
	defer cancel()
	args := testArgs(cfg, name)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = "/tmp"
	if st, err := os.Stat(strings.TrimSuffix(bin, ".test")); err == nil && st.IsDir() {
		cmd.Dir = strings.TrimSuffix(bin, ".test")
	}
	// The test and anything it starts share a process group, killed as one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	lines := &lineScanner{}
	cmd.Stdout = io.MultiWriter(out, lines)
	cmd.Stderr = cmd.Stdout

	fmt.Fprintf(out, "vminit: === %s %s (in %s)\n", name, strings.Join(args, " "), cmd.Dir)
	start := time.Now()
	res.err = cmd.Run()
	lines.flush()
	res.timed = errors.Is(ctx.Err(), context.DeadlineExceeded)
	res.failed, res.panic, res.passed, res.skipped = lines.failed, lines.panic, lines.passed, lines.skipped
	status := "ok"
	if res.err != nil {
		status = res.err.Error()
	}
	fmt.Fprintf(out, "\nvminit: === %s done in %.1f s: %s\n", name, time.Since(start).Seconds(), status)
	return res
}

// failLine matches go test -v's result line of a failed test or subtest.
var failLine = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)

// benchLine matches a benchmark's result line ("BenchmarkX-2  1  5 ns/op"):
// a benchmark that ran, as a "--- PASS: " line is a test that passed.
var benchLine = regexp.MustCompile(`^Benchmark\S*\s+\d+\s+\S+ ns/op`)

// lineScanner collects the failed and passed tests from test -v output
// as it streams past.
type lineScanner struct {
	partial []byte
	failed  []string
	panic   string
	passed  int
	skipped int
}

func (l *lineScanner) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

func (l *lineScanner) flush() {
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
}

func (l *lineScanner) line(s string) {
	if m := failLine.FindStringSubmatch(s); m != nil {
		l.failed = append(l.failed, m[1])
	} else if strings.HasPrefix(strings.TrimSpace(s), "--- PASS: ") || benchLine.MatchString(s) {
		l.passed++
	} else if strings.HasPrefix(strings.TrimSpace(s), "--- SKIP: ") {
		l.skipped++
	} else if strings.HasPrefix(s, "panic: ") && l.panic == "" {
		l.panic = s
	}
}
