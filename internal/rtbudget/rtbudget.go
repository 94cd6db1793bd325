// Package rtbudget lifts the kernel's real-time budget for the length of
// a run and puts it back. With the budget on (sched_rt_runtime_us of every
// sched_rt_period_us, 950 ms of 1 s by default) an audio thread that uses
// up its share is stopped by the kernel for the rest of the period, and
// that stop reads as latency; run --lift-rt-budget measures without it.
//
// The budget is held by a guard process of its own, not by the run, and
// recorded in the settings' store (internal/held) that every latencytest
// process shares: overlapping runs share the lift, the first records the
// budget it found, and the last to end puts that back. The guard lets go
// when it is told to stop and when the run dies however it dies (it gets
// SIGTERM from PR_SET_PDEATHSIG); a guard killed itself leaves its record,
// and the next run or `latencytest check --restore` puts the budget back
// from it.
package rtbudget

import (
	"context"
	"errors"
	"os"
	"strings"

	"latencytest/internal/held"
)

// Path is the budget's sysctl; the guard never writes anywhere else.
const Path = "/proc/sys/kernel/sched_rt_runtime_us"

// unlimited is the budget's "no limit".
const unlimited = "-1"

// Ready is the guard's first message: the value it replaced.
type Ready struct {
	Was string `json:"was"`
	// Recovered is the budget put back, before the lift, from the record
	// of a run that was killed holding it; "" when there was none.
	Recovered string `json:"recovered,omitempty"`
}

// Setting is the budget at path lifted: no limit.
func Setting(path string) held.Setting {
	return held.Setting{
		Name: "rt-budget",
		Found: func() ([]held.Write, error) {
			b, err := os.ReadFile(path)
			return []held.Write{{Path: path, Value: strings.TrimSpace(string(b))}}, err
		},
		Set: []held.Write{{Path: path, Value: unlimited}},
	}
}

// Guard lifts the budget at path as a holder in store, says so with ready
// (the value the first holder found), holds it until ctx ends, and lets
// go: the last holder puts the budget back.
func Guard(ctx context.Context, store *held.Store, path string, ready func(Ready) error) error {
	h, err := store.Acquire(Setting(path))
	if err != nil {
		return err
	}
	r := Ready{Was: h.Found[0].Value}
	if len(h.Recovered) > 0 {
		r.Recovered = h.Recovered[0].Value
	}
	if err := ready(r); err != nil {
		return errors.Join(err, h.Release())
	}
	<-ctx.Done()
	return h.Release()
}
