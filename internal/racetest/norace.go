//go:build !race

package racetest

// Enabled and Slow: see race.go.
const Enabled = false

const Slow = 1
