package main

import (
	"fmt"
	"io"
)

func runMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "latencytest run: not built yet")
	return 1
}
