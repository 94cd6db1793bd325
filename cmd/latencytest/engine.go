package main

import (
	"fmt"
	"io"
)

const engineCommand = "__engine"

func engineMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "engine: not built yet")
	return 1
}
