//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"latencytest/internal/fuzzseed"
)

// FuzzDecodeWAV feeds the --file reader hostile bytes, starting from real
// WAV files (testdata/: 16-, 24-, 32-bit PCM written by Python's wave
// module, and 32-bit float with a fact chunk). A file may be refused,
// never panic or allocate beyond what it holds: the samples decoded are
// at most the data bytes present.
func FuzzDecodeWAV(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.wav")
	if len(paths) == 0 {
		f.Fatal("no seed WAV files in testdata/")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d *pcmData
		var err error
		fuzzseed.Bounded(t, len(b), 16, func() int { d, err = decodeWAV(bytes.NewReader(b)); return 0 })
		if err != nil {
			return
		}
		if d.channels < 1 || d.rate < 1 || len(d.samples) == 0 || len(d.samples)%d.channels != 0 {
			t.Fatalf("accepted %d channels at %d Hz, %d samples", d.channels, d.rate, len(d.samples))
		}
		if 2*len(d.samples) > len(b) {
			t.Fatalf("%d samples from %d bytes", len(d.samples), len(b))
		}
	})
}

// The seed files decode as what they are: 440 Hz at the amplitude written.
func TestSeedWAVs(t *testing.T) {
	for name, want := range map[string]struct {
		rate, channels, frames int
		peak                   float32
	}{
		"sine-16bit-2ch.wav": {44100, 2, 200, 0.5},
		"sine-24bit-1ch.wav": {48000, 1, 200, 0.5},
		"sine-32bit-2ch.wav": {22050, 2, 200, 0.5},
		"sine-float-2ch.wav": {48000, 2, 150, 0.25},
	} {
		d, err := readWAV(filepath.Join("testdata", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var peak float32
		for _, v := range d.samples {
			peak = max(peak, v)
		}
		if d.rate != want.rate || d.channels != want.channels || d.frames() != want.frames || peak < want.peak*0.99 || peak > want.peak*1.0001 {
			t.Errorf("%s: %d Hz, %d channels, %d frames, peak %g; want %+v", name, d.rate, d.channels, d.frames(), peak, want)
		}
	}
}

// A header claiming 4 GB of data with 8 bytes present costs what is
// there, and a FIFO as --file is refused at once instead of read forever.
func TestWAVHostile(t *testing.T) {
	b := wav(1, 2, 48000, 16, []int64{16384, -16384, 8192, -8192})
	// the data chunk's size field: the last 4 bytes before the 8 data bytes
	copy(b[len(b)-12:], []byte{0xF0, 0xFF, 0xFF, 0xFF})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := decodeWAV(bytes.NewReader(b))
	runtime.ReadMemStats(&after)
	if err != nil || d.frames() != 2 {
		t.Fatalf("truncated file: %v, want its 2 frames", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("decoding 8 bytes of audio allocated %d bytes", n)
	}
	fifo := filepath.Join(t.TempDir(), "f.wav")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readWAV(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("FIFO --file: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readWAV blocked on a FIFO")
	}
}
