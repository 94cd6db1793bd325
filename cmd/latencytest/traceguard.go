package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"latencytest/internal/child"
	"latencytest/internal/held"
	"latencytest/internal/procfile"
	"latencytest/ktrace"
	"latencytest/runner"
)

const traceGuardCommand = runner.TraceGuardCommand

// traceGuardMain is the guard `run --trace` starts, with the run's pid as
// its argument (ktrace.Guard): the run must be its parent, which it names
// by pid, start time and PID namespace while it runs (pid 1 too: a run
// as a container's init). A run that died
// before the guard was attached is cleaned up as the next run would clean
// it: the instances of processes that are gone are removed.
func traceGuardMain(args []string, stdout, stderr io.Writer) int {
	pid, err := strconv.Atoi(firstArg(args))
	if err != nil || pid < 1 {
		fmt.Fprintf(stderr, "%s: want the pid of the run that traces, got %q\n", traceGuardCommand, firstArg(args))
		return 2
	}
	conn, ctx, stop, err := attachGuard()
	if stop != nil {
		defer stop()
	}
	var run procfile.Proc
	if err == nil && conn != nil {
		run, err = procfile.ProcOf(pid)
		if err != nil || os.Getppid() != pid {
			err = child.ErrParentGone // it died meanwhile, or the pid is not the parent's
		}
	}
	store, serr := held.OpenKernel()
	if serr != nil {
		fmt.Fprintf(stderr, "%s: %v; the tracer's shared settings are left to their record\n", traceGuardCommand, serr)
	}
	switch {
	case errors.Is(err, child.ErrParentGone):
		_, err = ktrace.RemoveStale(store)
	case err != nil:
	case conn == nil: // it acts on its parent's trace instance: only a run that traces may start it
		fmt.Fprintf(stderr, "%s: only run --trace starts it\n", traceGuardCommand)
		return 2
	default:
		err = ktrace.Guard(ctx, run, store, func() { conn.Send("ready", nil) })
	}
	if err != nil {
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
