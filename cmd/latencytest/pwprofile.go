package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"latencytest/internal/pwprofile"
	"latencytest/runner"
)

const pwProfileCommand = runner.PWProfileCommand

// pwProfileMain is the child a phase through PipeWire starts (runner's
// profiler): it runs pw-profiler in its private temporary directory, says
// ready once pw-profiler logs cycles, and when told to stop (SIGTERM; its
// parent's death sends it) stops pw-profiler and sends the account of its
// profile (runner.ServerRecord). Its argument is how the server was told.
func pwProfileMain(args []string, stdout, stderr io.Writer) int {
	conn, ctx, stop, err := attachGuard()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", pwProfileCommand, err)
		return 1
	}
	defer stop()
	how := ""
	if len(args) > 0 {
		how = args[0]
	}
	fail := func(err error) int {
		conn.Fail(err)
		fmt.Fprintf(stderr, "%s: %v\n", pwProfileCommand, err)
		return 1
	}
	dir := conn.TempDir()
	if dir == "" {
		return fail(errors.New("no temporary directory"))
	}
	rec, err := pwprofile.Start(dir)
	if err != nil {
		return fail(err)
	}
	// The engine's node may be the graph's first: then nothing runs, and
	// nothing is logged, until it joins. Ready once pw-profiler logs or
	// has run a second.
	if err := rec.WaitStarted(ctx, time.Second); err != nil {
		rec.Stop()
		return fail(err)
	}
	if err := conn.Send("ready", nil); err != nil {
		rec.Stop()
		return 1
	}
	<-ctx.Done()
	prof, err := rec.Stop()
	if err != nil {
		return fail(fmt.Errorf("reading pw-profiler's log: %w", err))
	}
	if len(prof.Records) == 0 {
		return fail(fmt.Errorf("pw-profiler logged no cycle (is libpipewire-module-profiler loaded?): %s", strings.Join(strings.Fields(rec.Output()), " ")))
	}
	if err := runner.SendProfile(conn, prof, how); err != nil {
		return 1
	}
	return 0
}
