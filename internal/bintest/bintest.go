// Package bintest builds latencytest for a package's tests and runs it:
// `run` starts its engine, stressors and guards as processes of the same
// binary, so the tests that matter drive the real thing. Under -race the
// binary is built with -race too, and every process of it writes its race
// reports where Close finds them (internal/racetest).
package bintest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"latencytest/internal/racetest"
	"latencytest/rundata"
)

// Binary is latencytest as built for one package's tests, once, when a
// test first needs it.
type Binary struct {
	dir  string
	tags []string
	once sync.Once
	path string
	err  error
}

// New makes the directory the binary is built in, with the build tags
// given, and makes every process the tests start from now on write its
// race reports there. Call it from TestMain, and Close after m.Run.
func New(tags ...string) (*Binary, error) {
	dir, err := os.MkdirTemp("", "latencytest-bin-")
	if err != nil {
		return nil, err
	}
	racetest.Setenv(dir)
	return &Binary{dir: dir, tags: tags}, nil
}

// Build builds the binary the first time and returns its path.
func (b *Binary) Build() (string, error) {
	b.once.Do(func() {
		b.path = filepath.Join(b.dir, "latencytest")
		args := []string{"build"}
		for _, tag := range b.tags {
			args = append(args, "-tags", tag)
		}
		args = append(append(args, racetest.BuildFlags()...), "-o", b.path, "latencytest/cmd/latencytest")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %v: %v\n%s", args, err, out)
		}
	})
	return b.path, b.err
}

// Path is Build for a test, which fails if the build does.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Close returns the race reports the binary's processes wrote, as an
// error (nil when none), and removes the binary.
func (b *Binary) Close() error {
	err := racetest.Reports(b.dir)
	return errors.Join(err, os.RemoveAll(b.dir))
}

// Main is TestMain for a package whose tests share one binary built with
// tags: it sets *bin before any test runs, and a race any of the binary's
// processes reported fails the package even when every test passed.
func Main(m *testing.M, bin **Binary, tags ...string) {
	b, err := New(tags...)
	if err != nil {
		panic(err)
	}
	*bin = b
	code := m.Run()
	if err := b.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.Exit(code)
}

// Results runs `latencytest run` with args into a results directory of the
// test's and returns that directory. The run writes no report and shows
// no progress: the tests read run.json and the samples, and a failing
// run's standard error is what the failure says (Output).
func (b *Binary) Results(t testing.TB, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	args = append([]string{"run", "--out", out, "--no-report", "--quiet"}, args...)
	if _, err := Output(exec.Command(b.Path(t), args...)); err != nil {
		t.Fatal(err)
	}
	return out
}

// Result is how a run of the binary ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the binary with args to its end.
func (b *Binary) Run(t testing.TB, args ...string) Result {
	t.Helper()
	cmd := exec.Command(b.Path(t), args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := Result{Stdout: so.String(), Stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// ReadRun reads the run.json of results directory dir.
func ReadRun(t testing.TB, dir string) *rundata.Run {
	t.Helper()
	r, err := rundata.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ReadSamples reads every period of phase ph of results directory dir.
func ReadSamples(t testing.TB, dir string, ph rundata.Phase) []rundata.Sample {
	t.Helper()
	ss, err := rundata.ReadSamples(filepath.Join(dir, ph.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// WaitMeasuring waits until the samples file at path grows: the run's
// engine measures. Tests that start something beside a run (a culprit, a
// stop) start it then, not after a fixed time a loaded host can outlast.
func WaitMeasuring(path string, timeout time.Duration) error {
	size := int64(-1)
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil {
			if size >= 0 && fi.Size() > size {
				return nil
			}
			size = fi.Size()
		}
	}
	return fmt.Errorf("%s did not grow within %v", path, timeout)
}
