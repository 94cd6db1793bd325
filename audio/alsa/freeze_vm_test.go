//go:build vm

package alsa

import (
	"fmt"
	"math"
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

// freeze is one late wakeup of a witness: the CPU was held from due to
// woke (CLOCK_MONOTONIC ns).
type freeze struct {
	cpu       int
	due, woke int64
}

func (f freeze) length() int64 { return f.woke - f.due }

// witnessLate is the lateness from which a witness wakeup is recorded.
const witnessLate = 500 * time.Microsecond

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

// xrunAt is one xrun of a player, as the test saw it: when it was
// noticed (aplay's line read, latencytest's wakeup) and its length.
type xrunAt struct {
	at int64 // CLOCK_MONOTONIC ns
	ms float64
}

// explainedBy says whether the machine's stops explain an xrun noticed
// at x.at by a player with bufNS queued and periodNS per period: one CPU
// stopped for at least half the player's slack (the buffer less the
// period it refills: how late a wakeup may be), in one stop or several,
// within the buffer's time before the xrun was noticed, plus 20 ms for
// the notice itself (aplay's line through a pipe). Less cannot starve the
// buffer on its own. It returns how long that CPU was stopped.
func explainedBy(x xrunAt, fs []freeze, bufNS, periodNS int64) (int64, bool) {
	minLen := max((bufNS-periodNS)/2, int64(witnessLate))
	from, to := x.at-bufNS-periodNS-int64(20*time.Millisecond), x.at
	stopped := map[int]int64{}
	longest := int64(0)
	for _, f := range fs {
		if lo, hi := max(f.due, from), min(f.woke, to); hi > lo {
			stopped[f.cpu] += hi - lo
			longest = max(longest, stopped[f.cpu])
		}
	}
	return longest, longest >= minLen
}

// unexplained splits xs into those no stop of fs explains and the rest.
func unexplained(xs []xrunAt, fs []freeze, bufNS, periodNS int64) (left []xrunAt, explained int) {
	for _, x := range xs {
		if _, ok := explainedBy(x, fs, bufNS, periodNS); ok {
			explained++
			continue
		}
		left = append(left, x)
	}
	return left, explained
}

// freezeSummary says how many stops, and the longest, fell between from
// and to.
func freezeSummary(fs []freeze, from, to int64) string {
	n, longest := 0, int64(0)
	for _, f := range fs {
		if f.woke >= from && f.due <= to {
			n++
			longest = max(longest, f.length())
		}
	}
	return fmt.Sprintf("%d stops of the machine ≥ %v, longest %.1f ms", n, witnessLate, float64(longest)/1e6)
}

// countsAgree is the rule the comparisons decide by, on the xruns the
// machine's stops do not explain: latencytest's count n against the
// reference's counts a and b on the same boot, before and after it. Where
// the reference had none, twice (stable), latencytest must have none:
// exact. Otherwise n must lie within the reference's boot-to-boot spread:
// the range of a and b widened by its own width and by three Poisson
// standard deviations of its ends (counts of random events: two runs
// alike by chance are no narrower truth).
func countsAgree(n, a, b int) (ok bool, band string) {
	lo, hi := min(a, b), max(a, b)
	if hi == 0 {
		return n == 0, "0 (the reference had none, twice)"
	}
	w := hi - lo
	l := lo - w - int(math.Ceil(3*math.Sqrt(float64(lo))))
	h := hi + w + int(math.Ceil(3*math.Sqrt(float64(hi))))
	l = max(l, 0)
	return n >= l && n <= h, fmt.Sprintf("%d to %d (the reference's %d and %d, widened by their spread and 3 σ)", l, h, a, b)
}
