// Package testhook carries the hooks by which the binary's tests reach into
// a measurement. They travel on the run's context, from the flag that sets
// them (run --test-stall) to the runner that acts on them, so that no public
// configuration shows them and nothing outside latencytest can set them.
package testhook

import (
	"context"
	"time"

	"latencytest/audio"
)

// Stall stalls the engine's period loop for For right after it wakes at
// period At of every phase, as if it had been woken that much later: a
// known late wakeup and xrun for the tests to read back.
type Stall struct {
	At  int64
	For time.Duration
	// CPU is, under run --cpus, the CPU whose loop stalls; -1: every
	// loop's. A run of one loop stalls it whatever CPU says.
	CPU int
}

type stallKey struct{}

// WithStall returns ctx carrying s. A Stall whose For is not above 0 is
// none.
func WithStall(ctx context.Context, s Stall) context.Context {
	if s.For <= 0 {
		return ctx
	}
	return context.WithValue(ctx, stallKey{}, s)
}

// StallOf is the stall ctx carries, if any.
func StallOf(ctx context.Context) (Stall, bool) {
	s, ok := ctx.Value(stallKey{}).(Stall)
	return s, ok
}

type glitchesKey struct{}

// WithGlitches returns ctx carrying gs, the sound's breaks every phase's
// engine makes on purpose (audio.Glitcher), in the order of their periods.
// None is no hook.
func WithGlitches(ctx context.Context, gs []audio.GlitchAt) context.Context {
	if len(gs) == 0 {
		return ctx
	}
	return context.WithValue(ctx, glitchesKey{}, gs)
}

// GlitchesOf is the glitches ctx carries, if any.
func GlitchesOf(ctx context.Context) []audio.GlitchAt {
	gs, _ := ctx.Value(glitchesKey{}).([]audio.GlitchAt)
	return gs
}
