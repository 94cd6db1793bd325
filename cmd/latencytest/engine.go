package main

import (
	"io"
	"os"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/runner"
)

const engineCommand = runner.EngineCommand

// engineMain is the engine process that `run` starts for each phase.
func engineMain(args []string, stdout, stderr io.Writer) int {
	return runner.EngineMain(os.Stdin, stdout, stderr, func(name string) (audio.Driver, error) {
		d, ok := lookupDriver(name)
		if !ok {
			return nil, badinput.Errorf("--driver %s: not built into this binary (built in: %v)", name, driverNames())
		}
		return d.new(), nil
	})
}
