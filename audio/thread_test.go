package audio_test

import (
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/rundata"
)

// probeDriver is a blocking driver with a 1 ms period whose Wait runs
// probe on the loop's thread before sleeping; it is pinnable, like the
// real drivers.
type probeDriver struct {
	next, period int64
	sleep        audio.Sleeper
	probe        func(index int64)
	index        int64
}

func (d *probeDriver) Open(audio.Config) (audio.Granted, error) { return audio.Granted{}, nil }
func (d *probeDriver) Start() (int64, error) {
	now := audio.Now()
	d.next = now + d.period
	return now, nil
}
func (d *probeDriver) Wait(p *rundata.Sample) error {
	d.probe(d.index)
	d.index++
	p.Due = d.next
	d.sleep.Until(d.next)
	p.Woke = audio.Now()
	d.next += d.period
	return nil
}
func (d *probeDriver) Transfer(*rundata.Sample) error { return nil }
func (d *probeDriver) Close() error                   { return nil }
func (d *probeDriver) PinnableLoop() bool             { return true }

func runProbe(t *testing.T, periods int64, probe func(index int64)) {
	t.Helper()
	const period = 1e6
	d := &probeDriver{period: period, probe: probe}
	e := audio.NewEngine(d, period, audio.Options{Duration: periods * period, StallAt: -1}, audio.NewRing(1<<12))
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
}

// threadFaults is the calling thread's count of page faults (minor and
// major), by a raw system call that neither allocates nor loses the P.
func threadFaults(ru *unix.Rusage) int64 {
	unix.RawSyscall(unix.SYS_GETRUSAGE, unix.RUSAGE_THREAD, uintptr(unsafe.Pointer(ru)), 0)
	return ru.Minflt + ru.Majflt
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
	const periods = 50
	runProbe(t, periods, func(i int64) {
		switch i {
		case 1:
			first = threadFaults(&ru)
		case 25:
			sink += deep(audio.LoopStack * 3 / 4 / 1024)
		case periods - 1:
			last = threadFaults(&ru)
		}
	})
	if first == 0 && last == 0 {
		t.Fatal("the probe never ran")
	}
	if n := last - first; n != 0 {
		t.Errorf("%d page faults on the loop's thread during the loop, want 0", n)
	}
	_ = sink
}

// While the loop runs, its thread blocks every asynchronous signal (so the
// kernel hands SIGTERM, SIGINT and the runtime's SIGURG to other threads),
// keeps the fault signals open, and gets its mask back afterwards.
func TestLoopThreadBlocksSignals(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, during, after uint64
	sig := func(s unix.Signal) uint64 { return 1 << (s - 1) }
	mask := func(m *uint64) {
		unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, 0, uintptr(unsafe.Pointer(m)), 8, 0, 0)
	}
	mask(&before)
	runProbe(t, 5, func(i int64) {
		if i == 2 {
			mask(&during)
		}
	})
	mask(&after)
	for _, s := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGURG, unix.SIGCHLD, unix.SIGPIPE, unix.SIGPROF, unix.SIGWINCH} {
		if during&sig(s) == 0 {
			t.Errorf("%v not blocked on the loop's thread (mask %#x)", s, during)
		}
	}
	for _, s := range []unix.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS} {
		if during&sig(s) != 0 {
			t.Errorf("fault signal %v blocked on the loop's thread (mask %#x)", s, during)
		}
	}
	if after != before {
		t.Errorf("mask %#x after the run, %#x before", after, before)
	}
}
