// Package badinput is the one error kind for input that is the user's to
// fix — a flag out of range, a device that does not exist or refuses a
// rate, a file that is not what it should be — as opposed to a failure
// while working. The CLI prints it as one line and exits 2.
//
// It is a package of its own that imports nothing of ours, so that every
// layer can make one without an upward import: the audio drivers, the
// stressors, the report's parsers, the runner, and the child processes,
// whose errors cross the process boundary as a flag on their report pipe
// (internal/child) and become this kind again in the parent. rundata would
// be the wrong home: it defines the results format, and a device refusing
// a rate has nothing to do with run.json.
package badinput

import (
	"errors"
	"fmt"
)

// Error is bad input. Its message is one line naming what was wrong (the
// flag, the device, the file) and what is allowed.
type Error struct{ err error }

func (e *Error) Error() string { return e.err.Error() }

// Unwrap gives the error Errorf wrapped with %w, if any.
func (e *Error) Unwrap() error { return e.err }

// New returns bad input with message msg.
func New(msg string) error { return &Error{errors.New(msg)} }

// Errorf formats bad input as fmt.Errorf does (%w wraps).
func Errorf(format string, a ...any) error { return &Error{fmt.Errorf(format, a...)} }

// Is reports whether err is, or wraps, bad input.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
