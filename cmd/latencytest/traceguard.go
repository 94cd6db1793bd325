package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"latencytest/internal/child"
	"latencytest/ktrace"
	"latencytest/runner"
)

const traceGuardCommand = runner.TraceGuardCommand

// traceGuardMain is the guard `run --trace` starts, with the run's pid as
// its argument: it reads on its stdin what the run's trace changed outside
// its instance, and when it is told to stop, when the run dies or when the
// run is no longer its parent, leaves the tracer as the run found it. A
// run that ended as it should has done so itself; then there is nothing
// left to do. A run that died before the guard was attached, or before it
// had written what it changed, is cleaned up as the next run would clean
// it (the osnoise tracer's defaults).
func traceGuardMain(args []string, stdout, stderr io.Writer) int {
	run, err := strconv.Atoi(firstArg(args))
	if err != nil || run <= 1 {
		fmt.Fprintf(stderr, "%s: want the pid of the run that traces, got %q\n", traceGuardCommand, firstArg(args))
		return 2
	}
	conn, ctx, stop, err := attachGuard()
	switch {
	case errors.Is(err, child.ErrParentGone):
		return restoreTrace(run, nil, stderr)
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", traceGuardCommand, err)
		return 1
	case conn == nil: // it acts on its parent's trace instance: only a run that traces may start it
		fmt.Fprintf(stderr, "%s: only run --trace starts it\n", traceGuardCommand)
		return 2
	}
	defer stop()
	var sv *ktrace.Saved
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 64<<10)).Decode(&sv); err != nil {
		sv = nil // the run died while writing it
	}
	conn.Send("ready", nil)
	<-ctx.Done()
	return restoreTrace(run, sv, stderr)
}

func restoreTrace(run int, sv *ktrace.Saved, stderr io.Writer) int {
	if err := ktrace.Restore(run, sv); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", traceGuardCommand, err)
		return 1
	}
	return 0
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
