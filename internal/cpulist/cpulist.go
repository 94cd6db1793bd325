// Package cpulist reads and writes CPU lists as the kernel and taskset -c
// spell them: "0-3,6".
package cpulist

import (
	"slices"
	"strconv"
	"strings"
)

// maxSpan bounds one range, so that a damaged list cannot make a
// billion-CPU slice.
const maxSpan = 1 << 16

// Parse reads a CPU list such as "0-3,6" into its CPUs, in the order
// given, each once; ok is false when s is not a list (empty included).
func Parse(s string) (cpus []int, ok bool) {
	if s == "" {
		return nil, false
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b-a > maxSpan {
			return nil, false
		}
		for c := a; c <= b; c++ {
			if !slices.Contains(cpus, c) {
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, true
}

// Format writes cpus as a list the kernel parses ("0,2,3").
func Format(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
