package audio

import (
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's CLOCK_MONOTONIC reading through the vDSO: the
// same clock as clock_gettime(CLOCK_MONOTONIC) and ALSA's monotonic
// timestamps, read without a system call and without allocating.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns CLOCK_MONOTONIC in nanoseconds.
func Now() int64 { return nanotime() }

// Sleeper sleeps on CLOCK_MONOTONIC. It keeps its Timespec with it so that
// sleeping does not allocate.
type Sleeper struct{ ts unix.Timespec }

// Until sleeps until the absolute CLOCK_MONOTONIC instant t, as cyclictest
// does (clock_nanosleep with TIMER_ABSTIME), resuming after signals.
func (s *Sleeper) Until(t int64) {
	s.ts.Sec = t / 1e9
	s.ts.Nsec = t % 1e9
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &s.ts, nil) == unix.EINTR {
	}
}

// For sleeps for d nanoseconds.
func (s *Sleeper) For(d int64) { s.Until(Now() + d) }
