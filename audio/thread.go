package audio

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asyncSignals is the mask of every signal except those the kernel raises
// on the thread itself when it faults: a blocked fault signal would kill
// the process silently instead of letting the runtime report the fault.
// SIGKILL and SIGSTOP cannot be blocked; the kernel ignores them here.
const asyncSignals = ^uint64(0) &^ (1<<(unix.SIGILL-1) | 1<<(unix.SIGTRAP-1) | 1<<(unix.SIGBUS-1) |
	1<<(unix.SIGFPE-1) | 1<<(unix.SIGSEGV-1) | 1<<(unix.SIGSYS-1))

// blockSignals blocks every asynchronous signal on the calling OS thread
// and returns the mask to restore. A process-directed signal (SIGTERM,
// SIGINT, a stray SIGCHLD or SIGWINCH) then goes to one of the runtime's
// other threads, and the runtime's thread-directed SIGURG (preemption)
// waits: none of them can interrupt the loop's sleep and run a handler on
// the real-time thread. (The kernel offers a process signal to the main
// thread first, and the engine's loop runs on its main thread.)
func blockSignals() (old uint64) {
	set := uint64(asyncSignals)
	sigprocmask(unix.SIG_BLOCK, &set, &old)
	return old
}

// restoreSignals sets the calling thread's mask back to old; signals that
// arrived meanwhile are delivered now.
func restoreSignals(old uint64) { sigprocmask(unix.SIG_SETMASK, &old, nil) }

// sigprocmask is rt_sigprocmask on the calling thread, raw: the runtime's
// own signal masking is for the threads it creates, not this one.
func sigprocmask(how int, set, old *uint64) {
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, uintptr(how), uintptr(unsafe.Pointer(set)),
		uintptr(unsafe.Pointer(old)), unsafe.Sizeof(*set), 0, 0)
}

// LoopStack is the stack the period loop may use below Engine.Run without
// the goroutine's stack having to grow. Growing a stack copies it into
// newly allocated memory: page faults and the heap lock, in the loop,
// perhaps at the first xrun. 64 KB is many times what the deepest path
// (an ALSA recovery) uses.
const LoopStack = 64 << 10

// growStack makes the calling goroutine's stack hold LoopStack more bytes
// than its caller uses and writes every page of it, so that the pages are
// present (and locked, under mlockall) before the loop starts. With the
// collector off the stack is never shrunk again.
//
//go:noinline
func growStack() (sum byte) {
	var b [LoopStack]byte
	for i := 0; i < len(b); i += 512 {
		b[i] = byte(i >> 9)
	}
	for i := 0; i < len(b); i += 512 {
		sum += b[i]
	}
	return sum
}

// LoopPs is the number of Ps (GOMAXPROCS) the engine process runs with:
// one that the pinned loop holds for the whole run, and one for
// everything else — the drainer and the goroutine that handles SIGTERM.
// With only one (GOMAXPROCS=1, one CPU by taskset, cpuset or cgroup
// quota) those starve until the phase ends: no stop, and samples lost once
// the ring is full. A P is not a CPU: on one CPU the second P's thread runs
// whenever the real-time thread sleeps.
const LoopPs = 2

// RuntimeSetup configures the Go runtime of a process that runs a pinned
// period loop; call it first thing. The collector is turned off, memory
// limit included (a GOMEMLIMIT in the environment would start collections
// even with GOGC=off): the loop does not allocate, set-up garbage is small,
// and a collection would stop the world. GOMAXPROCS is set to LoopPs explicitly, which also ends the
// runtime's own updates of it (Go ≥ 1.25 re-reads the CPU affinity and
// cgroup quota every second and applies a change by stopping the world —
// which waits for the pinned loop, that is for the end of the phase, while
// every other goroutine stands still).
func RuntimeSetup() {
	// The limit first: SetGCPercent(-1) waits for a collection in progress
	// to end, and under the limit another could start before it was lifted
	// (TestRunStopsWithMemoryLimit met one when set-up's timing changed).
	debug.SetMemoryLimit(math.MaxInt64)
	debug.SetGCPercent(-1)
	runtime.GOMAXPROCS(LoopPs)
	// The runtime's template thread, which starts threads for a locked
	// one, is made at the first LockOSThread, by the calling thread, whose
	// timer slack it inherits: made now, before SlackOthers, it gets the
	// coarse slack with the rest (TestEngineTimerSlack once found it with
	// the loop's fine slack, made later by the loop's thread).
	runtime.LockOSThread()
	runtime.UnlockOSThread()
}

// OthersSlack is the timer slack SlackOthers gives the engine's threads
// other than the loop's.
const OthersSlack = 50 * time.Millisecond

// SlackOthers gives every thread of this process but the calling one
// (the loop's) a coarse timer slack: how much later than asked the kernel
// may end their timed sleeps, so as to serve several with one wakeup. Go's
// sysmon thread wakes every 10 ms while the loop holds its P, and each
// wakeup of an idle CPU costs a virtual machine tens of microseconds; with
// the slack the kernel serves most with other wakeups, or every 60 ms
// (docs/notes/benchmarks.md, "After the timer slack"). Call it once set-up is done: the
// runtime's own short sleeps, which a collection and a stop of the world
// take, would stretch too. The drainer's 100 ms and the ring's 4 s leave
// room for it. Best effort: another thread's slack needs CAP_SYS_NICE.
func SlackOthers() {
	me := unix.Gettid()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	v := []byte(strconv.FormatInt(int64(OthersSlack), 10))
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || tid == me {
			continue
		}
		// Only the thread group's own directory has the file, and
		// /proc/TID is one for any thread.
		fd, err := unix.Open("/proc/"+t.Name()+"/timerslack_ns", unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue // ended meanwhile
		}
		_, err = unix.Write(fd, v)
		unix.Close(fd)
		if err == unix.EPERM {
			return // the same for every thread
		}
	}
}
