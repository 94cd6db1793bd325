//go:build portaudio

package portaudio

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"runtime/cgo"
	"strings"
	"testing"
	"unsafe"

	"latencytest/audio"
	"latencytest/rundata"
)

// The Go side of each callback (from the handle PortAudio passes back to
// the grid, xrun bookkeeping and output) does not allocate, on every path:
// plain, on an xrun flag, buffered, with a tone. The handle is made large,
// as it is in a process that has opened many streams, so that boxing it
// could not hide in the runtime's table of small integers.
func TestCallbackDoesNotAllocate(t *testing.T) {
	for range 300 {
		cgo.NewHandle(0).Delete()
	}
	for _, c := range []struct {
		name  string
		jack  bool
		flags uint
		tone  float64
	}{
		{"jack", true, 0, 0},
		{"jack-xrun", true, outputUnderflow | inputOverflow, 0},
		{"buffered", false, 0, 440},
		{"buffered-xrun", false, outputUnderflow, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := audio.Config{Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2, ToneHz: c.tone}
			d := &Driver{cfg: cfg, jack: c.jack, playback: true, buffer: 128, done: make(chan struct{}, 1)}
			d.grid = newGrid(cfg.Rate, cfg.PeriodFrames, c.jack)
			d.dphase = 2 * math.Pi * c.tone / 48000
			var steps int
			d.step = func(p *rundata.Sample) bool { steps++; return true }
			h := cgo.NewHandle(target(d))
			defer h.Delete()
			out := make([]float32, 128)
			var flags uint
			allocs := testing.AllocsPerRun(1000, func() {
				dispatch(h, audio.Now(), nil, unsafe.Pointer(&out[0]), 64, 0, flags)
				flags = c.flags // every callback after the first carries the flag
			})
			if allocs != 0 {
				t.Fatalf("%.1f allocations per callback", allocs)
			}
			if steps < 1000 {
				t.Fatalf("step ran %d times", steps)
			}
		})
	}
}

// PortAudio's ALSA host API prints "ALSA lib ..." lines while it probes a
// machine without a card, and libjack complains when no server runs: hidden
// unless Verbose. Run in a child process, since the noise goes to file
// descriptor 2.
func TestProbingNoiseHidden(t *testing.T) {
	run := func(verbose bool) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProbingChild$")
		cmd.Env = append(os.Environ(), "LATENCYTEST_PROBE_CHILD=1", "JACK_NO_START_SERVER=1", "JACK_DEFAULT_SERVER=latencytest-none")
		if verbose {
			cmd.Env = append(cmd.Env, "LATENCYTEST_PROBE_VERBOSE=1")
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("child: %v\n%s", err, stderr.String())
		}
		return stderr.String()
	}
	loud := run(true)
	if !strings.Contains(loud, "ALSA lib") && !strings.Contains(loud, "jack") {
		t.Skipf("PortAudio printed nothing while probing this machine (it has a sound card and a JACK server?): %q", loud)
	}
	if quiet := run(false); quiet != "" {
		t.Fatalf("probing printed %q without --verbose", quiet)
	}
}

// TestProbingChild is the child process of TestProbingNoiseHidden.
func TestProbingChild(t *testing.T) {
	if os.Getenv("LATENCYTEST_PROBE_CHILD") == "" {
		t.Skip("child process of TestProbingNoiseHidden")
	}
	cfg := audio.Config{Device: "oss:nosuch", Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2, Verbose: os.Getenv("LATENCYTEST_PROBE_VERBOSE") != ""}
	d := New()
	d.Open(cfg) // fails: no such device; the probing is what is watched
	d.Close()
}

// BenchmarkCallback is the driver's own share of each period: what the
// callback costs before and after the engine's step (here empty).
func BenchmarkCallback(b *testing.B) {
	cfg := audio.Config{Rate: 48000, Channels: 2, PeriodFrames: 64, Periods: 2}
	d := &Driver{cfg: cfg, jack: true, playback: true, buffer: 64, done: make(chan struct{}, 1)}
	d.grid = newGrid(cfg.Rate, cfg.PeriodFrames, true)
	d.step = func(p *rundata.Sample) bool { return true }
	h := cgo.NewHandle(target(d))
	defer h.Delete()
	out := make([]float32, 128)
	b.ReportAllocs()
	for b.Loop() {
		dispatch(h, audio.Now(), nil, unsafe.Pointer(&out[0]), 64, 0, 0)
	}
}
