package rtbudget

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The guard lifts the budget, says what it was, holds it lifted while it
// runs, and puts the old value back when its context ends.
func TestGuard(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sched_rt_runtime_us")
	os.WriteFile(p, []byte("950000\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	held := make(chan string)
	go func() {
		done <- Guard(ctx, p, func(r Ready) error {
			b, _ := os.ReadFile(p)
			held <- r.Was + " " + string(b)
			return nil
		})
	}()
	if got := <-held; got != "950000 -1" {
		t.Errorf("while held: was and now %q, want \"950000 -1\"", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != "950000" {
		t.Errorf("after: %q, want 950000 back", b)
	}
}

// Already unlimited: nothing to change; a budget that cannot be read is
// an error naming the file.
func TestLiftEdges(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rt")
	os.WriteFile(p, []byte("-1\n"), 0o644)
	if was, err := Lift(p); err != nil || was != "-1" {
		t.Errorf("unlimited: %q, %v", was, err)
	}
	if _, err := Lift(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing file: %v", err)
	}
}
