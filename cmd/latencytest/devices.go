package main

import (
	"fmt"
	"io"
)

// devicesMain is provided by its own issue; until then it says so.
func devicesMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "latencytest devices: not built yet")
	return 1
}
