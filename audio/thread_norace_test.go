//go:build !race

package audio_test

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/audio"
)

// Not under the race detector: its shadow memory is faulted in on first
// use, by the loop's thread too, so the loop does take page faults there.

// threadFaults is the calling thread's count of page faults (minor and
// major), by a raw system call that neither allocates nor loses the P.
func threadFaults(ru *unix.Rusage) int64 {
	unix.RawSyscall(unix.SYS_GETRUSAGE, unix.RUSAGE_THREAD, uintptr(unsafe.Pointer(ru)), 0)
	return int64(ru.Minflt) + int64(ru.Majflt) // long: int32 on 32-bit
}

// deep uses about depth KB of stack, as a rare, deep path of a driver
// would (an ALSA recovery at the first xrun).
//
//go:noinline
func deep(depth int) byte {
	var frame [1024]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return deep(depth-1) + frame[(depth*7)%len(frame)]
}

// The loop takes no page fault, even when a period runs a path that
// needs most of audio.LoopStack for the first time: the stack grew, and
// was touched, before the stream started. (Without that, the stack would
// grow in the loop: a copy into freshly allocated, never touched memory.)
func TestLoopTakesNoPageFault(t *testing.T) {
	var ru unix.Rusage
	var first, last int64
	var sink byte
	ran := false
	const periods = 50
	runProbe(t, periods, func(i int64) {
		switch i {
		case 1:
			first = threadFaults(&ru)
		case 25:
			sink += deep(audio.LoopStack * 3 / 4 / 1024)
		case periods - 1:
			last, ran = threadFaults(&ru), true
		}
	})
	// Not "first == 0 && last == 0": a thread that never faulted has 0
	// both times (seen once on armhf, in scripts/vmtest -arch arm).
	if !ran {
		t.Fatal("the probe never ran")
	}
	if n := last - first; n != 0 {
		t.Errorf("%d page faults on the loop's thread during the loop, want 0", n)
	}
	_ = sink
}
