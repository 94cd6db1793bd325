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

#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <sys/prctl.h>

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

// LT_THREAD_NAME is audio.CallbackThreadName (cthread_test.go checks they
// agree).
#define LT_THREAD_NAME "lt-audio"

// lt_keep_rt_to_itself sets SCHED_RESET_ON_FORK on the calling thread if
// it runs under a real-time policy, keeping the policy and priority.
// The library's thread is real-time (libjack's: the server's priority
// less 5), and Go, entered from it, may start its next OS thread by
// cloning this one (the runtime clones from the current thread unless it
// is locked by LockOSThread or in C): that thread inherited SCHED_FIFO,
// ran ordinary goroutines at real-time priority, and every process
// started from it did too. Seen: the JACK tests' `go build` of the binary
// ran its linker at SCHED_FIFO 85 for minutes on 2 CPUs, and a jackd
// started so spun at 95 % of a CPU (the kernel's real-time throttle)
// while a client's open hung (docs/notes/gate.md).
static inline void lt_keep_rt_to_itself(void) {
	int policy = sched_getscheduler(0);
	struct sched_param p;
	if ((policy == SCHED_FIFO || policy == SCHED_RR) && sched_getparam(0, &p) == 0)
		sched_setscheduler(0, policy | SCHED_RESET_ON_FORK, &p);
}

// lt_callback_begin returns CLOCK_MONOTONIC in ns, read first, and at
// its first call (after the timestamp: neither is the period's) names the
// calling thread LT_THREAD_NAME, for the spike tracer, which cannot be
// told the thread's id before the stream runs, and keeps its real-time
// policy from every thread and process it starts (lt_keep_rt_to_itself).
// The libraries call back from one thread for a stream's life.
static inline int64_t lt_callback_begin(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	static __thread int named;
	if (!named) {
		prctl(PR_SET_NAME, LT_THREAD_NAME, 0, 0, 0);
		lt_keep_rt_to_itself();
		named = 1;
	}
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
