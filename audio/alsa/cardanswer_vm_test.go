//go:build vm

package alsa

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/procfile"
)

// What a player's answer to the card's interrupt is made of (issue 47
// item 4): TestVMCardPauses traces, beside the card, the system calls of
// each player's audio thread (raw_syscalls:sys_enter and sys_exit in the
// same instance, filtered on the thread's pid once it is found: the
// events are armed with the filter matching nobody, and the filter is
// rewritten as each player starts, which patches no code). Each answer
// window, from the card's interrupt that woke the thread to the thread's
// next switch out asleep, is then split into: the interrupt to the
// wakeup, the wakeup to the thread running, the time it was switched out
// runnable (preempted), and its running time, which is the system calls'
// (sys_enter to sys_exit, each cut to the running time, by call and for
// ioctl by request) and user space's (the rest).

// followThread points the instance's syscall events at thread tid (0:
// no thread).
func (c *cardTracer) followThread(tid int) error {
	f := fmt.Sprintf("common_pid == %d", tid)
	for _, ev := range []string{"sys_enter", "sys_exit"} {
		if err := writeTrace(filepath.Join(c.inst, "events", "raw_syscalls", ev, "filter"), f); err != nil {
			return err
		}
	}
	return nil
}

// followPlayer looks, every 10 ms from now, for the player's audio
// thread (playerThread) and points the syscall events at it once found.
// The function returned ends the search and says which thread was
// followed and since when (CLOCK_MONOTONIC ns, after the filter was
// written; tid 0: none found).
func (c *cardTracer) followPlayer(t *testing.T) func() (tid int, from int64) {
	type found struct {
		tid  int
		from int64
		err  error
	}
	done, res := make(chan struct{}), make(chan found, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if tid := playerThread(); tid != 0 {
				err := c.followThread(tid)
				res <- found{tid, nowMono(), err}
				return
			}
			select {
			case <-done:
				res <- found{}
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int, int64) {
		close(done)
		f := <-res
		if f.err != nil {
			t.Errorf("follow the player's thread: %v", f.err)
		}
		return f.tid, f.from
	}
}

// playerThread is a thread of a running aplay or latencytest at
// SCHED_FIFO 80 (the players' audio threads; 0: none).
func playerThread() int {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, f := range comms {
		b, err := os.ReadFile(f)
		if c := strings.TrimSpace(string(b)); err != nil || (c != "aplay" && c != "latencytest") {
			continue
		}
		stats, _ := filepath.Glob(filepath.Join(filepath.Dir(f), "task", "*", "stat"))
		for _, s := range stats {
			b, err := os.ReadFile(s)
			if err != nil {
				continue
			}
			if st, ok := procfile.ParseStat(b); ok && st.RTPriority == 80 && st.Policy == unix.SCHED_FIFO {
				tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
				return tid
			}
		}
	}
	return 0
}

var (
	sysEnterRE = regexp.MustCompile(`^NR (-?\d+) \(([0-9a-f]+), ([0-9a-f]+)`)
	sysExitRE  = regexp.MustCompile(`^NR (-?\d+) = `)
)

// parseSys reads a sys_enter's or sys_exit's body into e.
func parseSys(e *traceEvent, body string) bool {
	if e.kind == "sys_enter" {
		m := sysEnterRE.FindStringSubmatch(body)
		if m == nil {
			return false
		}
		e.nr, _ = strconv.Atoi(m[1])
		e.req, _ = strconv.ParseUint(m[3], 16, 64)
		return true
	}
	m := sysExitRE.FindStringSubmatch(body)
	if m == nil {
		return false
	}
	e.nr, _ = strconv.Atoi(m[1])
	return true
}

// sysCall is one system call of the followed thread, sys_enter to
// sys_exit (enter MinInt64: entered before the trace; exit MaxInt64: not
// returned when it ended).
type sysCall struct {
	nr          int
	req         uint64
	enter, exit int64
}

// syscallsOf pairs the thread's sys_enter and sys_exit events.
func syscallsOf(evs []traceEvent, tid int) []sysCall {
	var out []sysCall
	open := false
	for _, e := range evs {
		if e.pid != tid {
			continue
		}
		if e.kind == "sys_enter" {
			if open { // no exit traced (a call that does not return)
				out[len(out)-1].exit = e.ts
			}
			out = append(out, sysCall{nr: e.nr, req: e.req, enter: e.ts, exit: math.MaxInt64})
			open = true
			continue
		}
		if open && out[len(out)-1].nr == e.nr {
			out[len(out)-1].exit = e.ts
		} else {
			out = append(out, sysCall{nr: e.nr, enter: math.MinInt64, exit: e.ts})
		}
		open = false
	}
	return out
}

// sysNames are the system calls' names by number (the VM's architecture,
// which is the test binary's); sysPollName adds poll where there is one.
var sysNames = map[int]string{
	unix.SYS_IOCTL: "ioctl", unix.SYS_PPOLL: "ppoll", unix.SYS_FUTEX: "futex",
	unix.SYS_NANOSLEEP: "nanosleep", unix.SYS_CLOCK_NANOSLEEP: "clock_nanosleep",
	unix.SYS_READ: "read", unix.SYS_WRITE: "write", unix.SYS_EPOLL_PWAIT: "epoll_pwait",
	unix.SYS_SCHED_YIELD: "sched_yield", unix.SYS_RT_SIGPROCMASK: "rt_sigprocmask",
	unix.SYS_RT_SIGRETURN: "rt_sigreturn", unix.SYS_SIGALTSTACK: "sigaltstack",
	unix.SYS_GETTID: "gettid", unix.SYS_GETPID: "getpid", unix.SYS_TGKILL: "tgkill",
	unix.SYS_MADVISE: "madvise", unix.SYS_MUNMAP: "munmap", unix.SYS_MPROTECT: "mprotect",
	unix.SYS_CLOCK_GETTIME: "clock_gettime", unix.SYS_GETRUSAGE: "getrusage",
	unix.SYS_OPENAT: "openat", unix.SYS_CLOSE: "close", unix.SYS_WRITEV: "writev",
	unix.SYS_PREAD64: "pread64", unix.SYS_PWRITE64: "pwrite64", unix.SYS_LSEEK: "lseek",
	unix.SYS_SCHED_GETAFFINITY: "sched_getaffinity", unix.SYS_SCHED_SETATTR: "sched_setattr",
}

// pcmIoctls are the ALSA PCM ioctls by type and number (the request's low
// 16 bits: its size differs with the ABI): ours from abi.go, and the
// others alsa-lib makes.
var pcmIoctls = map[uint64]string{
	uint64(ioctlPVersion & 0xffff): "PVERSION", uint64(ioctlInfo & 0xffff): "INFO", uint64(ioctlTTstamp & 0xffff): "TTSTAMP",
	uint64(ioctlUserPVersion & 0xffff): "USER_PVERSION", uint64(ioctlHWRefine & 0xffff): "HW_REFINE",
	uint64(ioctlHWParams & 0xffff): "HW_PARAMS", uint64(ioctlHWFree & 0xffff): "HW_FREE", uint64(ioctlSWParams & 0xffff): "SW_PARAMS",
	uint64(ioctlStatus & 0xffff): "STATUS", uint64(ioctlSyncPtr & 0xffff): "SYNC_PTR", uint64(ioctlStatusExt & 0xffff): "STATUS_EXT",
	uint64(ioctlPrepare & 0xffff): "PREPARE", uint64(ioctlHWSync & 0xffff): "HWSYNC", uint64(ioctlStart & 0xffff): "START",
	uint64(ioctlDrop & 0xffff): "DROP", uint64(ioctlWriteiFrames & 0xffff): "WRITEI_FRAMES", uint64(ioctlReadiFrames & 0xffff): "READI_FRAMES",
	uint64(ioctlLink & 0xffff): "LINK", uint64(ioctlUnlink & 0xffff): "UNLINK",
	'A'<<8 | 0x02: "TSTAMP", 'A'<<8 | 0x21: "DELAY", 'A'<<8 | 0x32: "CHANNEL_INFO", 'A'<<8 | 0x41: "RESET",
	'A'<<8 | 0x44: "DRAIN", 'A'<<8 | 0x45: "PAUSE", 'A'<<8 | 0x46: "REWIND", 'A'<<8 | 0x47: "RESUME",
	'A'<<8 | 0x48: "XRUN", 'A'<<8 | 0x49: "FORWARD", 'A'<<8 | 0x52: "WRITEN_FRAMES", 'A'<<8 | 0x53: "READN_FRAMES",
}

// callName names a system call, ioctl by its request.
func callName(c sysCall) string {
	n, ok := sysNames[c.nr]
	if !ok {
		n = sysPollName(c.nr)
	}
	if n == "" {
		n = fmt.Sprintf("syscall %d", c.nr)
	}
	if n != "ioctl" {
		return n
	}
	if c.enter == math.MinInt64 {
		return "ioctl ?"
	}
	if r, ok := pcmIoctls[c.req&0xffff]; ok && (c.req>>8)&0xff == 'A' {
		return "ioctl " + r
	}
	return fmt.Sprintf("ioctl %#x", c.req)
}

// answerWindow is one answer of the followed thread: the card's
// interrupt, the wakeup it made, the thread's running stretches from its
// switch in to its switch out asleep, and its system calls in them.
type answerWindow struct {
	irq, wake int64
	runs      []span
	irqCPU    int              // the interrupt's CPU
	runCPU    int              // the CPU the thread first ran on
	from      string           // the task it was switched in from (idle: the CPU was idle)
	by        []string         // the tasks that preempted it
	elapsed   int64            // snd_pcm_period_elapsed between the interrupt and the wakeup (0: none)
	read      int64            // the last position read (the driver's pointer callback returned) before the wakeup (0: none)
	kernel    map[string]int64 // time in system calls while running, by call
	calls     map[string]int   // the calls, by call
	each      []callTime       // each call's time while running
	ncalls    int
}

type callTime struct {
	name     string
	ns       int64
	pre, ptr int64 // sys_enter to the position read in the call, the read to sys_exit (-1: no read)
}

func (w answerWindow) end() int64 { return w.runs[len(w.runs)-1].to }

func (w answerWindow) running() int64 {
	var n int64
	for _, s := range w.runs {
		n += s.len()
	}
	return n
}

func (w answerWindow) preempted() int64 {
	return w.end() - w.runs[0].from - w.running()
}

func (w answerWindow) inKernel() int64 {
	var n int64
	for _, v := range w.kernel {
		n += v
	}
	return n
}

// answerWindows are the followed thread's answers to the card's
// interrupts whose interrupt came at from or later (its system calls
// traced).
func answerWindows(r cardRecord, tid int, from int64) []answerWindow {
	calls := syscallsOf(r.sys, tid)
	var reads []traceEvent // the thread's own position reads (in its calls)
	for _, e := range r.reads {
		if e.pid == tid {
			reads = append(reads, e)
		}
	}
	var out []answerWindow
	for i, e := range r.sched {
		if e.kind != "sched_wakeup" || e.in != tid || e.ctx == '.' {
			continue
		}
		irq, ok := lastBefore(r.irqs, e.ts)
		if !ok || irq.ts < from {
			continue
		}
		w, ok := runsAfter(r.sched[i+1:], tid, e.ts)
		if !ok {
			continue
		}
		w.irq, w.irqCPU, w.wake = irq.ts, irq.cpu, e.ts
		if el, ok := lastBefore(r.elapsed, e.ts); ok && el.ts >= irq.ts {
			w.elapsed = el.ts
		}
		if rd, ok := lastBefore(r.reads, e.ts); ok && rd.ts >= irq.ts {
			w.read = rd.ts
		}
		w.splitCalls(calls, reads)
		out = append(out, w)
	}
	return out
}

// runsAfter is the answer of thread tid woken at wake: its running
// stretches up to its switch out asleep, where it first ran and what
// preempted it (ok false: the trace ended first, or the thread was woken
// again without a switch out seen).
func runsAfter(sched []traceEvent, tid int, wake int64) (w answerWindow, ok bool) {
	in := int64(-1)
	w.runCPU, w.from = -1, "running"
	for _, o := range sched {
		switch {
		case o.kind == "sched_wakeup" && o.in == tid:
			return w, false
		case o.kind != "sched_switch":
		case o.in == tid:
			in = o.ts
			if w.runCPU < 0 {
				w.runCPU, w.from = o.cpu, taskName(o.other)
			}
		case o.out == tid:
			if in < 0 { // woken while still switching out: running since
				in = wake
			}
			if w.runCPU < 0 {
				w.runCPU = o.cpu
			}
			w.runs = append(w.runs, span{in, o.ts})
			in = -1
			if !strings.HasPrefix(o.state, "R") {
				return w, true
			}
			w.by = append(w.by, taskName(o.other))
		}
	}
	return w, false
}

// taskName is a comm, the idle tasks' as idle.
func taskName(comm string) string {
	if strings.HasPrefix(comm, "swapper/") {
		return "idle"
	}
	return comm
}

// splitCalls sums the time of each system call within w's running
// stretches, by call; the call the thread was woken in and the one it
// went to sleep in are named so. A call entered and returned within them
// that read the position (reads: the thread's) is split at the read.
func (w *answerWindow) splitCalls(calls []sysCall, reads []traceEvent) {
	w.kernel, w.calls = map[string]int64{}, map[string]int{}
	start, end := w.runs[0].from, w.end()
	i := sort.Search(len(calls), func(i int) bool { return calls[i].exit > start })
	for _, c := range calls[i:] {
		if c.enter >= end {
			break
		}
		var in int64
		for _, s := range w.runs {
			if lo, hi := max(c.enter, s.from), min(c.exit, s.to); hi > lo {
				in += hi - lo
			}
		}
		name := callName(c)
		switch {
		case c.enter < start && c.exit >= end:
			name += " [woken in, sleeps in]"
		case c.enter < start:
			name += " [woken in]"
		case c.exit >= end:
			name += " [sleeps in]"
		}
		w.kernel[name] += in
		w.calls[name]++
		ct := callTime{name: name, ns: in, pre: -1, ptr: -1}
		if c.enter >= start && c.exit < end {
			if rd, ok := lastBefore(reads, c.exit); ok && rd.ts >= c.enter {
				ct.pre, ct.ptr = rd.ts-c.enter, c.exit-rd.ts
			}
		}
		w.each = append(w.each, ct)
		w.ncalls++
	}
}

// dist is a distribution of durations (ns).
type dist []int64

func (d dist) pc(q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(d))
	return float64(s[min(int(q*float64(len(s))), len(s)-1)]) / 1e3
}

func (d dist) mean() float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	var n int64
	for _, v := range d {
		n += v
	}
	return float64(n) / float64(len(d)) / 1e3
}

// µs says p50/p90 (mean), µs.
func (d dist) µs() string {
	return fmt.Sprintf("%.0f/%.0f (%.1f)", d.pc(0.5), d.pc(0.9), d.mean())
}

// answerSplit is a player's answers, split.
type answerSplit struct {
	n                                                       int
	answer, irqWake, wakeRun, preempted, running, user, sys dist
	ncalls                                                  []int
	perCall                                                 map[string]dist // each call's time
	total                                                   map[string]int64
	calls                                                   map[string]int
	preemptedIn                                             int             // answers with the thread preempted
	wakeRunSame, wakeRunOther                               dist            // wakeup→running on the interrupt's CPU, on the other
	from, by                                                map[string]int  // switched in from, preempted by
	irqElapsed, elapsedRead, readWake                       dist            // interrupt→snd_pcm_period_elapsed→position read→wakeup
	pre, ptr                                                map[string]dist // in the calls that read the position: sys_enter→read, read→sys_exit
}

func splitAnswers(ws []answerWindow) answerSplit {
	a := answerSplit{n: len(ws), perCall: map[string]dist{}, total: map[string]int64{}, calls: map[string]int{}, from: map[string]int{}, by: map[string]int{},
		pre: map[string]dist{}, ptr: map[string]dist{}}
	for _, w := range ws {
		if w.runCPU == w.irqCPU {
			a.wakeRunSame = append(a.wakeRunSame, w.runs[0].from-w.wake)
		} else {
			a.wakeRunOther = append(a.wakeRunOther, w.runs[0].from-w.wake)
		}
		a.from[w.from]++
		if w.elapsed != 0 && w.read >= w.elapsed {
			a.irqElapsed = append(a.irqElapsed, w.elapsed-w.irq)
			a.elapsedRead = append(a.elapsedRead, w.read-w.elapsed)
			a.readWake = append(a.readWake, w.wake-w.read)
		}
		for _, b := range w.by {
			a.by[b]++
		}
		a.answer = append(a.answer, w.end()-w.irq)
		a.irqWake = append(a.irqWake, w.wake-w.irq)
		a.wakeRun = append(a.wakeRun, w.runs[0].from-w.wake)
		a.preempted = append(a.preempted, w.preempted())
		if w.preempted() > 0 {
			a.preemptedIn++
		}
		a.running = append(a.running, w.running())
		a.sys = append(a.sys, w.inKernel())
		a.user = append(a.user, w.running()-w.inKernel())
		a.ncalls = append(a.ncalls, w.ncalls)
		for k, v := range w.kernel {
			a.total[k] += v
			a.calls[k] += w.calls[k]
		}
		for _, c := range w.each {
			a.perCall[c.name] = append(a.perCall[c.name], c.ns)
			if c.pre >= 0 {
				a.pre[c.name] = append(a.pre[c.name], c.pre)
				a.ptr[c.name] = append(a.ptr[c.name], c.ptr)
			}
		}
	}
	return a
}

// kinds are a's calls, the most time per answer first.
func (a answerSplit) kinds() []string {
	ks := slices.Collect(maps.Keys(a.total))
	sort.Slice(ks, func(i, j int) bool {
		if a.total[ks[i]] != a.total[ks[j]] {
			return a.total[ks[i]] > a.total[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}

// perAnswer is the mean time per answer in call k, µs.
func (a answerSplit) perAnswer(k string) float64 {
	if a.n == 0 {
		return 0
	}
	return float64(a.total[k]) / float64(a.n) / 1e3
}

func (a answerSplit) callsPer(k string) float64 {
	if a.n == 0 {
		return 0
	}
	return float64(a.calls[k]) / float64(a.n)
}

func (a answerSplit) String() string {
	nc := make(dist, len(a.ncalls))
	for i, v := range a.ncalls {
		nc[i] = int64(v) * 1000
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d answers, µs p50/p90 (mean): answer (interrupt to its switch out asleep) %s = interrupt→wakeup %s + wakeup→running %s + preempted %s (in %d) + running %s = user %s + system calls %s; calls per answer %.0f/%.0f (%.2f); by call (calls per answer, µs per call p50/p90, µs per answer mean):",
		a.n, a.answer.µs(), a.irqWake.µs(), a.wakeRun.µs(), a.preempted.µs(), a.preemptedIn, a.running.µs(), a.user.µs(), a.sys.µs(), nc.pc(0.5), nc.pc(0.9), nc.mean())
	for _, k := range a.kinds() {
		fmt.Fprintf(&b, "\n    %s: %.2f, %.0f/%.0f µs, %.1f µs", k, a.callsPer(k), a.perCall[k].pc(0.5), a.perCall[k].pc(0.9), a.perAnswer(k))
		if len(a.pre[k]) > 0 {
			fmt.Fprintf(&b, "; in %d that read the position: sys_enter→read %s, read→sys_exit %s", len(a.pre[k]), a.pre[k].µs(), a.ptr[k].µs())
		}
	}
	fmt.Fprintf(&b, "\n    the interrupt to the wakeup, in %d: interrupt→snd_pcm_period_elapsed %s, →position read %s, →wakeup %s",
		len(a.irqElapsed), a.irqElapsed.µs(), a.elapsedRead.µs(), a.readWake.µs())
	fmt.Fprintf(&b, "\n    where: ran first on the interrupt's CPU in %d, wakeup→running there %s, on the other CPU %s; switched in from %s; preempted by %s",
		len(a.wakeRunSame), a.wakeRunSame.µs(), a.wakeRunOther.µs(), topNames(a.from), topNames(a.by))
	return b.String()
}

// topNames says the five commonest names of n, with their counts.
func topNames(n map[string]int) string {
	ks := slices.Collect(maps.Keys(n))
	sort.Slice(ks, func(i, j int) bool { return n[ks[i]] > n[ks[j]] || n[ks[i]] == n[ks[j]] && ks[i] < ks[j] })
	var out []string
	for _, k := range ks[:min(len(ks), 5)] {
		out = append(out, fmt.Sprintf("%s %d", k, n[k]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// splitDiff says where b's answers (latencytest's) take longer than a's
// (the same-access aplay's), by the means, which add up.
func splitDiff(a, b answerSplit) string {
	d := func(x, y dist) float64 { return y.mean() - x.mean() }
	var b2 strings.Builder
	fmt.Fprintf(&b2, "answer %+.0f µs (mean; p50 %+.0f): interrupt→wakeup %+.1f (of it position read→wakeup %+.1f), wakeup→running %+.1f, preempted %+.1f, user %+.1f, system calls %+.1f:",
		d(a.answer, b.answer), b.answer.pc(0.5)-a.answer.pc(0.5), d(a.irqWake, b.irqWake), d(a.readWake, b.readWake), d(a.wakeRun, b.wakeRun), d(a.preempted, b.preempted), d(a.user, b.user), d(a.sys, b.sys))
	ks := slices.Compact(slices.Sorted(slices.Values(append(a.kinds(), b.kinds()...))))
	sort.SliceStable(ks, func(i, j int) bool {
		return math.Abs(b.perAnswer(ks[i])-a.perAnswer(ks[i])) > math.Abs(b.perAnswer(ks[j])-a.perAnswer(ks[j]))
	})
	for _, k := range ks {
		if diff := b.perAnswer(k) - a.perAnswer(k); math.Abs(diff) >= 0.5 {
			fmt.Fprintf(&b2, " %s %+.1f µs (%.2f against %.2f calls per answer)", k, diff, b.callsPer(k), a.callsPer(k))
		}
	}
	return b2.String()
}

// logAnswerSplits logs each traced run's answers split, and
// latencytest's against the same-access aplay's (runs: aplay -M,
// latencytest mmap, aplay, latencytest rw).
func logAnswerSplits(t *testing.T, card string, runs []playerRun) {
	t.Helper()
	splits := make([]answerSplit, len(runs))
	for i, pr := range runs {
		if pr.tid == 0 || len(pr.rec.sys) == 0 {
			t.Errorf("%s on %s: no system call of its audio thread traced (thread %d)", pr.name, card, pr.tid)
			continue
		}
		splits[i] = splitAnswers(answerWindows(pr.rec, pr.tid, pr.sysFrom))
		t.Logf("%s on %s: thread %d's system calls traced from %.3f s (%d events); its %s", pr.name, card, pr.tid, float64(pr.sysFrom-pr.from)/1e9, len(pr.rec.sys), splits[i])
	}
	for i := 0; i+1 < len(runs); i += 2 {
		if splits[i].n > 0 && splits[i+1].n > 0 {
			t.Logf("%s − %s on %s: %s", runs[i+1].name, runs[i].name, card, splitDiff(splits[i], splits[i+1]))
		}
	}
}
