//go:build vm

package alsa

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/audio"
)

// The emulated machine stops now and then for milliseconds: its vCPUs
// are host threads on a shared host, and qemu's main loop can hold them
// all. A stop longer than what a player has queued is an underrun for
// any player, aplay and latencytest alike, and it falls at random into
// one run or another. Comparing counts of such rare events between runs
// that do not overlap in time fails by chance. So the comparisons count
// the machine's own stops with a witness, and compare only the xruns no
// stop explains.
//
// The witness is a cyclictest in miniature on each CPU: a thread at
// SCHED_FIFO 95 (above every player's 80) pinned to the CPU, sleeping to
// an absolute 1 ms grid. Nothing in the guest holds such a thread off
// its CPU for milliseconds but the guest's kernel with preemption off;
// when it wakes late, the CPU was not running at all (the host had its
// vCPU thread off, or qemu held it). It costs each CPU one short wakeup a
// millisecond, for every player alike.

// freezeWitness records the machine's stops on every CPU until stop.
type freezeWitness struct {
	stopped atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	seen    []freeze
	errs    []error
}

// startFreezeWitness starts one witness thread per CPU.
func startFreezeWitness(t testing.TB) *freezeWitness {
	t.Helper()
	w := &freezeWitness{}
	ready := make(chan error, runtime.NumCPU())
	for cpu := 0; cpu < runtime.NumCPU(); cpu++ {
		w.wg.Add(1)
		go w.watch(cpu, ready)
	}
	for i := 0; i < runtime.NumCPU(); i++ {
		if err := <-ready; err != nil {
			w.stop()
			t.Fatalf("freeze witness: %v", err)
		}
	}
	t.Cleanup(func() { w.stop() })
	return w
}

// watch is one CPU's witness.
func (w *freezeWitness) watch(cpu int, ready chan<- error) {
	defer w.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		ready <- fmt.Errorf("CPU %d: %w", cpu, err)
		return
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 95}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		ready <- fmt.Errorf("SCHED_FIFO 95: %w", err)
		return
	}
	ready <- nil
	const period = int64(time.Millisecond)
	next := audio.Now() + period
	for !w.stopped.Load() {
		ts := unix.NsecToTimespec(next)
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err != nil && err != unix.EINTR {
			w.mu.Lock()
			w.errs = append(w.errs, err)
			w.mu.Unlock()
			return
		}
		now := audio.Now()
		if now-next >= int64(witnessLate) {
			w.mu.Lock()
			w.seen = append(w.seen, freeze{cpu: cpu, due: next, woke: now})
			w.mu.Unlock()
		}
		next += period
		if next <= now {
			next = now + period
		}
	}
}

func (w *freezeWitness) stop() {
	w.stopped.Store(true)
	w.wg.Wait()
}

// freezes returns the stops seen so far.
func (w *freezeWitness) freezes() []freeze {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]freeze(nil), w.seen...)
}
