package main

import (
	"fmt"
	"io"
)

// compareMain is provided by the report issue; until then it says so.
func compareMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "latencytest compare: not built yet")
	return 1
}
