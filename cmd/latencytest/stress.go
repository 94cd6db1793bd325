package main

import (
	"fmt"
	"io"
)

// stressMain is provided by its own issue; until then it says so.
func stressMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "latencytest stress: not built yet")
	return 1
}
