package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
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

// Rotation names are UTC whatever the zone of the time given: across the
// night daylight saving time ends in Berlin, local names would put the
// second 02:30 before the first one's successors and prune the newest.
func TestRotationNamesUTC(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	base := t.TempDir()
	first := time.Date(2026, 10, 25, 0, 45, 0, 0, time.UTC) // 02:45 CEST
	var names []string
	for i := range 4 { // every 30 minutes: 02:45 CEST, 02:15 CET (sooner in local time) ...
		dir, err := rotationDir(base, first.Add(time.Duration(i)*30*time.Minute).In(berlin))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(dir))
		os.Mkdir(dir, 0o755)
	}
	if names[0] != "20261025-004500" {
		t.Errorf("first name %s, want 20261025-004500 (UTC)", names[0])
	}
	if got, _ := Rotations(base); !slices.Equal(got, names) {
		t.Errorf("rotations in order %v, made in order %v", got, names)
	}
}

// Making room removes the oldest rotation, never the one being written
// nor the newest, and nothing else; with none to remove it says so.
func TestRemoveOldest(t *testing.T) {
	base := t.TempDir()
	for _, n := range []string{"20260101-000000", "20260101-000001", "20260101-000002", "other"} {
		os.Mkdir(filepath.Join(base, n), 0o755)
	}
	current := filepath.Join(base, "20260101-000000") // the oldest, being written
	var removed []string
	for {
		p, err := removeOldest(base, current)
		if p == "" {
			if err == nil {
				t.Error("nothing removed and no reason")
			}
			break
		}
		removed = append(removed, filepath.Base(p))
	}
	if !slices.Equal(removed, []string{"20260101-000001"}) {
		t.Errorf("removed %v, want only 20260101-000001", removed)
	}
	if left, _ := os.ReadDir(base); len(left) != 3 {
		t.Errorf("left %v", left)
	}
}
