package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// prune keeps the newest directories named as rotations and nothing else
// is touched: other names, symlinks.
func TestPrune(t *testing.T) {
	base := t.TempDir()
	for _, n := range []string{"20260101-000000", "20260101-000001", "20260101-000001-2", "20260101-000001-10", "20251231-235959", "other"} {
		if err := os.Mkdir(filepath.Join(base, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(base, "20200101-000000")); err != nil {
		t.Fatal(err)
	}
	if err := prune(base, 2); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"20200101-000000", "20260101-000001-10", "20260101-000001-2", "other"}
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the symlink's target: %v", err)
	}
}
