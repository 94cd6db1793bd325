package audio_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"latencytest/audio"
	"latencytest/internal/threads"
	"latencytest/rundata"
)

// twoCPUs is the first two CPUs this test may run on; it skips where
// there is only one (nothing per CPU to tell apart).
func twoCPUs(t *testing.T) []int {
	t.Helper()
	all, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Skipf("one CPU allowed (%v): no second CPU to run a loop on", all)
	}
	return all[:2]
}

// perCPU makes one timer engine per CPU with opts, stall applied to the
// engine of CPU index stalled only (-1: none), and their rings.
func perCPU(t *testing.T, n int, frames, periods int, opts audio.Options, stalled int) ([]*audio.Engine, []*audio.Ring) {
	t.Helper()
	var engines []*audio.Engine
	var rings []*audio.Ring
	for i := range n {
		d, period := openTimer(t, frames, periods)
		o := opts
		if i != stalled {
			o.StallAt = -1
		}
		r := audio.NewRing(1 << 12)
		engines, rings = append(engines, audio.NewEngine(d, period, o, r)), append(rings, r)
	}
	return engines, rings
}

// allowedList is a thread's Cpus_allowed_list, as the kernel keeps it.
func allowedList(t *testing.T, tid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("thread %d: no Cpus_allowed_list in its status", tid)
	return ""
}

// Each per-CPU loop runs on a thread of its own pinned to its CPU (as the
// kernel has the thread's affinity, read back from /proc), and a stall
// injected into one CPU's loop shows in that CPU's samples only.
func TestPerCPUPinnedAndStallStaysOnItsCPU(t *testing.T) {
	cpus := twoCPUs(t)
	const stall int64 = 80e6
	// 10 ms periods, 32 of buffer: no xrun; the stall at period 5 of the
	// second CPU's loop.
	engines, rings := perCPU(t, 2, 480, 32, audio.Options{Duration: 300e6, StallAt: 5, StallFor: stall}, 1)
	var mu sync.Mutex
	pinned := map[int]string{}
	tids := map[int]bool{}
	err := audio.RunPerCPU(engines, cpus, rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80}, func(th audio.CPUThread) {
		got := allowedList(t, th.TID)
		mu.Lock()
		defer mu.Unlock()
		pinned[th.CPU], tids[th.TID] = got, true
		if len(th.Setup.Obtained.Affinity) != 1 || th.Setup.Obtained.Affinity[0] != th.CPU {
			t.Errorf("CPU %d: obtained affinity %v", th.CPU, th.Setup.Obtained.Affinity)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cpus {
		if pinned[c] != strconv.Itoa(c) {
			t.Errorf("the loop of CPU %d: Cpus_allowed_list %q, want %d", c, pinned[c], c)
		}
	}
	if len(tids) != 2 {
		t.Errorf("%d threads for 2 loops", len(tids))
	}
	for i, r := range rings {
		ss := drain(r)
		if len(ss) < 10 {
			t.Fatalf("CPU %d: %d periods", cpus[i], len(ss))
		}
		var worst rundata.Sample
		for _, s := range ss {
			if s.Latency() > worst.Latency() {
				worst = s
			}
		}
		switch {
		case i == 1 && (worst.Index != 5 || worst.Latency() < stall):
			t.Errorf("CPU %d (stalled): worst wakeup period %d, %.1f ms; want period 5, ≥ %d ms", cpus[i], worst.Index, float64(worst.Latency())/1e6, stall/1e6)
		case i == 0 && worst.Latency() >= stall/2:
			t.Errorf("CPU %d (not stalled): period %d woke %.1f ms late: the other CPU's stall leaked here", cpus[i], worst.Index, float64(worst.Latency())/1e6)
		}
	}
}

// A break on one CPU (--break-above) ends every CPU's loop, as cyclictest
// -b ends all its threads: the stalled CPU's loop breaks at period 5 and
// the other stops within a few periods of it, not at the end of its 10 s.
func TestPerCPUBreakStopsEveryLoop(t *testing.T) {
	cpus := twoCPUs(t)
	engines, rings := perCPU(t, 2, 480, 32, audio.Options{Duration: 10e9, BreakAbove: 60e6, StallAt: 5, StallFor: 100e6}, 1)
	if err := audio.RunPerCPU(engines, cpus, rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80}, nil); err != nil {
		t.Fatal(err)
	}
	if i, _, ok := engines[1].Broke(); !ok || i != 5 {
		t.Fatalf("CPU %d: broke %v at period %d, want at 5", cpus[1], ok, i)
	}
	if _, _, ok := engines[0].Broke(); ok {
		t.Errorf("CPU %d broke too, without a stall", cpus[0])
	}
	// Period 5 of 10 ms periods plus its 100 ms stall: about 16 periods
	// of the other loop; 100 would be a second of it.
	if n := len(drain(rings[0])); n > 100 {
		t.Errorf("CPU %d measured %d periods after the other broke at period 5", cpus[0], n)
	}
}

// The per-CPU loops allocate nothing per period either: with every
// allocation profiled, none was made by a period (its stack through
// Engine.period, the driver's wait and transfer, the work and the ring).
// Counting the process's allocations instead would count the runtime's
// own, which starts threads as the loops hold their Ps. The profile is
// the process's since it began, so an earlier test's period allocations
// (a test driver's, sampled at the default rate) are in it too: only what
// grew during this test counts.
func TestPerCPUPeriodsDoNotAllocate(t *testing.T) {
	cpus := twoCPUs(t)
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()
	before := periodAllocs(t)
	engines, _ := perCPU(t, 2, 48, 16, audio.Options{CPULoad: 20, Loops: 500, StallAt: -1}, -1)
	if err := audio.RunPerCPU(engines, cpus, rundata.RTParams{Policy: "SCHED_FIFO", Priority: 80}, nil); err != nil {
		t.Fatal(err)
	}
	for stack, r := range periodAllocs(t) {
		if n := r.AllocObjects - before[stack].AllocObjects; n > 0 {
			t.Errorf("%d allocations in a period, at %s", n, stackOf(r))
		}
	}
}

// periodAllocs reads the memory profile's records whose stack passes
// through Engine.period, keyed by that stack.
func periodAllocs(t *testing.T) map[[32]uintptr]runtime.MemProfileRecord {
	runtime.GC() // the profile is as of the last collection
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+50)
	n, ok := runtime.MemProfile(recs, true)
	if !ok {
		t.Fatal("memory profile grew while read")
	}
	out := map[[32]uintptr]runtime.MemProfileRecord{}
	for _, r := range recs[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.Contains(f.Function, "audio.(*Engine).period") {
				out[r.Stack0] = r
				break
			}
			if !more {
				break
			}
		}
	}
	return out
}

func stackOf(r runtime.MemProfileRecord) string {
	var b strings.Builder
	frames := runtime.CallersFrames(r.Stack())
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\n\t%s %s:%d", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}

// A thread's record is the kernel's, read back: a pinning the kernel
// refuses (a CPU that does not exist) leaves the thread where it was
// allowed, and its record says so, with the refusal, not the CPU asked.
func TestPerCPURecordIsReadBack(t *testing.T) {
	allowed, err := threads.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	engines, _ := perCPU(t, 1, 48, 16, audio.Options{Loops: 10, StallAt: -1}, -1)
	var got audio.CPUThread
	if err := audio.RunPerCPU(engines, []int{4095}, rundata.RTParams{Policy: "SCHED_OTHER"}, func(th audio.CPUThread) { got = th }); err != nil {
		t.Fatal(err)
	}
	o := got.Setup.Obtained
	if !slices.Equal(o.Affinity, allowed) || o.Policy != "SCHED_OTHER" || len(got.Setup.Refused) == 0 {
		t.Errorf("pinning to CPU 4095 refused: obtained %+v, refused %q; want the CPUs allowed (%v), SCHED_OTHER and the refusal", o, got.Setup.Refused, allowed)
	}
}
