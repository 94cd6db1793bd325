//go:build vm

// In-VM tests: they need a kernel with snd-dummy and snd-aloop loaded and
// /bin/latencytest, which scripts/vmtest provides (see docs/vmtest.md).
// Run them with scripts/vmtest.

package alsa

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"latencytest/audio"
	"latencytest/internal/badinput"
	"latencytest/internal/bintest"
	"latencytest/rundata"
)

const vmBinary = "/bin/latencytest"

// latencytest runs the binary and returns its combined output.
func latencytest(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(vmBinary, args...)
	out, err := cmd.CombinedOutput()
	t.Logf("latencytest %s\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// runPhaseDir runs one idle phase end to end and returns its run.json and
// results directory. The
// simulated DSP load is off: under TCG the emulated CPU's speed follows
// the host's load, so a spin calibrated at startup can outlast the period
// by itself, and these tests are about the driver, not the DSP load.
func runPhaseDir(t *testing.T, args ...string) (*rundata.Run, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "x")
	args = append([]string{"run", "--driver", "alsa", "--tests", "idle", "--cpu-load", "0", "--no-report", "--quiet", "--out", out}, args...)
	if _, err := latencytest(t, args...); err != nil {
		t.Fatalf("run: %v", err)
	}
	r := bintest.ReadRun(t, out)
	if len(r.Phases) != 1 {
		t.Fatalf("%d phases", len(r.Phases))
	}
	return r, out
}

func runPhase(t *testing.T, args ...string) *rundata.Run {
	t.Helper()
	r, _ := runPhaseDir(t, args...)
	return r
}

// TestVMDummyPlayback: on hw:Dummy the period count matches the duration
// within 2 % once the stream time the xruns (with their restarts) and
// pointer jumps lost is taken off, and every period's latency is recorded. Whether the xruns
// themselves are the kernel's and aplay's is TestVMAplayIdle's part.
func TestVMDummyPlayback(t *testing.T) {
	needDummy(t)
	for _, shape := range []struct{ period, periods int }{{64, 2}, {256, 3}} {
		t.Run(fmt.Sprintf("%dx%d", shape.periods, shape.period), func(t *testing.T) {
			r, out := runPhaseDir(t, "--device", "hw:Dummy", "--period", strconv.Itoa(shape.period),
				"--periods", strconv.Itoa(shape.periods), "--duration", "10s")
			ph := r.Phases[0]
			if r.Driver != "alsa" || r.PeriodFrames != shape.period || r.Periods != shape.periods || r.Simulated {
				t.Fatalf("run.json: driver %q period %d periods %d simulated %v", r.Driver, r.PeriodFrames, r.Periods, r.Simulated)
			}
			// From the period's end on the fitted grid a wakeup can come
			// before it by the fit's jitter (docs/method.md, Statistics),
			// never by a period.
			if ph.Latency.Max <= 0 || ph.Latency.P50 <= 0 || ph.Latency.Min*1000 < -float64(shape.period)*1e9/48000 {
				t.Fatalf("latencies not recorded: %+v", ph.Latency)
			}
			t.Logf("%s: %d periods, %d xruns, %d pointer jumps, latency µs %+v", r.Device, ph.Periods, ph.Xruns, ph.PointerJumps, ph.Latency)
			ss := bintest.ReadSamples(t, out, ph)
			if int64(len(ss)) != ph.Periods {
				t.Errorf("%d samples in the file, %d periods in run.json", len(ss), ph.Periods)
			}
			lost, restarts := rundata.StreamLost(ss, int64(r.PeriodFrames)*1e9/int64(r.Rate))
			checkPeriods(t, ph.Periods, 10e9, lost, restarts, r.Rate, shape.period)
			logAccount(t, ss, int64(shape.period)*1e9/int64(r.Rate))
			if t.Failed() {
				logLongSteps(t, ss, int64(shape.period)*1e9/int64(r.Rate))
			}
		})
	}
}

// logAccount logs where the stream's time went by the samples' own due
// instants: the span from the first to the last, what adjacent periods
// took beyond a period each (the card's clock against the nominal one),
// and what the steps across xruns and pointer jumps took beyond their
// periods (rundata.StreamLost's account).
func logAccount(t *testing.T, ss []rundata.Sample, periodNS int64) {
	if len(ss) < 2 {
		return
	}
	var adj, across, short int64
	var nAdj, nAcross int
	last := -1
	for i := range ss {
		if ss[i].Xrun != 0 || ss[i].Flags&rundata.FlagPointerJump != 0 {
			continue
		}
		if last >= 0 {
			d := ss[i].Due - ss[last].Due - int64(i-last)*periodNS
			switch {
			case i-last > 1:
				across += d
				nAcross++
				if d < 0 {
					short += d
				}
			default:
				adj += d
				nAdj++
			}
		}
		last = i
	}
	t.Logf("account: span %.1f ms (first due %d, woke %d; last due %d, woke %d); %d adjacent steps %+.3f ms beyond a period; %d steps across xruns/jumps %+.3f ms beyond theirs (%.3f ms of it short)",
		float64(ss[len(ss)-1].Due-ss[0].Due)/1e6, ss[0].Due, ss[0].Woke, ss[len(ss)-1].Due, ss[len(ss)-1].Woke,
		nAdj, float64(adj)/1e6, nAcross, float64(across)/1e6, float64(short)/1e6)
}

// logLongSteps logs the Due steps of more than two periods that neither an
// xrun nor a pointer jump explains: where a failed period count lost its
// time.
func logLongSteps(t *testing.T, ss []rundata.Sample, periodNS int64) {
	n := 0
	for i := 1; i < len(ss) && n < 20; i++ {
		step := ss[i].Due - ss[i-1].Due
		jump := (ss[i].Flags|ss[i-1].Flags)&rundata.FlagPointerJump != 0
		if step > 2*periodNS && ss[i-1].Xrun == 0 && !jump {
			t.Logf("period %d: due %d µs after the last, latency %d µs, avail %d", ss[i].Index, step/1000, ss[i].Latency()/1000, ss[i].Avail)
			n++
		}
	}
}

// checkPeriods: the periods counted match the stream time less what the
// xruns and pointer jumps lost (rundata.StreamLost), within 2 %: every other
// period became due one period after the last. restarts is only reported.
func checkPeriods(t *testing.T, periods int64, durationNS float64, lost int64, restarts, rate, frames int) {
	t.Helper()
	periodNS := float64(frames) * 1e9 / float64(rate)
	want := (durationNS - float64(lost)) / periodNS
	t.Logf("periods: %d counted, %.0f want (%.0f s less %.1f ms lost, %d restarts)", periods, want, durationNS/1e9, float64(lost)/1e6, restarts)
	if float64(periods) < want*0.98 || float64(periods) > want*1.02 {
		t.Errorf("%d periods in %.0f s less %.1f ms lost to xruns (%d restarts) and pointer jumps, want %.0f ± 2 %%", periods, durationNS/1e9, float64(lost)/1e6, restarts, want)
	}
}

// engineProcess finds the `latencytest __engine` child.
func engineProcess() int {
	if pids := latencytestProcesses("__engine"); len(pids) > 0 {
		return pids[0]
	}
	return 0
}

// latencytestProcesses are the running latencytest processes whose first
// argument is sub (any, when sub is ""): what /proc's command lines say
// now (a zombie has none).
func latencytestProcesses(sub string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && filepath.Base(args[0]) == "latencytest" && (sub == "" || args[1] == sub) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// clickWAV writes a 1 s 16-bit stereo loop at 48 kHz: silence with a
// 2 ms burst at 0.9 of full scale starting at 250 ms.
func clickWAV(t *testing.T) string {
	t.Helper()
	const rate, ch = 48000, 2
	le := binary.LittleEndian
	data := make([]byte, rate*ch*2)
	for i := rate / 4; i < rate/4+rate/500; i++ {
		for c := 0; c < ch; c++ {
			le.PutUint16(data[(i*ch+c)*2:], uint16(29490))
		}
	}
	var f bytes.Buffer
	f.WriteString("RIFF")
	binary.Write(&f, le, uint32(36+len(data)))
	f.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(ch), uint32(rate), uint32(rate * ch * 2), uint16(ch * 2), uint16(16)} {
		binary.Write(&f, le, v)
	}
	f.WriteString("data")
	binary.Write(&f, le, uint32(len(data)))
	f.Write(data)
	p := filepath.Join(t.TempDir(), "click.wav")
	if err := os.WriteFile(p, f.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// open opens cfg, with read/write access if rw, else with mmap access
// (which both snd-dummy and snd-aloop offer).
func open(t *testing.T, cfg audio.Config, rw bool) (*Driver, audio.Granted) {
	t.Helper()
	d := New()
	d.forceRW = rw
	g, err := d.Open(cfg)
	if err != nil {
		t.Fatalf("open %+v: %v", cfg, err)
	}
	t.Cleanup(func() { d.Close() })
	t.Logf("granted %+v", g)
	for _, s := range d.sides {
		if s.pcm.mmap == rw {
			t.Fatalf("%s: mmap %v, want %v", s.name, s.pcm.mmap, !rw)
		}
	}
	return d, g
}

// loop runs n periods and returns the peak |sample| of each captured one
// and the periods that broke: an xrun, or a pointer jump (the pointer
// lost whole buffers, snd-aloop's timer a buffer late under TCG: the
// audio in them is gone as surely, without an xrun).
func loop(t *testing.T, d *Driver, n int) (peaks []float32, xruns []int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := d.Start(); err != nil {
		t.Error(err)
		return nil, nil
	}
	var s rundata.Sample
	for i := 0; i < n; i++ {
		s = rundata.Sample{}
		if err := d.Wait(&s); err != nil {
			t.Error(err)
			return peaks, xruns
		}
		if err := d.Transfer(&s); err != nil {
			t.Error(err)
			return peaks, xruns
		}
		if s.Xrun != 0 || s.Flags&rundata.FlagPointerJump != 0 {
			xruns = append(xruns, i)
		}
		if b := d.Captured(); b != nil {
			var peak float32
			f := d.capt.shape.format
			for j := 0; j < len(b)/bytesPerSample(f); j++ {
				peak = max(peak, float32(math.Abs(float64(decodeSample(b, f, j)))))
			}
			peaks = append(peaks, peak)
		}
	}
	return peaks, xruns
}

// clicks returns the indexes of the periods where a click starts.
func clicks(peaks []float32) []int {
	var at []int
	for i, p := range peaks {
		if p > 0.5 && (i == 0 || peaks[i-1] <= 0.5) {
			at = append(at, i)
		}
	}
	return at
}

// TestVMLoopbackCapture: a click played into hw:Loopback,0 by one stream
// is captured from hw:Loopback,1 by another, once per second of loop.
func TestVMLoopbackCapture(t *testing.T) {
	wav := clickWAV(t)
	cfg := audio.Config{Device: "hw:Loopback,0", Stream: "playback", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 4, File: wav}
	play, _ := open(t, cfg, false)
	cfg.Device, cfg.Stream, cfg.File = "hw:Loopback,1", "capture", ""
	capt, _ := open(t, cfg, true)
	n := 3 * 48000 / 256 // 3 s
	var wg sync.WaitGroup
	var playXruns []int
	wg.Add(1)
	go func() { defer wg.Done(); _, playXruns = loop(t, play, n+200) }()
	peaks, captXruns := loop(t, capt, n)
	wg.Wait()
	at := clicks(peaks)
	t.Logf("clicks at periods %v; xruns or pointer jumps at playback periods %v, capture periods %v", at, playXruns, captXruns)
	if len(at) < 2 {
		t.Fatalf("found %d clicks in 3 s of capture, want 2 or 3 (one per second)", len(at))
	}
	// One second apart, to within a period and the jitter of the
	// loopback's timer, unless an xrun dropped or repeated audio between.
	between := func(bs []int) bool {
		return slices.ContainsFunc(bs, func(i int) bool { return i >= at[0] && i < at[1] })
	}
	if between(playXruns) || between(captXruns) {
		t.Logf("an xrun or pointer jump between the clicks under emulation: their spacing not checked")
	} else if gap := at[1] - at[0]; math.Abs(float64(gap)-187.5) > 3 {
		t.Errorf("clicks %d periods apart, want 187.5 (1 s)", gap)
	}
}

// TestVMDuplexClick: one duplex stream plays a click into hw:Loopback,0
// and hears it on hw:Loopback,1; the delay between playing and hearing is
// what was queued ahead of the hardware (about the buffer).
func TestVMDuplexClick(t *testing.T) {
	for _, rw := range []bool{false, true} {
		t.Run(map[bool]string{false: "mmap", true: "rw"}[rw], func(t *testing.T) { duplexClick(t, rw) })
	}
}

func duplexClick(t *testing.T, rw bool) {
	wav := clickWAV(t)
	d, g := open(t, audio.Config{Device: "hw:Loopback,0", CaptureDevice: "hw:Loopback,1", Stream: "duplex", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 4, File: wav}, rw)
	if !strings.Contains(g.Device, "capture") || !strings.Contains(g.Device, "playback") {
		t.Errorf("granted device %q does not name both sides", g.Device)
	}
	if !d.linked {
		t.Errorf("the two sides were not linked: %q", g.Notes)
	}
	peaks, xruns := loop(t, d, 2*48000/256+20)
	at := clicks(peaks)
	t.Logf("clicks at periods %v, xruns at %v", at, xruns)
	if len(at) == 0 {
		t.Fatal("the click played on hw:Loopback,0 was not heard on hw:Loopback,1")
	}
	// The click leaves the file at period 46.875 (250 ms); the capture
	// hears it once it has gone through the 4-period playback buffer
	// (an xrun before it refills the buffer and shifts it).
	if xruns != nil && xruns[0] < at[0] {
		t.Logf("xrun before the click under emulation: delay not checked")
	} else if at[0] < 46 || at[0] > 46+4+3 {
		t.Errorf("click heard at period %d, want 46-53", at[0])
	}
}

// TestVMDuplexApart: a duplex stream records both sides' due instants (the
// later one is the period's due) and
// its time in poll every period: each period has a capture due, so the
// playback-side and capture-side latency distributions hold a wakeup per
// period each, and with no DSP load the loop spends most of the run asleep
// in poll (what jack-test measured as jackd's time in poll).
func TestVMDuplexApart(t *testing.T) {
	d, _ := open(t, audio.Config{Device: "hw:Loopback,0", CaptureDevice: "hw:Loopback,1", Stream: "duplex", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 4}, false)
	n := 3 * 48000 / 256 // 3 s
	play, capt := rundata.NewHistogram(100_000), rundata.NewHistogram(100_000)
	var polled, first, last int64
	var apart []int64
	runtime.LockOSThread()
	start, err := d.Start()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	var s rundata.Sample
	for i := 0; i < n; i++ {
		s = rundata.Sample{}
		if err = d.Wait(&s); err == nil {
			err = d.Transfer(&s)
		}
		if err != nil {
			break
		}
		pl, cl, ok := s.SideLatencies()
		if !ok || s.PollNS < 0 || max(s.PlaybackDue, s.CaptureDue) != s.Due {
			err = fmt.Errorf("period %d: due %d, playback due %d, capture due %d, poll wait %d", i, s.Due, s.PlaybackDue, s.CaptureDue, s.PollNS)
			break
		}
		if i == 0 {
			first = s.Due
		}
		last = s.Woke
		play.Add(pl)
		capt.Add(cl)
		polled += s.PollNS
		apart = append(apart, s.CaptureDue-s.PlaybackDue)
	}
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	if play.Count != uint64(n) || capt.Count != uint64(n) {
		t.Errorf("%d playback and %d capture wakeups for %d periods", play.Count, capt.Count, n)
	}
	slices.Sort(apart)
	t.Logf("started %d, first due %d; playback %+v; capture %+v; apart min %d median %d max %d ns; in poll %d of %d ns",
		start, first, play.Stats(), capt.Stats(), apart[0], apart[len(apart)/2], apart[len(apart)-1], polled, last-start)
	if span := last - start; polled < span/2 {
		t.Errorf("in poll %d ns of a %d ns run: the idle loop should sleep in poll most of the time", polled, span)
	}
}

// TestVMNoAllocs: Wait and Transfer allocate nothing, with content on the
// playback side and a capture side (duplex through the loopback).
func TestVMNoAllocs(t *testing.T) {
	cfgs := []audio.Config{
		{Device: "hw:Loopback,0", CaptureDevice: "hw:Loopback,1", Stream: "duplex", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 4},
		// Playback alone, with content, through the loopback where the
		// VM has no dummy card (its capture side is then never opened).
		{Device: "hw:Loopback,0", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 2, ToneHz: 440},
	}
	if haveDummy() {
		cfgs[1].Device = "hw:Dummy"
	}
	for _, cfg := range cfgs {
		for _, rw := range []bool{false, true} {
			d, _ := open(t, cfg, rw)
			runtime.LockOSThread()
			if _, err := d.Start(); err != nil {
				t.Fatal(err)
			}
			var s rundata.Sample
			var err error
			allocs := testing.AllocsPerRun(200, func() {
				s = rundata.Sample{}
				if err = d.Wait(&s); err == nil {
					err = d.Transfer(&s)
				}
			})
			runtime.UnlockOSThread()
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("%s (rw %v): %v allocations per period", cfg.Device, rw, allocs)
			}
			d.Close()
		}
	}
}

// TestVMTiming: the timestamps are those of the hardware pointer: Due
// advances by one period (on the card's clock) per period, Woke is never
// before Due, and the fitted grid stays within a period of Due.
func TestVMTiming(t *testing.T) {
	needDummy(t)
	d, g := open(t, audio.Config{Device: "hw:Dummy", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 3}, false)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := d.Start()
	if err != nil {
		t.Fatal(err)
	}
	period := int64(g.PeriodFrames) * 1e9 / int64(g.Rate)
	ss := make([]rundata.Sample, 400)
	for i := range ss {
		if err := d.Wait(&ss[i]); err != nil {
			t.Fatal(err)
		}
		if err := d.Transfer(&ss[i]); err != nil {
			t.Fatal(err)
		}
	}
	if first := ss[0].Due - start; first < period/2 || first > 3*period {
		t.Errorf("first period due %d ns after start, want about %d", first, period)
	}
	var steps, lat, off []int64
	since := 0 // periods since the (re)start
	for i, s := range ss {
		since++
		if s.Xrun != 0 {
			t.Logf("period %d: xrun %d ns (emulation stall)", i, s.Xrun)
			since = 0
			continue
		}
		lat = append(lat, s.Woke-s.Due)
		if s.Woke < s.Due {
			t.Errorf("period %d: woke %d ns before due", i, s.Due-s.Woke)
		}
		if s.Avail < int32(g.PeriodFrames) {
			t.Errorf("period %d: avail %d < one period", i, s.Avail)
		}
		// The grid takes the updates from a buffer past the first after
		// each (re)start (the card's start is not its clock): from
		// then on every period has one.
		if since > g.Periods+1 {
			if s.Grid == 0 {
				t.Errorf("period %d (%d since the start): no grid", i, since)
			}
			off = append(off, abs(s.Grid-s.Due))
		}
		if i > 0 && ss[i-1].Xrun == 0 {
			steps = append(steps, s.Due-ss[i-1].Due)
		}
	}
	slices.Sort(steps)
	slices.Sort(lat)
	slices.Sort(off)
	// The grid is fitted to the same updates: typically it is within a
	// fraction of a period of them (an emulated timer is late now and
	// then, so this is the median).
	if med := off[len(off)/2]; med > period/4 {
		t.Errorf("median |grid − due| %d ns, want under a quarter period", med)
	}
	t.Logf("latency µs: min %d p50 %d p99 %d max %d", lat[0]/1000, lat[len(lat)/2]/1000, lat[len(lat)*99/100]/1000, lat[len(lat)-1]/1000)
	t.Logf("Due steps µs: min %d p50 %d p99 %d max %d", steps[0]/1000, steps[len(steps)/2]/1000, steps[len(steps)*99/100]/1000, steps[len(steps)-1]/1000)
	// The dummy's pointer runs on the system clock: the typical step of
	// Due is one period.
	if med := steps[len(steps)/2]; math.Abs(float64(med)/float64(period)-1) > 0.01 {
		t.Errorf("median Due step %d ns, want %d ± 1 %%", med, period)
	}
}

// TestVMSyncPtr: where the status page cannot be mapped (arm64) the
// status comes from a read-only SYNC_PTR; the timestamps must be the same
// kind: Due one period apart, never after Woke.
func TestVMSyncPtr(t *testing.T) {
	needDummy(t)
	d := New()
	d.forceSyncPtr = true
	g, err := d.Open(audio.Config{Device: "hw:Dummy", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !strings.Contains(strings.Join(g.Notes, " "), "SYNC_PTR") {
		t.Errorf("notes %q do not say the status is read with SYNC_PTR", g.Notes)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dueStepsArePeriods(t, d, int64(256)*1e9/48000)
}

// TestVMTime32: a 32-bit kernel before 5.6 takes STATUS and SYNC_PTR only
// in the 32-bit time_t records (hasTime32). A 32-bit kernel of today takes
// both, so the test forces the old ones: the stream runs on them as on
// the time64 ones (Due one period apart, never after Woke), says so, and
// the two records read back the same state, pointers and timestamps.
func TestVMTime32(t *testing.T) {
	if !hasTime32 {
		t.Skip("64-bit: time_t has always been 64-bit, one ABI; scripts/vmtest -arch arm runs this (make test)")
	}
	needDummy(t)
	d := New()
	d.forceTime32 = true
	g, err := d.Open(audio.Config{Device: "hw:Dummy", Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !strings.Contains(strings.Join(g.Notes, " "), "32-bit time_t") {
		t.Errorf("notes %q do not say the 32-bit time_t records are used", g.Notes)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dueStepsArePeriods(t, d, int64(256)*1e9/48000)
	// Both records, of the stream stopped (a running stream's pointer
	// moves between two reads: the dummy's with the clock): the same
	// state, pointers and timestamps, the stop's among them.
	p := d.sides[0].pcm
	if e := p.drop(); e != 0 {
		t.Fatal(e)
	}
	read := func(old bool) (mmapStatus, pcmStatus) {
		p.time32 = old
		p.sync.Flags = syncPtrAppl | syncPtrAvailMin
		if e := p.syncPtr(); e != 0 {
			t.Fatalf("SYNC_PTR (time32 %v): %v", old, e)
		}
		if e := p.statusNow(); e != 0 {
			t.Fatalf("STATUS (time32 %v): %v", old, e)
		}
		return p.sync.Status, p.st
	}
	a, as := read(false)
	b, bs := read(true)
	if a != b || a.Tstamp.Sec == 0 {
		t.Errorf("SYNC_PTR time64 %+v, time32 %+v: want the same, with a timestamp", a, b)
	}
	if as.State != bs.State || as.TriggerTstamp != bs.TriggerTstamp || as.TriggerTstamp.Sec == 0 ||
		as.ApplPtr != bs.ApplPtr || as.HWPtr != bs.HWPtr {
		t.Errorf("STATUS time64 %+v, time32 %+v: want the same state, trigger timestamp and pointers", as, bs)
	}
}

// dueStepsArePeriods starts d and runs 200 periods of period ns: never
// woken before due, and Due one period apart at the median (the dummy's
// pointer runs on the system clock).
func dueStepsArePeriods(t *testing.T, d *Driver, period int64) {
	t.Helper()
	if _, err := d.Start(); err != nil {
		t.Fatal(err)
	}
	var steps []int64
	var prev rundata.Sample
	for i := 0; i < 200; i++ {
		var s rundata.Sample
		if err := d.Wait(&s); err != nil {
			t.Fatal(err)
		}
		if err := d.Transfer(&s); err != nil {
			t.Fatal(err)
		}
		if s.Xrun == 0 && s.Woke < s.Due {
			t.Errorf("period %d: woke %d ns before due", i, s.Due-s.Woke)
		}
		if i > 0 && s.Xrun == 0 && prev.Xrun == 0 {
			steps = append(steps, s.Due-prev.Due)
		}
		prev = s
	}
	slices.Sort(steps)
	if med := steps[len(steps)/2]; math.Abs(float64(med)/float64(period)-1) > 0.01 {
		t.Errorf("median Due step %d ns, want %d ± 1 %%", med, period)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestVMErrors: what the user can fix is bad input (internal/badinput) naming
// the problem.
func TestVMErrors(t *testing.T) {
	base := audio.Config{Rate: 48000, Channels: 2, PeriodFrames: 256, Periods: 2}
	type errCase struct {
		dev  string
		rate int
		per  int
		want string
	}
	cases := []errCase{
		{dev: "hw:Nope", want: `no sound card "Nope"; cards here: 0 [Dummy], 1 [Loopback]`},
		{dev: "hw:Dummy,5", want: "has no playback device 5 (it has device 0)"},
		{dev: "hw:Dummy", rate: 96000, want: "--rate: hw:0,0 (Dummy playback) does not take 96000 Hz; nearest it allows: 48000 Hz"},
		{dev: "hw:Dummy", per: 8, want: "--period: hw:0,0 (Dummy playback) does not take a period of 8 frames at 48000 Hz; nearest it allows: 16 frames"},
		{dev: "default", want: "usually card 0 (hw:0,0)"},
	}
	busy := "hw:Dummy,0,0"
	if !haveDummy() {
		// The same errors from the loopback, the VM's only card (snd-aloop
		// allows 8000-192000 Hz and periods of at least 64 bytes).
		cases = []errCase{
			{dev: "hw:Nope", want: `no sound card "Nope"; cards here: 0 [Loopback]`},
			{dev: "hw:Loopback,5", want: "has no playback device 5 (it has device 0, 1)"},
			{dev: "hw:Loopback", rate: 384000, want: "--rate: hw:0,0 (Loopback playback) does not take 384000 Hz; nearest it allows: 192000 Hz"},
			{dev: "hw:Loopback", per: 8, want: "--period: hw:0,0 (Loopback playback) does not take a period of 8 frames at 48000 Hz; nearest it allows: 16 frames"},
			{dev: "default", want: "usually card 0 (hw:0,0)"},
		}
		busy = "hw:Loopback,0,0"
	}
	for _, tc := range cases {
		cfg := base
		cfg.Device = tc.dev
		if tc.rate != 0 {
			cfg.Rate, cfg.RateGiven = tc.rate, true
		}
		if tc.per != 0 {
			cfg.PeriodFrames = tc.per
		}
		d := New()
		_, err := d.Open(cfg)
		if tc.rate != 0 && err != nil {
			// Not asked for, the rate is the device's nearest, said.
			cfg.RateGiven = false
			d2 := New()
			g, err2 := d2.Open(cfg)
			d2.Close()
			if err2 != nil || g.Rate == tc.rate || !strings.Contains(strings.Join(g.Notes, "\n"), fmt.Sprintf("instead of %d", tc.rate)) {
				t.Errorf("open %s at %d Hz not asked for: %v, granted %d Hz, notes %q; want the nearest rate, said", tc.dev, tc.rate, err2, g.Rate, g.Notes)
			}
		}
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("open %s rate %d period %d: %v; want bad input containing %q", tc.dev, cfg.Rate, cfg.PeriodFrames, err, tc.want)
		}
		d.Close()
	}

	// Busy: subdevice 0 held by this very process.
	cfg := base
	cfg.Device = busy
	open(t, cfg, false)
	_, err := New().Open(cfg)
	if want := fmt.Sprintf("is busy: held by pid %d", os.Getpid()); !badinput.Is(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("second open of %s: %v; want bad input containing %q", busy, err, want)
	}

	// The CLI prints one line and exits 2.
	out, err := latencytest(t, "run", "--driver", "alsa", "--device", "hw:Nope", "--tests", "idle", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "x"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "Nope") {
		t.Errorf("run --device hw:Nope: exit %v, output %q; want exit 2 and one line", err, out)
	}
}

// TestVMDevices: `latencytest devices` lists both cards with what they
// offer.
func TestVMDevices(t *testing.T) {
	out, err := latencytest(t, "devices")
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{"hw:Loopback,0", "hw:Loopback,1", "playback, capture"}
	if haveDummy() {
		wants = append(wants, "hw:Dummy,0", "5500-48000", "formats:     U8 S16_LE\n")
	}
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("devices output lacks %q", want)
		}
	}
}

// TestVMCaptureRun: `run --stream capture` and `--stream duplex` through
// the loopback count their periods like playback, and so does a WAV file
// played through it.
func TestVMCaptureRun(t *testing.T) {
	for _, args := range [][]string{
		{"--stream", "capture", "--device", "hw:Loopback,1"},
		{"--stream", "duplex", "--device", "hw:Loopback,0", "--capture-device", "hw:Loopback,1", "--tone", "440"},
		{"--stream", "playback", "--device", "hw:Loopback,0", "--file", clickWAV(t)},
	} {
		r, out := runPhaseDir(t, append(args, "--period", "256", "--periods", "4", "--duration", "3s")...)
		ph := r.Phases[0]
		if r.Stream != args[1] {
			t.Fatalf("run.json stream %q, want %q", r.Stream, args[1])
		}
		// As in TestVMDummyPlayback: the periods match the stream time
		// less what xruns and pointer jumps lost.
		ss := bintest.ReadSamples(t, out, ph)
		lost, restarts := rundata.StreamLost(ss, int64(r.PeriodFrames)*1e9/int64(r.Rate))
		checkPeriods(t, ph.Periods, 3e9, lost, restarts, r.Rate, r.PeriodFrames)
		checkSides(t, ph, ss, args[1] == "duplex")
	}
}

// TestVMCPUsCard: run --cpus with a card runs the card's stream on the
// first CPU listed and a timer thread on each other at the card's period,
// each pinned to its CPU: each counts the periods of its own time less
// what its xruns lost, the card's thread waits for its periods in poll
// and the timer's never, and the phase keeps the card's clock.
func TestVMCPUsCard(t *testing.T) {
	needDummy(t)
	r, out := runPhaseDir(t, "--device", "hw:Dummy", "--period", "256", "--periods", "4", "--duration", "3s", "--cpus", "1,0")
	ph := r.Phases[0]
	if r.Card == nil || r.Simulated || !slices.Equal(r.CPUs, []int{1, 0}) || len(ph.CPUs) != 2 {
		t.Fatalf("run.json: card %+v, simulated %v, cpus %v, the phase's %d", r.Card, r.Simulated, r.CPUs, len(ph.CPUs))
	}
	for k, c := range ph.CPUs {
		if o := c.RT.Obtained; !slices.Equal(o.Affinity, []int{c.CPU}) {
			t.Errorf("CPU %d: its thread obtained affinity %v", c.CPU, o.Affinity)
		}
		ss := bintest.ReadSamples(t, out, c.Phase)
		lost, restarts := rundata.StreamLost(ss, int64(r.PeriodFrames)*1e9/int64(r.Rate))
		checkPeriods(t, c.Periods, 3e9, lost, restarts, r.Rate, r.PeriodFrames)
		// Only the card's thread waits for its periods in poll.
		polled := c.PollWait != nil && c.PollWait.Max > 0
		if card := k == 0; card != polled {
			t.Errorf("CPU %d (the card's thread: %v): periods waited in poll: %v", c.CPU, card, polled)
		}
	}
	if ph.ClockHz != ph.CPUs[0].ClockHz {
		t.Errorf("the phase's clock %g Hz, the card's thread's %g Hz", ph.ClockHz, ph.CPUs[0].ClockHz)
	}
}

// checkSides: every ALSA phase has its poll wait in run.json, and a duplex
// one both sides' dues in every period of its samples file (through the
// engine's wire form and the file's control records) and their figures in
// run.json; any other phase has none of them.
func checkSides(t *testing.T, ph rundata.Phase, ss []rundata.Sample, duplex bool) {
	t.Helper()
	if ph.PollWait == nil || ph.PollWait.Max <= 0 {
		t.Errorf("%s: poll wait %+v", ph.Name, ph.PollWait)
	}
	figures := ph.PlaybackLatency != nil && ph.CaptureLatency != nil && ph.CapturePlaybackApart != nil
	if figures != duplex || (!duplex && (ph.PlaybackLatency != nil || ph.CaptureLatency != nil)) {
		t.Errorf("duplex %v, but run.json has playback %v, capture %v, apart %v", duplex, ph.PlaybackLatency, ph.CaptureLatency, ph.CapturePlaybackApart)
	}
	for _, s := range ss {
		// A period that ran into an xrun before a side's first period
		// completed has no due of that side, so the file keeps no two
		// dues for it (seen once on armhf: the run's one underrun, and
		// period 0 without dues).
		if s.Duplex() != duplex && !(duplex && s.Xrun != 0) {
			t.Fatalf("period %d: playback due %d, capture due %d (xrun %d) in a stream with duplex %v", s.Index, s.PlaybackDue, s.CaptureDue, s.Xrun, duplex)
		}
	}
	if duplex {
		t.Logf("playback side %+v; capture side %+v; apart %+v; poll %+v", *ph.PlaybackLatency, *ph.CaptureLatency, *ph.CapturePlaybackApart, *ph.PollWait)
	}
}
