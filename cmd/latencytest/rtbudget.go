package main

import (
	"fmt"
	"io"

	"latencytest/internal/held"
	"latencytest/internal/rtbudget"
	"latencytest/runner"
)

const rtBudgetCommand = runner.RTBudgetCommand

// rtBudgetMain is the guard `run --lift-rt-budget` starts: it lifts the
// real-time budget, as a holder in the settings' store (internal/held),
// and lets go when told to stop, when its parent dies, or when the parent
// is no longer the one that started it; the last holder puts it back.
func rtBudgetMain(args []string, stdout, stderr io.Writer) int {
	conn, ctx, stop, err := attachGuard()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", rtBudgetCommand, err)
		return 1
	}
	defer stop()
	store, err := held.OpenKernel()
	if err == nil {
		err = rtbudget.Guard(ctx, store, rtbudget.Path, func(r rtbudget.Ready) error { return conn.Send("ready", r) })
	}
	if err != nil {
		conn.Fail(err)
		fmt.Fprintf(stderr, "%s: %v\n", rtBudgetCommand, err)
		return 1
	}
	return 0
}
