package main

import (
	"context"
	"os/signal"
	"syscall"

	"latencytest/internal/child"
)

// attachGuard is how a guard process starts (the real-time budget's, the
// tracer's): attached to the run that started it, with a context that
// ends when it is told to stop (SIGTERM, SIGINT, SIGHUP; its parent's
// death sends SIGTERM, by PR_SET_PDEATHSIG) or when the run is no longer
// its parent. It then puts back what the run changed.
func attachGuard() (*child.Conn, context.Context, context.CancelFunc, error) {
	conn, err := child.Attach()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	conn.WatchParent(ctx, stop)
	return conn, ctx, stop, nil
}
