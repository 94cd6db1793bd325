package audio

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/internal/mono"
)

// Now returns CLOCK_MONOTONIC in nanoseconds: the same clock as ALSA's
// monotonic timestamps, read without a system call and without allocating
// (internal/mono).
func Now() int64 { return mono.Now() }

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// pin makes the calling goroutine non-preemptible until unpin: the Go
// scheduler's preemption of a goroutine locked to its thread hands the
// thread's P to another, ordinary-priority thread and waits for it to hand
// the goroutine back, which under load takes milliseconds. While pinned
// the goroutine must not block in the scheduler (channels, mutexes) nor
// make system calls that may lose the P: only raw ones.
func pin()   { procPin() }
func unpin() { procUnpin() }

// Sleeper sleeps on CLOCK_MONOTONIC. It keeps its Timespec with it so that
// sleeping does not allocate.
type Sleeper struct{ ts unix.Timespec }

// Until sleeps until the absolute CLOCK_MONOTONIC instant t, as cyclictest
// does (clock_nanosleep with TIMER_ABSTIME), resuming after signals. The
// call is raw: the runtime is not told, so the thread keeps its P and
// wakes straight back into the loop (see pin).
func (s *Sleeper) Until(t int64) {
	// NsecToTimespec, not Sec/Nsec by hand: the fields are int32 on
	// 32-bit Linux (the old clock_nanosleep takes a 32-bit timespec there,
	// enough for monotonic instants for 68 years of uptime).
	s.ts = unix.NsecToTimespec(t)
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&s.ts)), 0, 0, 0)
		if e != unix.EINTR {
			return
		}
	}
}

// For sleeps for d nanoseconds.
func (s *Sleeper) For(d int64) { s.Until(Now() + d) }
