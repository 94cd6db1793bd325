// Package rtbudget lifts the kernel's real-time budget for the length of
// a run and puts it back. With the budget on (sched_rt_runtime_us of every
// sched_rt_period_us, 950 ms of 1 s by default) an audio thread that uses
// up its share is stopped by the kernel for the rest of the period, and
// that stop reads as latency; run --lift-rt-budget measures without it.
//
// The old value is kept by a guard process of its own, not by the run:
// the guard writes it back when it is told to stop, and when the run dies
// however it dies (the guard gets SIGTERM from PR_SET_PDEATHSIG), so a
// killed run does not leave a machine without its safety net.
package rtbudget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Path is the budget's sysctl; the guard never writes anywhere else.
const Path = "/proc/sys/kernel/sched_rt_runtime_us"

// unlimited is the budget's "no limit".
const unlimited = "-1"

// Ready is the guard's first message: the value it replaced.
type Ready struct {
	Was string `json:"was"`
}

// Lift replaces the budget at path with no limit and returns the value it
// had. Where it is already unlimited it changes nothing.
func Lift(path string) (was string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	was = strings.TrimSpace(string(b))
	if was == unlimited {
		return was, nil
	}
	if err := os.WriteFile(path, []byte(unlimited), 0); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return "", fmt.Errorf("write %s: %w (run as root)", path, err)
		}
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return was, nil
}

// Restore writes was back to path.
func Restore(path, was string) error {
	if err := os.WriteFile(path, []byte(was), 0); err != nil {
		return fmt.Errorf("restore %s to %s: %w", path, was, err)
	}
	return nil
}

// Guard lifts the budget at path, says so with ready (the value it
// replaced), holds it until ctx ends, and restores it.
func Guard(ctx context.Context, path string, ready func(Ready) error) error {
	was, err := Lift(path)
	if err != nil {
		return err
	}
	if err := ready(Ready{Was: was}); err != nil {
		Restore(path, was)
		return err
	}
	<-ctx.Done()
	return Restore(path, was)
}
