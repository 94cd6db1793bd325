// Package culprit is the known culprit of the spike tests: a thread with a
// distinctive name, SCHED_FIFO above the audio thread and pinned to its
// CPU, that busy-loops in bursts and then says when each burst ran, by its
// own clocks. The tests of ktrace and of the command judge latencytest's
// attribution against what it says.
package culprit

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"latencytest/internal/mono"
	"latencytest/rundata"
)

// Config is the culprit's name, place and rhythm.
type Config struct {
	Name   string        // its thread's comm (at most 15 bytes)
	CPU    int           // the one CPU it runs on
	Prio   int           // its SCHED_FIFO priority
	Busy   time.Duration // how long each burst busy-loops
	Gap    time.Duration // the sleep between bursts
	Bursts int
	// Settle is the sleep before the first burst: sched_switch records a
	// thread's priority when it is switched in, so the first burst starts
	// from a switch at the new priority.
	Settle time.Duration
}

// Burst is one burst: the culprit's thread id (what a tracer names it
// by: the goroutine running Run need not be on the process's main thread),
// when its sleep before the burst ended, the burst's start and end
// (CLOCK_MONOTONIC ns), the CPU time the thread had in it, and its gaps.
type Burst struct {
	TID int
	// Ready is the end of the sleep before the burst: from then on the
	// thread was runnable at its priority. Between Ready and Start it was
	// woken and returned to its loop, time its clock does not see but a
	// tracer charges to it once it is switched in (a host stall there
	// made 1.1 ms of it on Debian's kernel under TCG).
	Ready           int64
	Start, End, CPU int64
	// Gaps are the stretches of the burst in which the culprit's loop did
	// not run: more than gapNS between two of its clock readings. An
	// interrupt, another task or the host held the CPU there, and the
	// culprit's CPU clock need not show it: a kernel without interrupt
	// time accounting (Debian's under TCG) charges an interrupt's time
	// to the task it interrupted, even one the host stalled for 10 ms.
	Gaps [][2]int64
}

// gapNS is the least time between two clock readings of the culprit's
// loop that counts as a gap: the loop reads the clock every few tens of
// nanoseconds (a microsecond under TCG); an interrupt takes longer.
const gapNS = 20_000

// maxGaps bounds the gaps kept per burst, so that the loop never
// allocates; later ones are merged into the last.
const maxGaps = 256

// Run names the calling thread, pins it, runs the bursts and then writes
// one line per burst to w. The lines come at the end: a line written after
// each burst would keep the CPU past the burst's end (at SCHED_FIFO
// nothing below takes it back), which the tracer rightly charges to the
// culprit and its clock would not count (1.5 ms a line in the arm64 VM).
func Run(c Config, w io.Writer) error {
	runtime.LockOSThread()
	name := append([]byte(c.Name), 0)
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); err != nil {
		return fmt.Errorf("culprit: name: %w", err)
	}
	var set unix.CPUSet
	set.Set(c.CPU)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("culprit: pin to CPU %d: %w", c.CPU, err)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(c.Prio)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("culprit: SCHED_FIFO %d: %w", c.Prio, err)
	}
	bursts := make([]Burst, c.Bursts)
	for i := range bursts {
		bursts[i].Gaps = make([][2]int64, 0, maxGaps)
	}
	// Between bursts the thread runs nothing but its own code: a Go sleep
	// would run the runtime's scheduler on it at SCHED_FIFO before and
	// after each burst (a millisecond under TCG), which the tracer rightly
	// charges to the culprit outside the bursts it says; the runtime's
	// preemption signal would wake it in the gaps.
	urg := uint64(1 << (unix.SIGURG - 1))
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&urg)), 0, 8, 0, 0)
	ready := sleep(c.Settle)
	tid := unix.Gettid()
	for i := range bursts {
		bursts[i] = burst(c.Busy, bursts[i].Gaps)
		bursts[i].TID, bursts[i].Ready = tid, ready
		ready = sleep(c.Gap)
	}
	// Its report is written as an ordinary task, so that writing it
	// delays no one.
	attr = unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("culprit: SCHED_OTHER: %w", err)
	}
	for _, b := range bursts {
		if _, err := fmt.Fprintln(w, b.line()); err != nil {
			return err
		}
	}
	return nil
}

// burst busy-loops for busy, noting its gaps in gaps (empty, with room).
func burst(busy time.Duration, gaps [][2]int64) Burst {
	t0, c0 := mono.Now(), threadCPU()
	last := t0
	for {
		now := mono.Now()
		switch {
		case now-last <= gapNS:
		case len(gaps) < cap(gaps):
			gaps = append(gaps, [2]int64{last, now})
		default:
			gaps[len(gaps)-1][1] = now
		}
		last = now
		if now-t0 >= int64(busy) {
			break
		}
	}
	// The CPU clock is read inside the wall clock's interval, so that a
	// burst run through alone reads at most its length.
	c1 := threadCPU()
	return Burst{Start: t0, End: mono.Now(), CPU: c1 - c0, Gaps: gaps}
}

// line is how Run says a burst: thread id, ready, start, end, CPU, then
// each gap's start and end.
func (b Burst) line() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d %d %d %d %d", b.TID, b.Ready, b.Start, b.End, b.CPU)
	for _, g := range b.Gaps {
		fmt.Fprintf(&sb, " %d %d", g[0], g[1])
	}
	return sb.String()
}

// sleep sleeps d in clock_nanosleep, a system call the Go runtime is not
// told of, and returns the instant it ends.
func sleep(d time.Duration) int64 {
	end := mono.Now() + int64(d)
	ts := unix.NsecToTimespec(end)
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != unix.EINTR {
			return end
		}
	}
}

// threadCPU is the calling thread's CPU time, ns.
func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// Parse reads what Run wrote.
func Parse(said string) ([]Burst, error) {
	var bursts []Burst
	for _, line := range strings.Split(strings.TrimSpace(said), "\n") {
		var ns []int64
		for _, f := range strings.Fields(line) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("culprit said %q: %w", line, err)
			}
			ns = append(ns, n)
		}
		if len(ns) < 5 || len(ns)%2 == 0 {
			return nil, fmt.Errorf("culprit said %q: want thread id, ready, start, end, CPU and pairs of gap instants", line)
		}
		b := Burst{TID: int(ns[0]), Ready: ns[1], Start: ns[2], End: ns[3], CPU: ns[4]}
		for i := 5; i < len(ns); i += 2 {
			b.Gaps = append(b.Gaps, [2]int64{ns[i], ns[i+1]})
		}
		bursts = append(bursts, b)
	}
	return bursts, nil
}

// Caused tells a wakeup late from due to woke that the burst caused: due
// within the burst, or up to half a millisecond before its start (both
// timers expired at once and the culprit, at the higher priority, ran
// first, timing its start after the audio thread's period was due), and
// woken within a millisecond of its end.
func (b Burst) Caused(due, woke int64) bool {
	return b.Start-5e5 <= due && due < b.End && woke <= b.End+1e6
}

// Ran is how long the culprit itself ran between lo and hi: the burst's
// overlap with them less the gaps' there.
func (b Burst) Ran(lo, hi int64) int64 {
	ran := overlap(b.Start, b.End, lo, hi)
	for _, g := range b.Gaps {
		ran -= overlap(g[0], g[1], lo, hi)
	}
	return max(ran, 0)
}

func overlap(a0, a1, b0, b1 int64) int64 { return max(0, min(a1, b1)-max(a0, b0)) }

// Held is the time the burst's gaps took.
func (b Burst) Held() int64 { return b.End - b.Start - b.Ran(b.Start, b.End) }

// String says how much of the burst the culprit ran.
func (b Burst) String() string {
	return fmt.Sprintf("burst at %d: %.2f ms, %d gaps of %.2f ms, CPU clock %.2f ms", b.Start, float64(b.End-b.Start)/1e6,
		len(b.Gaps), float64(b.Held())/1e6, float64(b.CPU)/1e6)
}

// Judge compares a tracer's causes of a wakeup late from due to woke with
// what the culprit (c, thread b.TID) ran there by its own clock: it must be
// among them, by name, thread id and policy, with a time between what it ran
// less its gaps (Ran) and the whole of its burst there from Ready on, 20 %
// either way;
// and first where it ran most of the delay. The gaps are either side
// because the loop cannot tell an interrupt, which the tracer counts
// apart, from the host not running the vCPU, which a guest's tracer
// cannot see and puts down to the task it interrupted. It returns what is
// wrong, or "". Where the culprit ran less than a tenth of the delay there
// is nothing to judge.
func (b Burst) Judge(c Config, due, woke int64, causes []rundata.Cause) string {
	ran, whole := b.Ran(due, woke), overlap(min(b.Ready, b.Start), b.End, due, woke)
	if ran*10 < woke-due {
		return ""
	}
	policy := fmt.Sprintf("SCHED_FIFO %d", c.Prio)
	for i, k := range causes {
		if k.Kind != rundata.CauseThread || k.Name != c.Name || k.PID != b.TID {
			continue
		}
		switch {
		case k.Policy != policy:
			return fmt.Sprintf("the culprit %s as %s, want %s", k.Name, k.Policy, policy)
		case k.NS < ran*8/10 || k.NS > whole*12/10:
			return fmt.Sprintf("the culprit %.3f ms in the trace; by its own clock %.3f ms, %.3f ms less its gaps: want it within 20 %% of these",
				float64(k.NS)/1e6, float64(whole)/1e6, float64(ran)/1e6)
		case i > 0 && ran*2 > woke-due:
			return fmt.Sprintf("top cause %s %.3f ms, want the culprit, which ran %.3f of the %.3f ms",
				causes[0].Name, float64(causes[0].NS)/1e6, float64(ran)/1e6, float64(woke-due)/1e6)
		}
		return ""
	}
	var names []string
	for _, k := range causes {
		names = append(names, fmt.Sprintf("%s %q (%d)", k.Kind, k.Name, k.PID))
	}
	return fmt.Sprintf("the culprit %s (%d) ran %.3f of the %.3f ms by its own clock, and is not among the causes: %s", c.Name, b.TID,
		float64(ran)/1e6, float64(woke-due)/1e6, strings.Join(names, ", "))
}
