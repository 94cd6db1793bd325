// Package cthread holds cthread.h, the C start of the callbacks of the
// drivers whose periods run on a thread a C library made (audio/portaudio,
// audio/jack): the wakeup's CLOCK_MONOTONIC timestamp, read before Go is
// entered, and the thread named audio.CallbackThreadName. Each driver's C
// callback calls lt_callback_begin first and then its exported Go
// function, which finds the driver through a runtime/cgo.Handle. It has
// no Go code: the package is the header's home.
package cthread
