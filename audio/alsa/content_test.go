//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wav builds a WAV file: tag 1 (PCM) or 3 (float), or 0xFFFE for an
// extensible header around PCM.
func wav(tag, channels, rate, bits int, samples []int64) []byte {
	le := binary.LittleEndian
	bps := bits / 8
	var data bytes.Buffer
	for _, s := range samples {
		var b [4]byte
		le.PutUint32(b[:], uint32(s))
		data.Write(b[:bps])
	}
	var f bytes.Buffer
	fmtLen := 16
	if tag == 0xFFFE {
		fmtLen = 40
	}
	f.WriteString("RIFF")
	binary.Write(&f, le, uint32(4+8+fmtLen+8+8+data.Len()))
	f.WriteString("WAVE")
	f.WriteString("LIST") // a chunk to skip
	binary.Write(&f, le, uint32(0))
	f.WriteString("fmt ")
	binary.Write(&f, le, uint32(fmtLen))
	binary.Write(&f, le, uint16(tag))
	binary.Write(&f, le, uint16(channels))
	binary.Write(&f, le, uint32(rate))
	binary.Write(&f, le, uint32(rate*channels*bps))
	binary.Write(&f, le, uint16(channels*bps))
	binary.Write(&f, le, uint16(bits))
	if tag == 0xFFFE {
		binary.Write(&f, le, uint16(22))
		binary.Write(&f, le, uint16(bits))
		binary.Write(&f, le, uint32(3))
		binary.Write(&f, le, uint16(1)) // KSDATAFORMAT_SUBTYPE_PCM starts with 1
		f.Write(make([]byte, 14))
	}
	f.WriteString("data")
	binary.Write(&f, le, uint32(data.Len()))
	f.Write(data.Bytes())
	return f.Bytes()
}

func TestDecodeWAV(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tag     int
		bits    int
		samples []int64
		want    []float32
	}{
		{"16-bit", 1, 16, []int64{0, 16384, -32768, 32767}, []float32{0, 0.5, -1, 32767.0 / 32768}},
		{"24-bit", 1, 24, []int64{0, 1 << 22, -(1 << 23), -1}, []float32{0, 0.5, -1, -1.0 / (1 << 23)}},
		{"32-bit", 1, 32, []int64{0, 1 << 30, -(1 << 31), 1 << 29}, []float32{0, 0.5, -1, 0.25}},
		{"extensible 24-bit", 0xFFFE, 24, []int64{1 << 21, -(1 << 22)}, []float32{0.25, -0.5}},
		{"float", 3, 32, []int64{int64(math.Float32bits(0.75)), int64(math.Float32bits(-0.125))}, []float32{0.75, -0.125}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decodeWAV(bytes.NewReader(wav(tc.tag, 2, 44100, tc.bits, tc.samples)))
			if err != nil {
				t.Fatal(err)
			}
			if d.rate != 44100 || d.channels != 2 || len(d.samples) != len(tc.want) {
				t.Fatalf("got %d Hz %d ch %d samples", d.rate, d.channels, len(d.samples))
			}
			for i, w := range tc.want {
				if math.Abs(float64(d.samples[i]-w)) > 1e-7 {
					t.Errorf("sample %d = %v, want %v", i, d.samples[i], w)
				}
			}
		})
	}
}

func TestDecodeWAVRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		err  string
	}{
		{"8-bit", wav(1, 1, 8000, 8, []int64{1, 2}), "8-bit samples"},
		{"not riff", []byte("ID3\x04 an mp3"), "not a WAV file"},
		{"no data", wav(1, 1, 8000, 16, nil)[:44], "no data chunk"},
		{"empty data", wav(1, 1, 8000, 16, nil), "no samples"},
	} {
		if _, err := decodeWAV(bytes.NewReader(tc.data)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
	p := filepath.Join(t.TempDir(), "x.wav")
	os.WriteFile(p, wav(1, 1, 8000, 8, []int64{1}), 0o644)
	if _, err := readWAV(p); err == nil || !strings.HasPrefix(err.Error(), "--file "+p+": ") {
		t.Errorf("readWAV error %v does not name --file", err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	d := &pcmData{rate: 8000, channels: 1, samples: []float32{0, 0.5, -0.5, 1, -1, 2}}
	for _, f := range preferredFormats {
		b := encode(d, f)
		if len(b) != len(d.samples)*bytesPerSample(f) {
			t.Fatalf("%s: %d bytes", formatName(f), len(b))
		}
		for i, v := range d.samples {
			v = min(v, 1) // clipped
			if got := decodeSample(b, f, i); math.Abs(float64(got-v)) > 1.0/32767 {
				t.Errorf("%s sample %d: %v, want %v", formatName(f), i, got, v)
			}
		}
	}
}

func TestToneLoops(t *testing.T) {
	d, hz := tone(440.4, 48000, 2)
	if hz != 440 {
		t.Errorf("tone rounded to %v, want 440", hz)
	}
	if d.frames() != 48000 {
		t.Fatalf("%d frames", d.frames())
	}
	// The sample after the last is the first: continuing the sine past
	// the loop's end must give the loop's start.
	next := 0.5 * math.Sin(2*math.Pi*440*48000/48000)
	if math.Abs(next-float64(d.samples[0])) > 1e-6 {
		t.Errorf("loop seam: %v vs %v", next, d.samples[0])
	}
	var peak float32
	for _, v := range d.samples {
		peak = max(peak, v)
	}
	if peak < 0.499 || peak > 0.5 {
		t.Errorf("peak %v, want 0.5", peak)
	}
}

func TestFillLoops(t *testing.T) {
	d := &Driver{content: []byte{1, 2, 3, 4, 5}}
	buf := make([]byte, 4)
	var got []byte
	for range 3 {
		d.fill(buf)
		got = append(got, buf...)
	}
	if want := []byte{1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2}; !bytes.Equal(got, want) {
		t.Errorf("fill: %v, want %v", got, want)
	}
	silent := &Driver{}
	buf = make([]byte, 4)
	silent.fill(buf)
	if !bytes.Equal(buf, make([]byte, 4)) {
		t.Errorf("silence filled %v", buf)
	}
}

func TestGridFitFollowsDrift(t *testing.T) {
	var g gridFit
	nominal := 1e9 / 48000.0
	g.reset(nominal, 1e9)
	if g.at(100) != 0 || g.slope() != nominal {
		t.Fatalf("empty fit: at %d slope %v", g.at(100), g.slope())
	}
	// A card running 100 ppm fast against the system clock, pointer
	// updates every 64 frames up to 40 µs late (never early), an hour in:
	// the grid is the card's clock, the updates' lower envelope.
	real := nominal / (1 + 100e-6)
	t0 := int64(3600e9)
	base := uint64(1 << 40)
	jitter := []int64{0, 40000, 20000, 5000, 35000, 12000, 28000}
	for k := 0; k < 200000; k++ {
		x := base + uint64(k)*64
		g.add(x, t0+int64(float64(k*64)*real)+jitter[k%len(jitter)])
	}
	if ppm := (g.slope()/real - 1) * 1e6; math.Abs(ppm) > 0.01 {
		t.Errorf("slope off by %.4f ppm", ppm)
	}
	k := 250000
	want := t0 + int64(float64(k*64)*real)
	if got := g.at(base + uint64(k)*64); math.Abs(float64(got-want)) > 1000 {
		t.Errorf("grid at period %d: off by %d ns", k, got-want)
	}
}

// The grid is the card's clock, not the updates' mean: a period whose
// update came sooner than the others reads no earlier than the clock, and
// lateness that lasts (an interrupt thread starved for a while) stays
// lateness instead of moving the grid. A line through the middle of the
// updates sat ~250 µs late here, and moved 270 µs up with the lateness.
func TestGridIsTheUpdatesLowerEnvelope(t *testing.T) {
	var g gridFit
	nominal := 1e9 / 48000.0
	period := 1024 * nominal
	g.reset(nominal, period/2)
	clock := func(k int) int64 { return int64(float64(k*1024) * nominal) }
	delays := []int64{0, 500e3, 250e3, 400e3, 100e3, 350e3} // the interrupt's delay, 0 to 0.5 ms
	k := 0
	for ; k < 2000; k++ {
		g.add(uint64(k*1024), clock(k)+delays[k%len(delays)])
	}
	if off := g.at(uint64(k*1024)) - clock(k); off < -1000 || off > 1000 {
		t.Errorf("grid %d ns off the card's clock, want within 1 µs (the updates' earliest)", off)
	}
	for end := k + 200; k < end; k++ { // 3 ms late each, below a jump (half a period)
		g.add(uint64(k*1024), clock(k)+3e6+delays[k%len(delays)])
	}
	if off := g.at(uint64(k*1024)) - clock(k); off < -1000 || off > 1000 {
		t.Errorf("after 200 updates 3 ms late, the grid is %d ns off the card's clock, want within 1 µs", off)
	}
}

// Early on, and against wild jitter, the grid keeps to the nominal rate.
func TestGridFitGuards(t *testing.T) {
	var g gridFit
	nominal := 1e9 / 48000.0
	g.reset(nominal, 1e9)
	g.add(0, 0)
	g.add(64, 5e6) // an update 3.7 ms late: slope 78000 ns/frame
	if g.slope() != nominal {
		t.Errorf("slope %v from 64 frames of points, want the nominal %v", g.slope(), nominal)
	}
	for k := 2; k < 2000; k++ {
		y := int64(float64(k*64) * nominal * 1.08) // an 8 % clock: beyond any card the grid holds
		g.add(uint64(k*64), y)
	}
	if g.slope() != nominal*(1+maxDrift) {
		t.Errorf("slope %v, want clamped to %v", g.slope(), nominal*(1+maxDrift))
	}
	// An emulated card 2 % slow is followed: the grid is the card's clock.
	g.reset(nominal, 1e9)
	for k := range 2000 {
		g.add(uint64(k*64), int64(float64(k*64)*nominal*1.02))
	}
	if want := nominal * 1.02; math.Abs(g.slope()/want-1) > 1e-6 {
		t.Errorf("slope %v for a 2 %% slow card, want %v", g.slope(), want)
	}
}

func TestStepStatsMedian(t *testing.T) {
	var st stepStats
	if st.typical() != 0 {
		t.Fatal("typical of nothing")
	}
	for _, v := range []uint64{384, 768, 384} {
		st.add(v)
	}
	if st.typical() != 384 {
		t.Errorf("median of 384 768 384 = %d", st.typical())
	}
	// The ring keeps the last 15: old values age out.
	for range 15 {
		st.add(256)
	}
	if st.typical() != 256 {
		t.Errorf("median after 15 × 256 = %d", st.typical())
	}
	if n := testing.AllocsPerRun(100, func() { st.add(300); _ = st.typical() }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// When the pointer loses a buffer (a late timer on snd-dummy), the grid
// follows the new line instead of averaging the two.
func TestGridFitRestartsAfterAJump(t *testing.T) {
	var g gridFit
	nominal := 1e9 / 48000.0
	period := 64 * nominal
	g.reset(nominal, period/2)
	jitter := []int64{0, 3000, -3000, 1000}
	y := func(k int, slip int64) int64 { return int64(float64(k*64)*nominal) + slip + jitter[k%len(jitter)] }
	for k := 0; k < 1000; k++ {
		g.add(uint64(k*64), y(k, 0))
	}
	// From now on the pointer is one 128-frame buffer behind time.
	slip := int64(128 * nominal)
	for k := 1000; k < 1010; k++ {
		g.add(uint64(k*64), y(k, slip))
	}
	if off := g.at(1010*64) - y(1010, slip); off > 20000 || off < -20000 {
		t.Errorf("grid %d ns off the new line after the jump", off)
	}
	// Jitter of a few µs is not a jump: the fit keeps its history.
	if g.n < 5 || g.n > 10 {
		t.Errorf("fit has %v points after restarting at the jump", g.n)
	}
}

// An update late by less than three quarters of the buffer is a late
// interrupt, not a jump: the grid keeps its line, so the periods after it
// are dated on the card's clock, not from the late update. AC97 under
// qemu at 2×256 (rw) had an update 3.9 ms late, more than half a period:
// the grid restarted from it, and the next period read as woken 3.7 ms
// before it ended. A buffer late is still a jump (the pointer lost it).
func TestGridLateUpdateIsNoJump(t *testing.T) {
	nominal := 1e9 / 48000.0
	period := 256 * nominal
	for _, tc := range []struct {
		late    float64
		restart bool
	}{{3.9e6, false}, {2 * period, true}} {
		var g gridFit
		g.reset(nominal, period/2)
		g.lateJump = 2 * period * 3 / 4
		clock := func(k int) int64 { return int64(float64(k*256) * nominal) }
		jitter := []int64{0, 200e3, 100e3, 300e3}
		k := 0
		for ; k < 200; k++ {
			g.add(uint64(k*256), clock(k)+jitter[k%len(jitter)])
		}
		g.add(uint64(k*256), clock(k)+int64(tc.late))
		k++
		restarted := g.n < 10
		if restarted != tc.restart {
			t.Errorf("an update %.1f ms late: restarted %v, want %v", tc.late/1e6, restarted, tc.restart)
		}
		if tc.restart {
			continue
		}
		for end := k + 3; k < end; k++ {
			g.add(uint64(k*256), clock(k)+jitter[k%len(jitter)])
			if off := g.at(uint64(k*256)) - clock(k); off < -1000 || off > 1000 {
				t.Errorf("period %d after the late update: grid %d ns off the card's clock, want within 1 µs", k, off)
			}
		}
	}
}
