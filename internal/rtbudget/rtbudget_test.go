package rtbudget

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latencytest/internal/held"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// guard starts a Guard of the budget at p in store and returns what it
// said and what ends it.
func guard(t *testing.T, store *held.Store, p string) (Ready, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan Ready, 1)
	go func() { done <- Guard(ctx, store, p, func(r Ready) error { ready <- r; return nil }) }()
	select {
	case r := <-ready:
		return r, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("guard: %v", err)
	}
	return Ready{}, nil
}

// Two guards overlapping, the first ending first: the budget is off while
// either holds it, both say the budget they replaced was the original (the
// second does not take the first's -1 for it), and the original is back
// after the second. The records are kept in storeDir.
func testOverlap(t *testing.T, p, storeDir string) {
	was := read(t, p)
	store, err := held.Open(storeDir, []string{filepath.Dir(p) + "/"})
	if err != nil {
		t.Fatal(err)
	}
	r1, stop1 := guard(t, store, p)
	r2, stop2 := guard(t, store, p)
	if r1.Was != was || r2.Was != was {
		t.Errorf("the guards say they replaced %q and %q, want %q both", r1.Was, r2.Was, was)
	}
	if got := read(t, p); got != "-1" {
		t.Errorf("held by two: %s, want -1", got)
	}
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != "-1" {
		t.Errorf("the first ended, the second still measures: %s, want -1", got)
	}
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != was {
		t.Errorf("after both: %s, want %s back", got, was)
	}
}

func TestGuardOverlap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sched_rt_runtime_us")
	os.WriteFile(p, []byte("950000\n"), 0o644)
	testOverlap(t, p, filepath.Join(t.TempDir(), "run"))
}

// The same on this machine's sched_rt_runtime_us, as root, with the
// records in a directory of the test's; the budget is put back at the end
// whatever the test finds.
func TestGuardOverlapReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writing sched_rt_runtime_us needs root")
	}
	b, err := os.ReadFile(Path)
	if err != nil {
		t.Skip(err)
	}
	was := strings.TrimSpace(string(b))
	if was == unlimited {
		t.Skip("sched_rt_runtime_us is already -1: no budget to lift")
	}
	t.Cleanup(func() {
		if err := os.WriteFile(Path, []byte(was), 0); err != nil {
			t.Errorf("put %s back: %v", was, err)
		}
	})
	testOverlap(t, Path, filepath.Join(t.TempDir(), "run"))
}

// A budget that cannot be read is an error naming the file, and no record
// is left.
func TestGuardUnreadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	store, err := held.Open(dir, []string{"/"})
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	err = Guard(context.Background(), store, missing, func(Ready) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: %v", err)
	}
	if ms, _ := filepath.Glob(filepath.Join(dir, "*")); len(ms) != 0 {
		t.Errorf("left %v", ms)
	}
}
