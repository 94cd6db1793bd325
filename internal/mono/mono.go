// Package mono reads CLOCK_MONOTONIC, the clock of the samples, of ALSA's
// timestamps and of the kernel's trace (trace_clock mono).
package mono

import _ "unsafe" // go:linkname

// nanotime is the runtime's own reading of CLOCK_MONOTONIC, through the
// vDSO.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now returns CLOCK_MONOTONIC in nanoseconds, without a system call and
// without allocating. A clock_gettime system call instead would be one the
// Go scheduler is told of: taken in a loop, it keeps the runtime's sysmon
// thread waking every 20 µs to take back the goroutine's P, and on a
// virtual machine it may leave the vDSO's fast path for a real exit.
func Now() int64 { return nanotime() }
