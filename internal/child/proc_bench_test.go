package child

import "testing"

// BenchmarkProcesses is the walk every phase's end makes (clearGroup).
func BenchmarkProcesses(b *testing.B) {
	for b.Loop() {
		if _, err := Processes(); err != nil {
			b.Fatal(err)
		}
	}
}
