package jacktest

import (
	"bytes"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"latencytest/audio"
	"latencytest/rundata"
)

// Record runs drv for d, calling hook (if any) inside each step, and
// returns the samples. Their slice is made before the stream starts, room
// for perSecond periods a second and 1000 more, so that the callback does
// not allocate; a driver that calls back more often than that fills it,
// and the run stops there rather than growing it from the callback.
func Record(t testing.TB, drv audio.CallbackDriver, d time.Duration, perSecond int, hook func(p *rundata.Sample)) []rundata.Sample {
	t.Helper()
	samples := make([]rundata.Sample, 0, int(d.Seconds()*float64(perSecond))+1000)
	runFor(t, drv, d, func(p *rundata.Sample) bool {
		if hook != nil {
			hook(p)
		}
		if len(samples) == cap(samples) {
			return false
		}
		samples = append(samples, *p)
		return true
	})
	return samples
}

// runFor runs drv for d, step called for each period as the engine's
// would be; a run that fails fails the test.
func runFor(t testing.TB, drv audio.CallbackDriver, d time.Duration, step func(p *rundata.Sample) bool) {
	t.Helper()
	stop := make(chan struct{})
	timer := time.AfterFunc(d, func() { close(stop) })
	defer timer.Stop()
	if err := drv.Run(step, stop); err != nil {
		t.Fatal(err)
	}
}

// CallbackThread is the name (comm) of the thread drv's first callback
// ran on in 200 ms of running, "" if none came: the spike tracer knows
// the audio thread by that name alone (audio.CallbackThreadName).
func CallbackThread(t testing.TB, drv audio.CallbackDriver) string {
	t.Helper()
	var comm atomic.Value // stored on the driver's thread, read on this one
	runFor(t, drv, 200*time.Millisecond, func(*rundata.Sample) bool {
		if comm.Load() == nil {
			b, err := os.ReadFile("/proc/thread-self/comm")
			if err != nil {
				b = []byte(err.Error())
			}
			comm.Store(string(bytes.TrimSpace(b)))
		}
		return true
	})
	name, _ := comm.Load().(string)
	return name
}

// CheckNoAllocs fails the test when drv's callback path allocates: the
// heap's malloc count over two seconds of callbacks, once the stream has
// run 300 ms, stays far below the number of callbacks. An allocation per
// call (in the C-to-Go path, say) would show as one malloc a callback.
func CheckNoAllocs(t testing.TB, drv audio.CallbackDriver) {
	t.Helper()
	var calls atomic.Int64 // counted on the driver's thread, read on this one
	var n int64
	var before, after runtime.MemStats
	stop := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		runtime.ReadMemStats(&before)
		n0 := calls.Load()
		time.Sleep(2 * time.Second)
		runtime.ReadMemStats(&after)
		n = calls.Load() - n0
		close(stop)
	}()
	if err := drv.Run(func(p *rundata.Sample) bool { calls.Add(1); return true }, stop); err != nil {
		t.Fatal(err)
	}
	mallocs := after.Mallocs - before.Mallocs
	if n < 500 || mallocs > uint64(n)/20 {
		t.Fatalf("%d mallocs over %d callbacks", mallocs, n)
	}
	t.Logf("%d mallocs over %d callbacks", mallocs, n)
}

// Open opens drv with cfg for the test, and closes it when the test ends:
// a driver that fails to close fails the test, rather than leaving its
// client on the server for the next test to meet.
func Open(t testing.TB, drv audio.Driver, cfg audio.Config) audio.Granted {
	t.Helper()
	g, err := drv.Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := drv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g
}

// Latencies are the latencies of s, sorted, once s is found to be every
// period in order, none woken before it was due: a period lost or counted
// twice, or a Due after the wakeup, would make them the driver's
// bookkeeping rather than the machine's lateness.
func Latencies(t testing.TB, s []rundata.Sample) []int64 {
	t.Helper()
	lat := make([]int64, 0, len(s))
	for i, p := range s {
		if p.Index != int64(i) {
			t.Fatalf("sample %d has index %d", i, p.Index)
		}
		if p.Woke < p.Due {
			t.Fatalf("sample %d woke %d ns before it was due", i, p.Due-p.Woke)
		}
		lat = append(lat, p.Latency())
	}
	slices.Sort(lat)
	return lat
}
