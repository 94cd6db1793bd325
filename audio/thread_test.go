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
