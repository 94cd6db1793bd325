package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"latencytest/ktrace"
	"latencytest/runner"
)

const traceGuardCommand = runner.TraceGuardCommand

// traceGuardMain is the guard `run --trace` starts: it reads on its stdin
// what the run's trace changed outside its instance, and when it is told
// to stop, when its parent dies or when the parent is no longer the one
// that started it, leaves the tracer as the run found it. A run that ended
// as it should has done so itself, and then there is nothing to do.
func traceGuardMain(args []string, stdout, stderr io.Writer) int {
	parent := os.Getppid()
	conn, ctx, stop, err := attachGuard()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", traceGuardCommand, err)
		return 1
	}
	defer stop()
	if conn == nil { // it acts on its parent's trace instance: only a run that traces may start it
		fmt.Fprintf(stderr, "%s: only run --trace starts it\n", traceGuardCommand)
		return 2
	}
	var sv ktrace.Saved
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 64<<10)).Decode(&sv); err != nil {
		err = fmt.Errorf("read what the trace changed: %w", err)
		conn.Fail(err)
		fmt.Fprintf(stderr, "%s: %v\n", traceGuardCommand, err)
		return 1
	}
	if err := conn.Send("ready", nil); err != nil {
		return 1
	}
	<-ctx.Done()
	if err := ktrace.Restore(parent, sv); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", traceGuardCommand, err)
		return 1
	}
	return 0
}
