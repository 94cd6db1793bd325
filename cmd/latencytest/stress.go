package main

import (
	"fmt"
	"io"
	"os"

	"latencytest/stress"
)

// stressMain runs one stressor by hand (`latencytest stress NAME`), and is
// also how `run` starts each phase's load in a process of its own.
func stressMain(args []string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "latencytest stress: cannot find this binary: %v\n", err)
		return 1
	}
	return stress.Main(exe, args, stdout, stderr)
}
