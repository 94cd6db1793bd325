package main

import (
	"fmt"
	"io"
)

// reportMain is provided by the report issue; until then it says so.
func reportMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "latencytest report: not built yet")
	return 1
}
