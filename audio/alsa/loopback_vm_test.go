//go:build vm

package alsa

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/audio"
	"latencytest/internal/bintest"
	"latencytest/rundata"
)

// alsabatBinary is alsa-utils' alsabat, the reference for the sound
// itself; scripts/vmtest puts it in every VM, amd64's from the host and
// the ARM VMs' (arm64, arm) from Debian's alsa-utils of their
// architecture (docs/vmtest.md).
const alsabatBinary = "/bin/alsabat"

func needAlsabat(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(alsabatBinary); err != nil {
		t.Fatalf("no %s in this VM: scripts/vmtest copies it in (alsa-utils of the VM's architecture)", alsabatBinary)
	}
}

// loopbackArgs is a --loopback run through snd-aloop's pair at 4 × 256
// frames.
var loopbackArgs = []string{"--stream", "duplex", "--device", "hw:Loopback,0", "--capture-device", "hw:Loopback,1",
	"--loopback", "--period", "256", "--periods", "4", "--rate", "48000", "--channels", "2"}

// TestVMLoopbackRoundTrip: run --loopback finds the round trip through
// snd-aloop's pair at 4 × 256 frames, behind the whole buffer, and the
// card's delay holds still while the sound holds. The comparison with
// alsabat is TestVMLoopbackAlsabat's, in the long tier.
func TestVMLoopbackRoundTrip(t *testing.T) {
	loopbackRoundTrip(t)
}

// loopbackRoundTrip is the round trip of a 5 s run --loopback at 4 ×
// 256 frames, checked.
func loopbackRoundTrip(t *testing.T) *rundata.Sound {
	return loopbackRoundTripAt(t, buffer{256, 4})
}

// loopbackRoundTripAt is the round trip of a 5 s run --loopback at sh,
// checked: read behind the whole buffer in one of three runs (a run whose
// sound broke, the VM frozen, before the MLS came back whole reads none),
// snd-aloop's own delay 0, the card's delay still while the sound held.
func loopbackRoundTripAt(t *testing.T, sh buffer) *rundata.Sound {
	t.Helper()
	snd, ok := tryLoopbackRoundTrip(t, sh)
	if !ok {
		t.Fatalf("sound %+v: want a round trip behind %d frames in one of three runs", snd, sh.period*sh.periods)
	}
	return snd
}

// tryLoopbackRoundTrip is loopbackRoundTripAt that says whether it read a
// round trip, where not having one is not yet a failure (the caller
// decides with a reference), with the last run's sound.
func tryLoopbackRoundTrip(t *testing.T, sh buffer) (*rundata.Sound, bool) {
	t.Helper()
	args := append(slices.Clone(loopbackArgs), "--duration", "5s", "--period", strconv.Itoa(sh.period), "--periods", strconv.Itoa(sh.periods))
	var snd *rundata.Sound
	var reported *rundata.ReportedDelay
	for try := 1; try <= 3 && (snd == nil || snd.CardDelay == nil); try++ {
		r, _ := runPhaseDir(t, args...)
		snd, reported = r.Phases[0].Sound, r.Phases[0].CardReported
	}
	if snd == nil || snd.CardDelay == nil || snd.BufferFrames != sh.period*sh.periods {
		return snd, false
	}
	// snd-aloop reports no delay of its own (it never sets
	// runtime->delay), though the sound takes one: a reported delay
	// other than 0 would be the buffer's frames miscounted.
	if reported == nil || *reported != (rundata.ReportedDelay{}) {
		t.Errorf("card_reported_delay %+v, want 0 on both sides (snd-aloop reports none)", reported)
	}
	t.Logf("latencytest %d×%d: card delay %+v frames over %d repetitions (%d missing), round trip %.2f ms", sh.periods, sh.period, *snd.CardDelay, snd.RoundTrips, snd.RoundTripsMissing, snd.RoundTripMS)
	if snd.RoundTripsBeforeBreak > 0 && snd.CardDelay.Min != snd.CardDelay.Max {
		t.Errorf("the card delay moved while the sound held: %+v over %d repetitions", *snd.CardDelay, snd.RoundTripsBeforeBreak)
	}
	return snd, true
}

// TestVMLoopbackAlsabat: run --loopback's round trip against alsabat
// --roundtriplatency at the same devices, rate and buffer (-B and -E in
// frames), at 2 × 256, 4 × 256 and 4 × 1024 frames in one boot. alsabat
// counts captured frames from the capture period in which it starts its
// tone to the first frame over its threshold, and prints the average of
// five in whole ms (truncated): the two agree within a period and
// alsabat's truncation. The long tier's: under the host's load alsabat
// can measure nothing in three attempts (said as a skip of that size),
// and a gate may not skip.
//
//vmtest:long
func TestVMLoopbackAlsabat(t *testing.T) {
	needAlsabat(t)
	for _, sh := range []buffer{{256, 2}, {256, 4}, {1024, 4}} {
		t.Run(fmt.Sprintf("%dx%d", sh.periods, sh.period), func(t *testing.T) { alsabatRoundTrip(t, sh) })
	}
}

// alsabatRoundTrip is TestVMLoopbackAlsabat at one buffer.
func alsabatRoundTrip(t *testing.T, sh buffer) {
	snd, ok := tryLoopbackRoundTrip(t, sh)
	if !ok {
		// latencytest's sound broke before its MLS came back whole, in
		// three runs: the reference for whether this buffer can hold on
		// snd-aloop at all is aplay -M alone at the same size on the
		// same device (latencytest's access is mmap).
		a := startAplayOn(t, "hw:Loopback,0", sh.period, sh.periods, 5*time.Second, true, -1)
		under := a.wait(t)
		if len(under) == 0 {
			t.Fatalf("sound %+v: no round trip in three runs at %d × %d frames, where aplay -M on hw:Loopback,0 played 5 s without an underrun", snd, sh.periods, sh.period)
		}
		t.Skipf("not measurable at %d × %d frames on snd-aloop here: latencytest's sound broke in each of three runs (last: %d xruns heard, %d not), and aplay -M alone on hw:Loopback,0 underran %d times in 5 s (longest %.2f ms)",
			sh.periods, sh.period, snd.XrunsHeard, snd.XrunsNotHeard, len(under), slices.Max(under))
	}
	period, buf := strconv.Itoa(sh.period), strconv.Itoa(sh.period*sh.periods)
	// alsabat retries an attempt that had an xrun at a larger period and
	// buffer, which is no longer the same buffer: such runs, and those that
	// gave up, are run again (the VM's freezes), three times at most.
	var m [][][]byte
	for try := 1; try <= 3 && m == nil; try++ {
		out, err := alsabat(t, "-P", "hw:Loopback,0", "-C", "hw:Loopback,1", "--roundtriplatency",
			"-r", "48000", "-c", "2", "-f", "S16_LE", "-B", buf, "-E", period)
		t.Logf("alsabat, attempt %d:\n%s", try, out)
		other := regexp.MustCompile(`Set period size: (\d+) +buffer size: (\d+)`).FindAllSubmatch(out, -1)
		same := !slices.ContainsFunc(other, func(sm [][]byte) bool { return string(sm[1]) != period || string(sm[2]) != buf })
		if err == nil && same && regexp.MustCompile(`Final round trip latency: (\d+)ms`).Match(out) {
			m = regexp.MustCompile(`Test\d+, round trip latency (\d+)ms`).FindAllSubmatch(out, -1)
		}
	}
	if m == nil {
		// The reference could not measure: the VM froze under its buffer
		// in every attempt (the host's load), which says nothing of ours.
		t.Skipf("not compared: alsabat gave no round trip at %d × %d frames in three attempts (it retries an xrun at a larger buffer)", sh.periods, sh.period)
	}
	// alsabat takes the tone as back at the first capture period whose
	// average level passes its threshold (bat/latencytest.c,
	// play_and_listen), from a count its own threads keep: each of its
	// five figures is the loop's round trip give or take a period, and
	// truncated to the ms (26, 21, 26, 16, 26 ms in one run; 26, 32, 26,
	// 26, 32 in another, against the loop's 21.33). Its final figure, their
	// mean, keeps its outliers; their median is compared.
	var figs []int
	for _, sm := range m {
		v, _ := strconv.Atoi(string(sm[1]))
		figs = append(figs, v)
	}
	slices.Sort(figs)
	bat := figs[len(figs)/2]
	periodMS := float64(sh.period) * 1e3 / 48000
	if d := float64(bat) - snd.RoundTripMS; d < -periodMS || d > periodMS+1 {
		t.Errorf("round trip %.2f ms, alsabat's median %d ms (of %v): more than a period (%.2f ms) apart", snd.RoundTripMS, bat, figs, periodMS)
	}
}

// alsabat runs alsabat with args. Debian 12's alsabat (alsa-utils 1.2.8)
// returns a stale errno from bat_init even when it succeeded (alsa-utils
// issue 192, fixed by 55bafb7 "alsabat: improve error handling in
// bat_init()"): mkstemp's getrandom leaves EAGAIN while the kernel's
// random pool is not initialised, as in a VM just booted, and a locale
// that is not installed leaves ENOENT. So the pool is initialised first
// (a blocking getrandom) and alsabat runs in the C locale.
func alsabat(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	if _, err := unix.Getrandom(make([]byte, 16), 0); err != nil {
		t.Fatalf("getrandom: %v", err)
	}
	cmd := exec.Command(alsabatBinary, args...)
	cmd.Env = []string{"LC_ALL=C", "PATH=/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("alsabat: %v", err)
	}
	// At latencytest's audio thread's scheduling (--prio 80), as aplay in
	// the xrun comparisons: alsabat's threads, created later, inherit it.
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 80}
	if err := unix.SchedSetAttr(cmd.Process.Pid, &attr, 0); err != nil {
		t.Fatalf("alsabat: SCHED_FIFO 80: %v", err)
	}
	err := cmd.Wait()
	return out.Bytes(), err
}

// TestVMLoopbackGlitches: the engine stalled for 50 ms and for 300 ms
// (run --test-stall) underruns the playback; the restart splices the
// capture where its last period before the xrun ended. Every xrun of the
// run (the stall's, which must be there, and any the VM adds) is heard
// there, within 1 ms, and no glitch is heard anywhere else.
func TestVMLoopbackGlitches(t *testing.T) {
	for _, stall := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond} {
		r, out := runPhaseDir(t, append(loopbackArgs, "--duration", "5s", "--test-stall", "300:"+stall.String())...)
		ph := r.Phases[0]
		snd := ph.Sound
		if snd == nil || !snd.Judged {
			t.Fatalf("stall %s: sound %+v", stall, snd)
		}
		ss := bintest.ReadSamples(t, out, ph)
		want, atStart, stalled := splices(ss, r.PeriodFrames, r.Rate, int64(stall/2))
		if len(want)+atStart != ph.Xruns || stalled < 0 {
			logBreaks(t, ss, r.PeriodFrames, r.Rate)
			t.Fatalf("stall %s: %d xruns, %d in the samples (%d at the start), the stall's at %.2f ms: want the stall's at least", stall, ph.Xruns, len(want)+atStart, atStart, stalled)
		}
		t.Logf("stall %s: xruns heard at %v ms; glitches %+v", stall, want, snd.Glitches)
		// Not yet judged, only logged: the round trip followed across the
		// restarts, beside the card delay before the first (issue 45 item 3).
		t.Logf("stall %s: round trip followed %+v over %d repetitions, per second %v; card delay before the break %+v", stall, snd.RoundTripFollowed, snd.RoundTripsFollowed, snd.RoundTripPerSecond, snd.CardDelay)
		checkHeard(t, "stall "+stall.String(), snd.Glitches, want)
		// run.json lines them up the same way: each glitch an xrun's,
		// every xrun heard, none alone.
		for _, g := range snd.Glitches {
			if g.With != rundata.GlitchXrun {
				t.Errorf("stall %s: the glitch at %.2f ms came with %q, want an xrun", stall, g.AtMS, g.With)
			}
		}
		if snd.XrunsHeard != len(want) || snd.XrunsNotHeard != 0 || snd.GlitchesAlone != 0 {
			t.Errorf("stall %s: xruns heard %d, not heard %d, glitches alone %d; want %d, 0, 0", stall, snd.XrunsHeard, snd.XrunsNotHeard, snd.GlitchesAlone, len(want))
		}
		if t.Failed() {
			logBreaks(t, ss, r.PeriodFrames, r.Rate)
			t.Fatalf("stall %s: sound %+v", stall, *snd)
		}
	}
}

// logBreaks logs, for a failure to be read from CI's log alone, every
// period of ss that broke or woke more than a period late, with the
// capture kept before it (ms), which is where a glitch of it is heard.
func logBreaks(t *testing.T, ss []rundata.Sample, periodFrames, rate int) {
	t.Helper()
	periodNS := int64(periodFrames) * 1e9 / int64(rate)
	kept := 0
	for _, s := range ss {
		if s.Xrun != 0 || s.Flags != 0 || s.Woke-s.Due > periodNS {
			t.Logf("period %d at capture %.2f ms: due %d woke +%.3f ms, xrun %.3f ms, flags %#x, avail %d",
				s.Index, float64(kept*periodFrames)*1e3/float64(rate), s.Due, float64(s.Woke-s.Due)/1e6, float64(s.Xrun)/1e6, s.Flags, s.Avail)
		}
		if s.Xrun == 0 {
			kept++
		}
	}
}

// checkHeard: every glitch within 1 ms of a seam of want (ms), and every
// seam heard within 1 ms.
func checkHeard(t *testing.T, name string, glitches []rundata.Glitch, want []float64) {
	t.Helper()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1 }
	for _, g := range glitches {
		if !slices.ContainsFunc(want, func(at float64) bool { return near(g.AtMS, at) }) {
			t.Errorf("%s: a glitch at %.2f ms for %.2f ms, at no xrun (%v ms)", name, g.AtMS, g.LengthMS, want)
		}
	}
	for _, at := range want {
		if !slices.ContainsFunc(glitches, func(g rundata.Glitch) bool { return near(g.AtMS, at) }) {
			t.Errorf("%s: the xrun spliced at %.2f ms was not heard (glitches %+v)", name, at, glitches)
		}
	}
}

// splices is where, in the capture kept, each xrun of ss left its seam
// (ms from its first frame): every period without an xrun kept one
// period of capture, and a period with one kept none (the stream
// restarted instead). An xrun before the first period kept (the VM's, at
// the start) left no seam: the capture begins after it; atStart counts
// them. stalled is the seam of the first xrun at least minNS long (the
// stall's), -1 without one.
func splices(ss []rundata.Sample, periodFrames, rate int, minNS int64) (at []float64, atStart int, stalled float64) {
	kept, stalled := 0, -1.0
	for _, s := range ss {
		if s.Xrun == 0 {
			kept++
			continue
		}
		if kept == 0 {
			atStart++
			continue
		}
		ms := float64(kept*periodFrames) * 1e3 / float64(rate)
		at = append(at, ms)
		if s.Xrun >= minNS && stalled < 0 {
			stalled = ms
		}
	}
	return at, atStart, stalled
}

// TestVMLoopbackAlsabatNoise: alsabat's own analysis of a file (--local
// --file, alsa-utils 1.2.8's way to analyse without a device; --standalone
// skips its spectrum check, which a splice's leakage fails before any count
// is made; --snr-db 40: the SNR of each cycle of the sine against a clean one,
// "Noise detected at N points") of the sine latencytest captured, clean
// and with the engine stalled 50 ms: it finds noise exactly when
// latencytest finds glitches, and at least as many points. alsabat says
// how many cycles, not where, so only the counts are compared; it
// analyses a power of two of frames from one channel, so the sine is
// handed to it alone, from 0.1 s (after the round trip's silence).
func TestVMLoopbackAlsabatNoise(t *testing.T) {
	needAlsabat(t)
	for _, stall := range []string{"", "300:50ms"} {
		args := append(loopbackArgs, "--duration", "5s")
		if stall != "" {
			args = append(args, "--test-stall", stall)
		}
		r, out := runPhaseDir(t, args...)
		points, ours := alsabatNoise(t, out, r.Phases[0].Sound)
		t.Logf("stall %q: latencytest %d glitches in alsabat's span, alsabat %d noisy points", stall, ours, points)
		if points < 0 || (points == 0) != (ours == 0) || points < ours {
			t.Errorf("stall %q: alsabat %d noisy points, latencytest %d glitches", stall, points, ours)
		}
	}
}

// alsabatNoise runs alsabat's analysis on the sine latencytest captured
// in results directory out (TestVMLoopbackAlsabatNoise): the noisy points
// alsabat counts (-1 when it said neither), and latencytest's glitches
// within the span alsabat analysed.
func alsabatNoise(t *testing.T, out string, snd *rundata.Sound) (points, ours int) {
	t.Helper()
	if snd == nil || !snd.Judged {
		t.Fatalf("sound %+v", snd)
	}
	const skip = 4800
	wav, err := os.ReadFile(filepath.Join(out, snd.CaptureFile))
	if err != nil {
		t.Fatal(err)
	}
	f, samples, err := audio.DecodeWAV(bytes.NewReader(wav))
	if err != nil {
		t.Fatal(err)
	}
	n := 1
	for 2*n <= len(samples)/f.Channels-skip {
		n *= 2
	}
	mono := make([]byte, 0, 2*n)
	for i := skip; i < skip+n; i++ {
		mono = binary.LittleEndian.AppendUint16(mono, uint16(int16(math.Round(float64(samples[i*f.Channels])*32767))))
	}
	path := filepath.Join(t.TempDir(), "sine.wav")
	hdr := audio.WAVHeader(audio.WAVFormat{Tag: 1, Channels: 1, Rate: f.Rate, Bits: 16, Align: 2}, len(mono))
	if err := os.WriteFile(path, append(hdr, mono...), 0o644); err != nil {
		t.Fatal(err)
	}
	bat, _ := alsabat(t, "--local", "--standalone", "--file="+path, "-c", "1", "-r", strconv.Itoa(f.Rate), "-f", "S16_LE",
		"-F", strconv.FormatFloat(snd.ToneHz, 'f', 3, 64), "-n", strconv.Itoa(n), "--snr-db", "40")
	t.Logf("alsabat:\n%s", bat)
	points = -1
	if strings.Contains(string(bat), "No noise detected.") {
		points = 0
	} else if m := regexp.MustCompile(`Noise detected at (\d+) points`).FindSubmatch(bat); m != nil {
		points, _ = strconv.Atoi(string(m[1]))
	}
	for _, g := range snd.Glitches {
		if at := g.AtMS * float64(f.Rate) / 1e3; at >= skip+48 && at < float64(skip+n-48) {
			ours++
		}
	}
	return points, ours
}

// TestVMLoopbackGlitchesAlone: breaks no counter reports, made on
// purpose (run --test-glitch): a period of silence written by the
// engine, 17 frames of the content skipped, 29 repeated (neither a whole
// number of the 997 Hz sine's 48.14-frame cycles). Each is found as a
// glitch with no xrun or pointer jump, where it was written: the period
// written after period P is stream frames buffer + P × period on, heard
// the card's delay later (0 on snd-aloop), within 1 ms; no other glitch
// but at an xrun's seam; and the verdict says the sound broke. A VM xrun
// before the last glitch restarts the stream and moves the sides apart,
// so such a run says nothing of where and is run again, three times at
// most.
func TestVMLoopbackGlitchesAlone(t *testing.T) {
	glitches := injectedGlitches(300, 200)
	args := append(loopbackArgs, "--duration", "5s", "--test-glitch", testGlitchFlag(glitches))
	for try := 1; ; try++ {
		r, out := runPhaseDir(t, args...)
		ph := r.Phases[0]
		snd := ph.Sound
		ss := bintest.ReadSamples(t, out, ph)
		// An xrun before the last glitch (before the card's delay was
		// read, too: the delay is read before the first break) moves
		// the sides apart.
		if i := slices.IndexFunc(ss, func(s rundata.Sample) bool { return s.Xrun != 0 }); i >= 0 && ss[i].Index <= glitches[len(glitches)-1].at {
			if try == 3 {
				t.Fatalf("an xrun at period %d, before the last glitch, in each of three runs", ss[i].Index)
			}
			t.Logf("run %d: an xrun at period %d, before the last glitch: run again", try, ss[i].Index)
			continue
		}
		if snd == nil || !snd.Judged || snd.CardDelay == nil {
			t.Fatalf("sound %+v: want it judged, with the card's delay read", snd)
		}
		t.Logf("glitches %+v; card delay %+v frames", snd.Glitches, *snd.CardDelay)
		var want []float64
		for _, g := range glitches {
			frame := float64(snd.BufferFrames) + float64(g.at*int64(r.PeriodFrames)) + float64(snd.CardDelay.Median)
			want = append(want, frame*1e3/float64(r.Rate))
		}
		for i, at := range want {
			k := slices.IndexFunc(snd.Glitches, func(g rundata.Glitch) bool { return math.Abs(g.AtMS-at) <= 1 })
			switch {
			case k < 0:
				t.Errorf("the %s written after period %d (heard at %.2f ms) was not found", glitches[i].spec, glitches[i].at, at)
			case snd.Glitches[k].With != rundata.GlitchAlone:
				t.Errorf("the %s at %.2f ms came with %q, want nothing", glitches[i].spec, at, snd.Glitches[k].With)
			}
		}
		for _, g := range snd.Glitches {
			if g.With == rundata.GlitchAlone && !slices.ContainsFunc(want, func(at float64) bool { return math.Abs(g.AtMS-at) <= 1 }) {
				t.Errorf("a glitch at %.2f ms for %.2f ms, where none was written (%v ms)", g.AtMS, g.LengthMS, want)
			}
		}
		if snd.GlitchesAlone != len(glitches) {
			t.Errorf("glitches alone %d, want %d", snd.GlitchesAlone, len(glitches))
		}
		if why := ph.NotHeld(r.Periods, 0); !strings.Contains(why, "sound broke") {
			t.Errorf("the phase's verdict %q does not say the sound broke", why)
		}
		return
	}
}

// A glitchAt is a break of the sound made on purpose (--test-glitch):
// spec written after period at.
type glitchAt struct {
	at   int64
	spec string
}

// injectedGlitches are the three breaks the loopback tests make: a period
// of silence written by the engine, 17 frames of the content skipped, 29
// repeated (neither a whole number of the 997 Hz sine's 48.14-frame
// cycles), after period first and every periods after it.
func injectedGlitches(first, every int64) []glitchAt {
	return []glitchAt{{first, "silence"}, {first + every, "skip:17"}, {first + 2*every, "repeat:29"}}
}

// testGlitchFlag is --test-glitch's value for gs.
func testGlitchFlag(gs []glitchAt) string {
	var specs []string
	for _, g := range gs {
		specs = append(specs, fmt.Sprintf("%d:%s", g.at, g.spec))
	}
	return strings.Join(specs, ",")
}

// TestVMLoopbackClean: a minute of run --loopback through snd-aloop at 4
// × 256 frames with nothing injected invents no glitch: every break
// heard in the captured sine came with an xrun or a pointer jump (the
// VM's own, which a loaded host makes), none alone, and the phase's
// verdict does not say the sound broke. The long tier's: a minute of
// VM time, where the gate's 5 s runs (TestVMLoopbackGlitches*) judge
// the same analysis.
//
//vmtest:long
func TestVMLoopbackClean(t *testing.T) {
	r, _ := runPhaseDir(t, append(slices.Clone(loopbackArgs), "--duration", "60s")...)
	ph := r.Phases[0]
	snd := ph.Sound
	if snd == nil || !snd.Judged {
		t.Fatalf("sound %+v: want the sine judged", snd)
	}
	t.Logf("60 s: %d periods, %d xruns, %d pointer jumps; glitches %+v; xruns heard %d, not heard %d; round trip %.2f ms, followed %+v over %d repetitions",
		ph.Periods, ph.Xruns, ph.PointerJumps, snd.Glitches, snd.XrunsHeard, snd.XrunsNotHeard, snd.RoundTripMS, snd.RoundTripFollowed, snd.RoundTripsFollowed)
	for _, g := range snd.Glitches {
		if g.With == rundata.GlitchAlone {
			t.Errorf("a glitch at %.2f ms for %.2f ms with no xrun or pointer jump, where nothing was injected", g.AtMS, g.LengthMS)
		}
	}
	if snd.GlitchesAlone != 0 {
		t.Errorf("glitches alone %d, want 0", snd.GlitchesAlone)
	}
	if why := ph.NotHeld(r.Periods, 0); strings.Contains(why, "sound broke") {
		t.Errorf("the phase's verdict %q says the sound broke", why)
	}
}

// TestVMLoopbackTreeStop: the whole of latencytest (the parent, its
// engine, every process under it) stopped with SIGSTOP for 50 and for
// 300 ms, as a user's Ctrl-Z or a frozen machine stops it. The break is
// one xrun longer than half the stop, heard at its seam (each glitch at
// an xrun's, within 1 ms); the seam lies where the stop began, as the
// test's own clock took it at the SIGSTOP (CLOCK_MONOTONIC, outside
// latencytest), up to the buffer after it (the card played what was
// queued); and alsabat's analysis of the same capture finds noise, at
// least as many points as latencytest's glitches in its span. A VM xrun
// before the stop splices the capture and moves the seam: such a run is
// run again, three times at most.
func TestVMLoopbackTreeStop(t *testing.T) {
	needAlsabat(t)
	for _, length := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond} {
		t.Run(length.String(), func(t *testing.T) {
			for try := 1; ; try++ {
				if treeStopOnce(t, length) || try == 3 {
					return
				}
				t.Logf("run %d: a VM xrun before the stop: run again", try)
			}
		})
	}
}

// treeStopOnce is one run of TestVMLoopbackTreeStop; false when a VM
// xrun came before the stop (nothing checked).
func treeStopOnce(t *testing.T, length time.Duration) bool {
	out := filepath.Join(t.TempDir(), "x")
	cmd := exec.Command(vmBinary, append([]string{"run", "--driver", "alsa", "--tests", "idle", "--cpu-load", "0",
		"--no-report", "--quiet", "--out", out, "--duration", "5s"}, loopbackArgs...)...)
	var so bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &so
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); engineProcess() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no engine within 20 s")
		}
	}
	time.Sleep(1500 * time.Millisecond)
	pids := tree(cmd.Process.Pid)
	st := stopPIDs(t, pids, length)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("latencytest: %v\n%s", err, so.String())
	}
	r := bintest.ReadRun(t, out)
	ph := r.Phases[0]
	snd := ph.Sound
	ss := bintest.ReadSamples(t, out, ph)
	var mine []rundata.Sample
	for _, s := range ss {
		if s.Xrun != 0 && s.Woke < st.began {
			return false
		}
		if s.Xrun > int64(length)/2 {
			mine = append(mine, s)
		}
	}
	t.Logf("stopped %d processes for %v at %d ns; %d xruns; glitches %+v\n%s", len(pids), length, st.began, ph.Xruns, snd.Glitches, so.String())
	if len(mine) != 1 {
		t.Fatalf("%d xruns longer than half the stop, want one", len(mine))
	}
	want, _, at := splices(ss, r.PeriodFrames, r.Rate, int64(length/2))
	checkHeard(t, "stop "+length.String(), snd.Glitches, want)
	periodMS := float64(r.PeriodFrames) * 1e3 / float64(r.Rate)
	began := float64(st.began-ph.StartMonoNS) / 1e6
	bufMS := float64(snd.BufferFrames) * 1e3 / float64(r.Rate)
	// The seam is the end of the last period the engine wrote before the
	// stop: the period due when the stop came may have been due up to a
	// period before it and not yet woken, so the seam lies up to two
	// periods before the stop (seen: 5.7 ms before, 300 ms stop); after
	// it, the card played on what was queued, up to the buffer, and the
	// seam is a period's end.
	if at < began-2*periodMS || at > began+bufMS+periodMS {
		t.Errorf("the stop's seam at %.2f ms of the capture, the stop began at %.2f ms: want within %.2f ms before to %.2f ms after (two periods; the buffer and a period)", at, began, 2*periodMS, bufMS+periodMS)
	}
	points, ours := alsabatNoise(t, out, snd)
	t.Logf("latencytest %d glitches in alsabat's span, alsabat %d noisy points", ours, points)
	if points <= 0 || points < ours {
		t.Errorf("alsabat %d noisy points, latencytest %d glitches: want alsabat to hear the stop, at least as often", points, ours)
	}
	return true
}
