// The start of a C callback that runs one audio period on a thread a
// library made (PortAudio's, libjack's): the wakeup is timestamped in C,
// first thing, before Go is entered. Entering Go from a thread C created
// needs a scheduler P, and on a busy machine that wait (milliseconds at
// worst, docs/portaudio.md) is the Go runtime's, not the wakeup's.
//
// Included by the cgo drivers (audio/portaudio, audio/jack) through
// #cgo CFLAGS: -I${SRCDIR}/../cthread. The go command does not see a header
// outside a package's directory change: after editing this file, rebuild
// those packages with go build -a (or go clean -cache).

#ifndef LT_CTHREAD_H
#define LT_CTHREAD_H

#include <stdint.h>
#include <time.h>
#include <sys/prctl.h>

// LT_THREAD_NAME is audio.CallbackThreadName (cthread_test.go checks they
// agree).
#define LT_THREAD_NAME "lt-audio"

// lt_callback_begin returns CLOCK_MONOTONIC in ns, read first, and names
// the calling thread LT_THREAD_NAME at its first call (after the
// timestamp: the name is not the period's), for the spike tracer, which
// cannot be told the thread's id before the stream runs. The libraries
// call back from one thread for a stream's life.
static inline int64_t lt_callback_begin(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	static __thread int named;
	if (!named) {
		prctl(PR_SET_NAME, LT_THREAD_NAME, 0, 0, 0);
		named = 1;
	}
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
