//go:build portaudio

package portaudio

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/jacktest"
	"latencytest/rundata"
)

// jackConfig is verbose: nothing PortAudio or libjack print is hidden, and
// neither is the test binary's traceback should a test time out inside
// PortAudio (quietStderr points file descriptor 2 away meanwhile).
func jackConfig() audio.Config {
	return audio.Config{Device: "jack", Stream: "playback", Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2, Verbose: true}
}

// A stop or close that the host API never answers is given up after
// hostWait, and the stream abandoned; one that answers is passed through.
func TestAnsweredGivesUp(t *testing.T) {
	d := New()
	d.hostWait = 50 * time.Millisecond
	never := make(chan struct{})
	defer close(never)
	start := time.Now()
	err := d.answered(func() error { <-never; return nil })
	if err == nil || !d.dead || time.Since(start) > 5*time.Second {
		t.Fatalf("answered on a call that never returns: %v after %v, dead %v", err, time.Since(start), d.dead)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close of an abandoned stream: %v", err)
	}
	d = New()
	want := errors.New("refused")
	if err := d.answered(func() error { return want }); err != want || d.dead {
		t.Fatalf("answered passed %v (dead %v), want %v", err, d.dead, want)
	}
}

// perSecond is the most periods a second Record makes room for: twice
// the server's 64-frame cycles at 48 kHz.
const perSecond = 48000 / 64 * 2

func openJack(t *testing.T, cfg audio.Config) *Driver {
	t.Helper()
	drv := New()
	// A capture open once hung in Pa_OpenStream while the server spun at
	// 95 % of a CPU (docs/notes/gate.md): rather than wait for the test
	// binary's timeout, say what the server's threads were doing.
	watch := time.AfterFunc(30*time.Second, func() {
		debug.SetTraceback("all")
		panic("Open did not return in 30 s; the JACK server's threads:\n" + serverThreads(os.Getenv("JACK_DEFAULT_SERVER")))
	})
	defer watch.Stop()
	g := jacktest.Open(t, drv, cfg)
	if g.Rate != cfg.Rate || g.PeriodFrames != cfg.PeriodFrames || !strings.Contains(g.Device, "jack:") {
		t.Fatalf("granted %+v", g)
	}
	return drv
}

// Five seconds of 64-frame periods at 48 kHz are 3750 server cycles.
func TestJackCountsPeriods(t *testing.T) {
	startJack(t, 48000, 64)
	drv := openJack(t, jackConfig())
	s := jacktest.Record(t, drv, 5*time.Second, perSecond, nil)
	checkPeriodsCounted(t, drv, s)
	checkOncePerCycle(t, s)
	if n := len(s); n > 3750*102/100 {
		t.Errorf("%d callbacks in 5 s, want at most 3750 + 2 %%", n)
	}
	lat := jacktest.Latencies(t, s)
	for i, p := range s {
		// One period to fill, plus the frames of the cycle's deadline
		// the lateness used up: a punctual callback has one period of
		// headroom before the next cycle, a late one less. Whole frames
		// of the fitted period, which is within maxDrift of nominal.
		late := float64(p.Latency()) * 48000 / 1e9
		if lo, hi := 64+math.Floor(late/(1+maxDrift)), 64+math.Floor(late/(1-maxDrift)); p.Avail < 64 || p.Avail > 128 || float64(p.Avail) < lo || float64(p.Avail) > hi {
			t.Fatalf("sample %d: avail %d at %d ns late, want 64 + the late frames (%.1f), at most 128", i, p.Avail, p.Latency(), 64+late)
		}
	}
	// The grid is the lower envelope of the wakeups, fitted to the frame
	// clock: if its slope were off by the dummy server's drift (it runs
	// slow without real-time rights), latencies would run away by
	// milliseconds over 5 s, or pile up at zero.
	period := int64(64) * 1e9 / 48000
	if med := lat[len(lat)/2]; med <= 0 || med > period {
		t.Errorf("median latency %d ns, want within (0, one period]", med)
	}
	var xruns int
	var lost int64
	for _, p := range s {
		if p.Xrun > 0 {
			xruns++
			lost += p.Xrun
		}
	}
	t.Logf("%d xruns, %.1f ms in all", xruns, float64(lost)/1e6)
	t.Logf("%d callbacks; latency min %d median %d p99 %d max %d ns", len(s), lat[0], lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
}

// checkPeriodsCounted checks the frame counter against the time between the
// first and the last callback: it counts every period of that time, those
// the client missed too (a loaded machine makes the Go callback miss
// some). The time is the reference, not the server's frame clock: the
// dummy server, starved, restarts its schedule without counting the time
// it lost (jack_frame_time was seen 600 cycles behind in 5 s), and with a
// soundcard that time is lost sound. The first and the last callback may
// each be late against the line the periods are counted on, by less than
// a period: one either way. Each restart after an xrun re-phases the
// periods by less than one either way: the line is re-anchored at a late
// callback (a fraction of a period left out), and the dummy server, after
// a late cycle, starts the next at once (a fraction counted whole).
func checkPeriodsCounted(t *testing.T, drv *Driver, s []rundata.Sample) {
	t.Helper()
	t.Logf("period fitted %.1f ns", drv.grid.period)
	checkCountedInTime(t, drv.grid.c, s[len(s)-1].Woke-s[0].Woke, drv.grid.restarts)
}

// checkCountedInTime is checkPeriodsCounted's rule on its own, for the
// tests that read a run's files: counted periods (missed ones too) from
// the first callback to the last, against span ns of 64-frame periods at
// 48 kHz, within one period and one for each of restarts.
func checkCountedInTime(t *testing.T, counted, span, restarts int64) {
	t.Helper()
	period := float64(64) * 1e9 / 48000
	want := float64(span) / period
	t.Logf("%d periods counted in %.1f periods' time, %d restarts", counted, want, restarts)
	if math.Abs(float64(counted)-want) > float64(restarts)+1 {
		t.Errorf("%d periods counted between the first and the last callback, want %.1f (± 1, and ± 1 for each of %d restarts after an xrun)", counted, want, restarts)
	}
}

// checkOncePerCycle checks that the callbacks come once per server cycle:
// the median gap between two is one period. How many come in a given time
// is the machine's load, not the driver's (CI's race run missed a fifth of
// the cycles, each reported as an xrun); a callback per two cycles, or two
// per cycle, would move the median by a whole period.
func checkOncePerCycle(t *testing.T, s []rundata.Sample) {
	t.Helper()
	if len(s) < 100 {
		t.Fatalf("%d callbacks, want at least 100 to judge the cycle by", len(s))
	}
	gaps := make([]int64, 0, len(s)-1)
	for i := 1; i < len(s); i++ {
		gaps = append(gaps, s[i].Woke-s[i-1].Woke)
	}
	slices.Sort(gaps)
	period := float64(64) * 1e9 / 48000
	if med := float64(gaps[len(gaps)/2]); med < 0.75*period || med > 1.25*period {
		t.Errorf("median gap between callbacks %.0f ns, want one period (%.0f ns) ± 25 %%", med, period)
	}
}

// A callback that stalls for 50 ms misses about 37 server cycles; the
// next callback reports them as an xrun of about that length.
func TestJackStallIsXrun(t *testing.T) {
	startJack(t, 48000, 64)
	drv := openJack(t, jackConfig())
	const at = 1000
	var sleep audio.Sleeper // clock_nanosleep: no Go timer to wait for
	s := jacktest.Record(t, drv, 3*time.Second, perSecond, func(p *rundata.Sample) {
		if p.Index == at {
			sleep.For(50e6)
		}
	})
	if len(s) < at+500 {
		t.Fatalf("only %d callbacks", len(s))
	}
	var stall int64
	for _, p := range s[at+1 : at+4] {
		stall = max(stall, p.Xrun)
	}
	if stall < 40e6 || stall > 120e6 {
		t.Fatalf("xrun after a 50 ms stall: %d ns, want about 50 ms; samples %+v", stall, s[at:at+4])
	}
	// The grid survives the stall: callbacks after it are as punctual as
	// before.
	period := int64(64) * 1e9 / 48000
	var lat []int64
	for _, p := range s[at+100:] {
		lat = append(lat, p.Latency())
	}
	slices.Sort(lat)
	if med := lat[len(lat)/2]; med > period {
		t.Errorf("median latency after the stall %d ns, want under a period", med)
	}
}

// The real-time path of a running stream does not allocate: the heap's
// malloc count over a second of callbacks stays far below the number of
// callbacks (this is where an allocation per call in the C-to-Go path
// would show).
func TestJackCallbackPathDoesNotAllocate(t *testing.T) {
	startJack(t, 48000, 64)
	jacktest.CheckNoAllocs(t, openJack(t, jackConfig()))
}

func TestJackDevices(t *testing.T) {
	startJack(t, 48000, 64)
	list, err := New().Devices()
	if err != nil {
		t.Fatal(err)
	}
	var host, dev bool
	for _, d := range list {
		if d.Name == "jack" && d.PeriodSize == "64" && d.Rates == "48000" {
			host = true
		}
		if d.Description == "jack:system" && slices.Contains(d.Streams, "playback") {
			dev = true
		}
	}
	if !host || !dev {
		t.Fatalf("no jack host API and jack:system device in %+v", list)
	}
}

func TestJackBadInput(t *testing.T) {
	startJack(t, 48000, 64)
	for _, c := range []struct {
		name string
		edit func(*audio.Config)
		want string
	}{
		{"rate", func(c *audio.Config) { c.Rate = 44100 }, "runs at 48000 Hz"},
		{"period", func(c *audio.Config) { c.PeriodFrames = 128 }, "64-frame periods"},
		{"hostapi", func(c *audio.Config) { c.Device = "coreaudio" }, "no host API"},
		{"name", func(c *audio.Config) { c.Device = "jack:nosuch" }, "no JACK Audio Connection Kit playback device whose name contains"},
		{"index", func(c *audio.Config) { c.Device = "999" }, "no device 999"},
		{"stream", func(c *audio.Config) { c.Stream = "sideways" }, "--stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := jackConfig()
			c.edit(&cfg)
			drv := New()
			_, err := drv.Open(cfg)
			if !badinput.Is(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open: %v, want one-line bad input containing %q", err, c.want)
			}
			drv.Close()
		})
	}
}

// When the server goes away mid-stream, Run gives up with an error
// instead of waiting for callbacks that will not come. It runs in a child
// process: the abandoned stream leaves PortAudio's JACK client dead for
// the rest of the process, as it would the engine's (which then exits).
func TestJackServerGone(t *testing.T) {
	if os.Getenv("LATENCYTEST_GONE_CHILD") != "" {
		serverGone(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestJackServerGone$", "-test.v")
	cmd.Env = append(os.Environ(), "LATENCYTEST_GONE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestJackServerGone") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func serverGone(t *testing.T) {
	stopJack := startJack(t, 48000, 64)
	drv := openJack(t, jackConfig())
	var n atomic.Int64
	go func() {
		for n.Load() < 200 {
			time.Sleep(10 * time.Millisecond)
		}
		stopJack()
	}()
	start := time.Now()
	err := drv.Run(func(p *rundata.Sample) bool { n.Add(1); return true }, make(chan struct{}))
	if err == nil || !strings.Contains(err.Error(), "no callback") {
		t.Fatalf("Run after the server exited: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run took %v to notice", d)
	}
}

// Capture and duplex streams are called back once per cycle too.
func TestJackCaptureAndDuplex(t *testing.T) {
	startJack(t, 48000, 64)
	for _, stream := range []string{"capture", "duplex"} {
		t.Run(stream, func(t *testing.T) {
			cfg := jackConfig()
			cfg.Stream = stream
			drv := openJack(t, cfg)
			s := jacktest.Record(t, drv, time.Second, perSecond, nil)
			checkPeriodsCounted(t, drv, s)
			checkOncePerCycle(t, s)
		})
	}
}

// --driver auto's check: a JACK server is up when its socket is there.
func TestJackRunning(t *testing.T) {
	t.Setenv("JACK_DEFAULT_SERVER", "latencytest-none")
	if JackRunning() {
		t.Fatal("JackRunning with no such server")
	}
	startJack(t, 48000, 64) // sets JACK_DEFAULT_SERVER to its own name
	if !JackRunning() {
		t.Fatal("JackRunning false with the server up")
	}
}

// The callback thread names itself audio.CallbackThreadName by its first
// period (the C callback's LT_THREAD_NAME), so that the spike tracer can
// tell the audio thread among PortAudio's and JACK's threads.
func TestCallbackThreadNamed(t *testing.T) {
	startJack(t, 48000, 64)
	if got := jacktest.CallbackThread(t, openJack(t, jackConfig())); got != audio.CallbackThreadName {
		t.Errorf("the callback thread is named %q, want %s", got, audio.CallbackThreadName)
	}
}
