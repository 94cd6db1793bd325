//go:build jack

package jack

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/jacktest"
	"latencytest/rundata"
)

// config is verbose: nothing libjack prints is hidden.
func config(period int) audio.Config {
	return audio.Config{Stream: "playback", Rate: 48000, Channels: 2, PeriodFrames: period, Periods: 2, Verbose: true}
}

func open(t *testing.T, cfg audio.Config) (*Driver, audio.Granted) {
	t.Helper()
	drv := New()
	return drv, jacktest.Open(t, drv, cfg)
}

// perSecond is the most periods a second Record makes room for: a
// 16-frame period, the shortest a JACK server runs, at 48 kHz.
const perSecond = 48000 / 16

// The periods are the server's cycles, at its buffer size: between the
// first and the last callback, the cycles jack_get_cycle_times counted
// (each callback one, plus those missed, reported as xruns) are that time
// × rate / period. The dummy server restarts its schedule after a late
// cycle of its own (an xrun it reports), without counting the time it
// lost, so the time is set against the cycles between those restarts:
// each stretch of callbacks clear of xruns (with the few callbacks before
// each xrun, whose notice comes through libjack's notification thread)
// counts its time in cycles to within one. Each Due is the cycle's start
// as jack_get_cycle_times said it inside that callback, Woke is not
// before it, and the granted shape is the server's.
func TestCountsPeriods(t *testing.T) {
	for _, period := range []int{64, 256} {
		t.Run(strconv.Itoa(period), func(t *testing.T) {
			srv := jacktest.Start(t, 48000, period)
			drv, g := open(t, config(period))
			if g.Rate != 48000 || g.PeriodFrames != period || g.Periods != 2 {
				t.Fatalf("granted %+v, want the server's 48000 Hz, %d frames, 2 periods", g, period)
			}
			var stale atomic.Int64 // hooks run after their cycle ended
			var wrong, first, reset atomic.Int64
			s := jacktest.Record(t, drv, 3*time.Second, perSecond, func(p *rundata.Sample) {
				frames, usecs, ok := drv.c.cycleTimes()
				switch {
				case !ok:
					wrong.Add(1)
				case frames != drv.frames:
					stale.Add(1)
				case usecs != drv.cycle.usecs:
					// The server found its cycle late and restarted
					// its schedule meanwhile: jack2's ResetFrameTime
					// moves the cycle's start, not its frames.
					reset.Add(1)
				default:
					// Both ends read the clocks' offset, each to
					// within half the time between two readings
					// (µs on a loaded VM): well under a frame.
					if d := offBy(p.Due, dueOf(drv.cycle), drv.rawClock); d < -10000 || d > 10000 {
						if wrong.Add(1) == 1 {
							first.Store(d)
						}
					}
				}
			})
			if wrong.Load() > 0 {
				t.Errorf("%d periods whose Due is not the start of their cycle as jack_get_cycle_times says (the first off by %d ns)", wrong.Load(), first.Load())
			}
			periodNS := float64(period) * 1e9 / 48000
			// How many of the cycles the client got is the machine's
			// load (a busy one makes it miss many, each reported);
			// that every cycle is one or the other is checked below.
			if len(s) < 100 {
				t.Fatalf("%d periods in 3 s, want at least 100 to judge by", len(s))
			}
			lat := jacktest.Latencies(t, s)
			// Every cycle between the first period and the last is a
			// period or was reported missed.
			cycles := int64((drv.frames-drv.stats.first)/uint32(period)) + 1
			if n := int64(len(s)) + drv.stats.missed; n != cycles {
				t.Errorf("%d periods and %d cycles missed, but the server ran %d cycles", len(s), drv.stats.missed, cycles)
			}
			// Those cycles are the time between the first period and
			// the last × rate / period, to within one, when the server
			// kept its schedule. The dummy backend paces its cycles
			// with sleeps, and after a cycle of its own that came late
			// (an xrun it logs, "JackTimedDriver::Process XRun") it
			// restarts the schedule without counting the time it lost:
			// then the cycles may fall short of the time, by the
			// server's loss, never exceed it.
			restarts, _ := srv.Restarts(t)
			if reset.Load() > int64(restarts) {
				t.Errorf("%d periods whose cycle's start moved while they ran, but the server restarted its schedule %d times", reset.Load(), restarts)
			}
			want := float64(s[len(s)-1].Due-s[0].Due) / periodNS
			c := float64(cycles - 1)
			switch {
			case c > want+1 || restarts == 0 && c < want-1:
				t.Errorf("%d cycles in %.1f periods' time (the server restarted its schedule %d times)", cycles-1, want, restarts)
			case c < want*0.9:
				t.Errorf("%d cycles in %.1f periods' time: the server lost more than a tenth of the time in %d restarts", cycles-1, want, restarts)
			}
			t.Logf("%d cycles in %.1f periods' time; the server restarted its schedule %d times", cycles-1, want, restarts)
			t.Logf("%d periods (%d with current_usecs outside the frame of the start); server notices %d (own %d, other %d), %d second activations, %d hooks after the cycle; latency µs min %.0f p50 %.0f p99 %.0f max %.0f",
				len(s), drv.stats.clamped, drv.stats.notices, drv.stats.own, drv.stats.other, drv.stats.sameCycle, stale.Load(),
				float64(lat[0])/1e3, float64(lat[len(lat)/2])/1e3, float64(lat[len(lat)*99/100])/1e3, float64(lat[len(lat)-1])/1e3)
		})
	}
}

// dueOf is where the cycle began on jack_get_time's clock (ns):
// current_usecs, held within the frame where jack_frames_since_cycle_start
// put the start.
func dueOf(c cycleSeen) int64 { return min(max(int64(c.usecs)*1000, c.lo), c.hi) }

// offBy is how far due (CLOCK_MONOTONIC, ns) is from at (ns) on
// jack_get_time's clock (CLOCK_MONOTONIC_RAW when raw): the clocks'
// offset is read now, the closest of a few tries (a preemption between
// the two readings only adds).
func offBy(due, at int64, raw bool) int64 {
	off := int64(0)
	if raw {
		best := int64(1 << 62)
		for range 5 {
			var m, r, m2 unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &m)
			unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &r)
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &m2)
			if gap := m2.Nano() - m.Nano(); gap < best {
				best, off = gap, (m.Nano()+m2.Nano())/2-r.Nano()
			}
		}
	}
	return due - (at + off)
}

// A 50 ms stall injected by the engine's test hook (Options.StallAt,
// StallFor) into one process callback reads back at its length: that
// period woke 50 ms late, the next reports the cycles it missed as an
// xrun of about 50 ms, and the server's own notice of the xrun (the
// client was still running when its next cycle began) came and was
// matched to it rather than counted twice.
func TestStallReadsBack(t *testing.T) {
	jacktest.Start(t, 48000, 64)
	drv, g := open(t, config(64))
	const at, stall = 500, 50e6
	ring := audio.NewRing(1 << 13)
	eng := audio.NewEngine(drv, int64(g.PeriodFrames)*1e9/int64(g.Rate), audio.Options{StallAt: at, StallFor: stall, Duration: 2e9}, ring)
	if err := eng.Run(); err != nil {
		t.Fatal(err)
	}
	var s []rundata.Sample
	var p rundata.Sample
	for ring.Pop(&p) {
		s = append(s, p)
	}
	if len(s) < at+100 {
		t.Fatalf("only %d periods", len(s))
	}
	if l := s[at].Latency(); l < stall || l > stall+10e6 {
		t.Errorf("period %d, stalled 50 ms: latency %d ns", at, l)
	}
	var x int64
	for _, p := range s[at+1 : at+4] {
		x = max(x, p.Xrun)
	}
	periodNS := int64(64) * 1e9 / 48000
	if x < stall-2*periodNS || x > stall+10e6 {
		t.Errorf("xrun after a 50 ms stall: %d ns, want 50 ms ± a period or two; periods %+v", x, s[at:at+4])
	}
	if drv.stats.notices-drv.stats.other < 1 {
		t.Errorf("the server reported no xrun of the stall: %d notices, %d of them not the client's own", drv.stats.notices, drv.stats.other)
	}
	for _, p := range s {
		if p.Xrun > 0 {
			t.Logf("xrun at %d: %.2f ms", p.Index, float64(p.Xrun)/1e6)
		}
	}
	t.Logf("stalled period latency %.1f ms, xrun %.1f ms; server notices %d (other %d), own xruns %d", float64(s[at].Latency())/1e6, float64(x)/1e6, drv.stats.notices, drv.stats.other, drv.stats.own)
}

// The process path does not allocate: the heap's malloc count over two
// seconds of cycles stays far below the number of cycles.
func TestCallbackPathDoesNotAllocate(t *testing.T) {
	jacktest.Start(t, 48000, 64)
	drv, _ := open(t, config(64))
	jacktest.CheckNoAllocs(t, drv)
}

// A buffer size changed mid-run (jack_bufsize) stops the run with an
// error that says so, rather than mixing two period sizes.
func TestBufferSizeChangeSaid(t *testing.T) {
	bufsize, err := exec.LookPath("jack_bufsize")
	if err != nil {
		t.Skip("no jack_bufsize (jackd2's example clients)")
	}
	jacktest.Start(t, 48000, 64)
	drv, _ := open(t, config(64))
	go func() {
		time.Sleep(500 * time.Millisecond)
		if out, err := exec.Command(bufsize, "128").CombinedOutput(); err != nil {
			t.Logf("jack_bufsize 128: %v\n%s", err, out)
		}
	}()
	stop := make(chan struct{})
	timer := time.AfterFunc(10*time.Second, func() { close(stop) })
	defer timer.Stop()
	var n atomic.Int64
	err = drv.Run(func(p *rundata.Sample) bool {
		n.Add(1)
		return true
	}, stop)
	if err == nil || !strings.Contains(err.Error(), "buffer size changed from 64 to 128 frames") {
		t.Fatalf("Run across a buffer size change: %v, want it said", err)
	}
	if n.Load() == 0 {
		t.Fatal("no period before the change")
	}
	t.Log(err)
}

// The process thread is named audio.CallbackThreadName by its first
// cycle (audio/cthread.h), for the spike tracer.
func TestCallbackThreadNamed(t *testing.T) {
	jacktest.Start(t, 48000, 64)
	drv, _ := open(t, config(64))
	if got := jacktest.CallbackThread(t, drv); got != audio.CallbackThreadName {
		t.Errorf("the process thread is named %q, want %s", got, audio.CallbackThreadName)
	}
}

// What the user must fix is bad input: no server, a rate the server does
// not run at. A period it does not run is granted as the server's, and
// said.
func TestBadInputAndShape(t *testing.T) {
	t.Setenv("JACK_DEFAULT_SERVER", "latencytest-none")
	t.Setenv("JACK_NO_START_SERVER", "1")
	if _, err := New().Open(config(64)); !badinput.Is(err) || !strings.Contains(err.Error(), "latencytest-none") {
		t.Errorf("Open with no server: %v, want bad input naming the server", err)
	}
	name := jacktest.Start(t, 48000, 64).Name
	cfg := config(64)
	cfg.Rate, cfg.RateGiven = 44100, true
	if _, err := New().Open(cfg); !badinput.Is(err) || !strings.Contains(err.Error(), "48000") {
		t.Errorf("Open at 44100 Hz: %v, want bad input naming 48000", err)
	}
	cfg = config(128)
	cfg.Device = name
	_, g := open(t, cfg)
	if g.PeriodFrames != 64 || !slices.ContainsFunc(g.Notes, func(n string) bool { return strings.Contains(n, "--period 128") }) {
		t.Errorf("--period 128 on a 64-frame server: granted %d frames, notes %q", g.PeriodFrames, g.Notes)
	}
}

// latencytest devices lists the server with its rate and period, and
// nothing when none runs.
func TestDevices(t *testing.T) {
	t.Setenv("JACK_DEFAULT_SERVER", "latencytest-none")
	if l, err := New().Devices(); err != nil || len(l) != 0 {
		t.Fatalf("Devices with no server: %v, %v", l, err)
	}
	srv := jacktest.Start(t, 48000, 256)
	l, err := New().Devices()
	if err != nil || len(l) != 1 {
		t.Fatalf("Devices: %v, %v", l, err)
	}
	if d := l[0]; d.Name != srv.Name || d.Rates != "48000" || !strings.HasPrefix(d.PeriodSize, "256 ") || !slices.Contains(d.Streams, "playback") {
		t.Errorf("Devices: %+v", d)
	}
}

// The process thread keeps its real-time policy to itself: a process (or a
// Go thread) started from it runs SCHED_OTHER, the thread itself stays
// real-time (audio/cthread.h, lt_keep_rt_to_itself). Before, Go threads
// cloned from it ran goroutines at SCHED_FIFO 85, and the linker of a
// `go build` started from one of them ran for minutes at that priority.
func TestRealtimeStaysWithItsThread(t *testing.T) {
	jacktest.Start(t, 48000, 64)
	drv, _ := open(t, config(64))
	var self, child string
	var once atomic.Bool
	jacktest.Record(t, drv, 200*time.Millisecond, perSecond, func(*rundata.Sample) {
		if once.Swap(true) {
			return
		}
		self = policyOf(os.ReadFile("/proc/thread-self/stat"))
		child = policyOf(exec.Command("cat", "/proc/self/stat").Output())
	})
	if self == "0" || self == "" {
		t.Skipf("the process thread runs policy %q: the server gives no real-time scheduling here", self)
	}
	if child != "0" {
		t.Errorf("a process started from the process thread (policy %s) runs policy %q, want 0 (SCHED_OTHER)", self, child)
	}
}

// policyOf is the scheduling policy in a /proc stat line (field 41).
func policyOf(stat []byte, err error) string {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if err != nil || i < 0 {
		return ""
	}
	if f := strings.Fields(s[i+1:]); len(f) > 38 {
		return f[38]
	}
	return ""
}
