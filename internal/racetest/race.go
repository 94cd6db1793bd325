//go:build race

package racetest

// Enabled reports whether the test runs under the race detector.
const Enabled = true

// Slow scales how long a test lets the binary run before it looks at what
// it did: under the race detector a process starts several times slower.
// Assertions stay as they are.
const Slow = 3
