// Package fuzzseed gives a fuzz target its seed corpus of real files: every
// parser of a file latencytest reads is fuzzed from the files it meets.
package fuzzseed

import (
	"os"
	"path/filepath"
	"runtime"
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

// slack is what any parser may allocate whatever its input: its fixed
// tables, a bufio buffer, a decoder's state.
const slack = 256 << 10

// Bounded runs parse, which reads an input of n bytes, and fails t when
// it allocated more than perByte bytes for each byte of the input, plus
// held and a fixed slack: a parser whose memory follows a length field, a
// count in the input or its number of lines, rather than the bytes
// present, fails it. held is what parse says its result keeps by design
// and bounds otherwise (a histogram's pages of bins). Every fuzz target
// runs its parser through it, so that such a regression fails `make
// fuzz-short`; the allocation is the process's (runtime.MemStats), so
// parse must not start goroutines that outlive it.
func Bounded(t *testing.T, n, perByte int, parse func() (held int)) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	held := parse()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if limit := uint64(perByte*n + held + slack); alloc > limit {
		t.Fatalf("%d bytes allocated to read %d bytes (at most %d a byte, plus %d held and %d)", alloc, n, perByte, held, slack)
	}
}
