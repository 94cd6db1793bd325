// Package fuzzseed gives a fuzz target its seed corpus of real files: every
// parser of a file latencytest reads is fuzzed from the files it meets.
package fuzzseed

import (
	"os"
	"path/filepath"
	"testing"
)

// Add adds every file matching each of patterns to f's corpus, and fails
// when a pattern matches none: a seed corpus that went missing would
// leave the target fuzzing from nothing, silently.
func Add(f *testing.F, patterns ...string) {
	f.Helper()
	for _, pattern := range patterns {
		paths, err := filepath.Glob(pattern)
		if err != nil || len(paths) == 0 {
			f.Fatalf("no seed files %s (%v)", pattern, err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}
