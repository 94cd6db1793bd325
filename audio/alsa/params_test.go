//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"errors"
	"strings"
	"testing"
)

// fakeDevice models a driver's hardware constraints the way the kernel's
// HW_REFINE applies them: masks intersect, intervals shrink to the values
// the device can do, and the buffer ties period size and periods together.
type fakeDevice struct {
	formats      []int
	chMin, chMax uint32
	rates        []uint32 // discrete rates; nil: rateMin-rateMax
	rateMin      uint32
	rateMax      uint32
	periodMin    uint32
	periodMax    uint32
	periodStep   uint32
	periodsMin   uint32
	periodsMax   uint32
	bufferMax    uint32
	calls        int
}

func dummyLike() *fakeDevice {
	return &fakeDevice{formats: []int{1, formatS16LE}, chMin: 1, chMax: 2, rateMin: 5500, rateMax: 48000,
		periodMin: 16, periodMax: 16384, periodStep: 1, periodsMin: 1, periodsMax: 1024, bufferMax: 16384}
}

func (f *fakeDevice) refine(p *hwParams) error {
	f.calls++
	var m mask
	m.set(accessRWInterleaved)
	m.set(accessMmapInterleaved)
	if !intersect(p.mask(paramAccess), &m) {
		return errEmpty
	}
	m = mask{}
	for _, x := range f.formats {
		m.set(x)
	}
	if !intersect(p.mask(paramFormat), &m) {
		return errEmpty
	}
	if !clamp(p.interval(paramChannels), f.chMin, f.chMax) {
		return errEmpty
	}
	ri := p.interval(paramRate)
	if f.rates == nil {
		if !clamp(ri, f.rateMin, f.rateMax) {
			return errEmpty
		}
	} else {
		lo, hi, any := uint32(0), uint32(0), false
		for _, r := range f.rates {
			if r >= ri.lo() && r <= ri.hi() {
				if !any {
					lo = r
				}
				hi, any = r, true
			}
		}
		if !any {
			return errEmpty
		}
		ri.setRange(lo, hi)
	}
	pi := p.interval(paramPeriodSize)
	if !clamp(pi, f.periodMin, f.periodMax) {
		return errEmpty
	}
	lo := (pi.lo() + f.periodStep - 1) / f.periodStep * f.periodStep
	hi := pi.hi() / f.periodStep * f.periodStep
	if lo > hi {
		return errEmpty
	}
	pi.setRange(lo, hi)
	ni := p.interval(paramPeriods)
	if !clamp(ni, f.periodsMin, f.periodsMax) {
		return errEmpty
	}
	// buffer = period × periods ≤ bufferMax
	if !clamp(ni, 0, f.bufferMax/pi.lo()) || !clamp(pi, 0, f.bufferMax/ni.lo()) {
		return errEmpty
	}
	if !clamp(p.interval(paramBufferSize), pi.lo()*ni.lo(), min(f.bufferMax, pi.hi()*ni.hi())) {
		return errEmpty
	}
	return nil
}

func intersect(a, b *mask) bool {
	for i := range a.Bits {
		a.Bits[i] &= b.Bits[i]
	}
	return !a.empty()
}

func clamp(i *interval, lo, hi uint32) bool {
	l, h := max(i.lo(), lo), min(i.hi(), hi)
	if l > h {
		return false
	}
	i.setRange(l, h)
	return true
}

func TestNegotiateExact(t *testing.T) {
	f := dummyLike()
	h := anyParams()
	notes, err := negotiate(f, &h, shape{access: accessRWInterleaved, channels: 2, rate: 48000, periodFrames: 64, periods: 2})
	if err != nil {
		t.Fatal(err)
	}
	if notes != nil {
		t.Errorf("notes %q for a shape the device takes", notes)
	}
	g := grantedShape(&h)
	if g != (shape{access: accessRWInterleaved, format: formatS16LE, channels: 2, rate: 48000, periodFrames: 64, periods: 2}) {
		t.Errorf("granted %+v", g)
	}
	if b := h.interval(paramBufferSize); b.lo() != 128 || b.hi() != 128 {
		t.Errorf("buffer %s, want pinned at 128", b)
	}
	if !h.mask(paramAccess).has(accessRWInterleaved) || h.mask(paramAccess).has(accessMmapInterleaved) {
		t.Errorf("access mask %v, want RW interleaved only", h.mask(paramAccess).Bits[0])
	}
}

func TestNegotiateMmapWhenOffered(t *testing.T) {
	f := dummyLike()
	h := anyParams()
	if _, err := negotiate(f, &h, shape{access: accessMmapInterleaved, channels: 2, rate: 48000, periodFrames: 64, periods: 2}); err != nil {
		t.Fatal(err)
	}
	if g := grantedShape(&h); g.access != accessMmapInterleaved {
		t.Errorf("access %d, want mmap interleaved", g.access)
	}
}

func TestNegotiateFormatOrder(t *testing.T) {
	f := dummyLike()
	f.formats = []int{formatFloatLE, formatS32LE}
	h := anyParams()
	if _, err := negotiate(f, &h, shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2}); err != nil {
		t.Fatal(err)
	}
	if g := grantedShape(&h); g.format != formatS32LE {
		t.Errorf("format %s, want S32_LE (preferred over FLOAT_LE)", formatName(g.format))
	}

	// Many USB interfaces offer packed 24-bit alone.
	f.formats = []int{formatS24_3LE}
	h = anyParams()
	if _, err := negotiate(f, &h, shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2}); err != nil {
		t.Fatal(err)
	}
	if g := grantedShape(&h); g.format != formatS24_3LE {
		t.Errorf("format %s, want S24_3LE (all the device offers)", formatName(g.format))
	}

	f.formats = []int{1, 33}
	h = anyParams()
	_, err := negotiate(f, &h, shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2})
	var bp *badParam
	if !errors.As(err, &bp) || !strings.Contains(bp.msg, "U8, S24_3BE") {
		t.Errorf("error %v, want a badParam listing U8, S24_3BE", err)
	}
}

func TestNegotiateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dev   func(*fakeDevice)
		want  shape
		flag  string
		msg   string
		notes string
	}{
		{name: "rate between two", dev: func(f *fakeDevice) { f.rates = []uint32{44100, 48000, 96000} },
			want: shape{channels: 2, rate: 46000, periodFrames: 64, periods: 2}, flag: "--rate", msg: "does not take 46000 Hz; nearest it allows: 44100 or 48000 Hz"},
		{name: "rate asked for, not taken", dev: func(f *fakeDevice) { f.rates = []uint32{44100} },
			want: shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2}, flag: "--rate", msg: "does not take 48000 Hz; nearest it allows: 44100 Hz"},
		{name: "rate not asked for: the nearest", dev: func(f *fakeDevice) { f.rates = []uint32{44100} },
			want: shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2, anyRate: true}, notes: "44100 Hz instead of 48000"},
		{name: "rate below all", dev: func(f *fakeDevice) { f.rates = []uint32{44100, 48000} },
			want: shape{channels: 2, rate: 8000, periodFrames: 64, periods: 2}, flag: "--rate", msg: "nearest it allows: 44100 Hz"},
		{name: "period step", dev: func(f *fakeDevice) { f.periodStep = 16 },
			want: shape{channels: 2, rate: 48000, periodFrames: 60, periods: 2}, flag: "--period", msg: "nearest it allows: 48 or 64 frames"},
		{name: "period too small", dev: func(f *fakeDevice) { f.periodMin = 128 },
			want: shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2}, flag: "--period", msg: "nearest it allows: 128 frames"},
		{name: "periods replaced", dev: func(f *fakeDevice) { f.periodsMin = 3 },
			want: shape{channels: 2, rate: 48000, periodFrames: 64, periods: 2}, notes: "3 periods instead of 2"},
		{name: "channels replaced", dev: func(f *fakeDevice) { f.chMin = 2 },
			want: shape{channels: 1, rate: 48000, periodFrames: 64, periods: 2}, notes: "2 channels instead of 1"},
		{name: "buffer too big", dev: func(f *fakeDevice) { f.bufferMax = 256 },
			want: shape{channels: 2, rate: 48000, periodFrames: 64, periods: 8}, notes: "4 periods instead of 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := dummyLike()
			tc.dev(f)
			h := anyParams()
			notes, err := negotiate(f, &h, tc.want)
			if tc.flag != "" {
				var bp *badParam
				if !errors.As(err, &bp) || bp.flag != tc.flag || !strings.Contains(bp.msg, tc.msg) {
					t.Fatalf("error %v, want %s error containing %q", err, tc.flag, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) != 1 || !strings.Contains(notes[0], tc.notes) {
				t.Errorf("notes %q, want one containing %q", notes, tc.notes)
			}
			g := grantedShape(&h)
			if b := h.interval(paramBufferSize); b.lo() != b.hi() || int(b.lo()) != g.periods*g.periodFrames {
				t.Errorf("buffer %s, want %d×%d", b, g.periods, g.periodFrames)
			}
		})
	}
}

func TestIntervalBounds(t *testing.T) {
	i := interval{Min: 10, Max: 20, Flags: intervalOpenMin | intervalOpenMax}
	if i.lo() != 11 || i.hi() != 19 || i.String() != "11-19" {
		t.Errorf("open (10,20): lo %d hi %d %q", i.lo(), i.hi(), i.String())
	}
	i.setRange(48000, 48000)
	if i.String() != "48000" || i.Flags != 0 {
		t.Errorf("after setRange: %q flags %d", i.String(), i.Flags)
	}
	var m mask
	m.set(14)
	m.set(40)
	if !m.has(14) || !m.has(40) || m.has(15) || strings.Join(formatNames(&m), ",") != "FLOAT_LE,S18_3LE" {
		t.Errorf("mask %v: %v", m.Bits, formatNames(&m))
	}
}

// "Any" covers the 64 values masks can mean, like alsa-lib's: some
// kernels leave the bits above untouched, which would list formats that
// do not exist.
func TestAnyParamsMasks(t *testing.T) {
	h := anyParams()
	m := h.mask(paramFormat)
	if !m.has(0) || !m.has(63) || m.has(64) || m.has(255) {
		t.Errorf("format mask of any: %08x", m.Bits)
	}
	m.set(200)
	if names := formatNames(m); len(names) != 64 || names[len(names)-1] != "format63" {
		t.Errorf("format names: %d, last %q", len(names), names[len(names)-1])
	}
}

func TestRatesListsDiscrete(t *testing.T) {
	f := dummyLike()
	f.rates = []uint32{44100, 48000, 96000}
	h := anyParams()
	if err := f.refine(&h); err != nil {
		t.Fatal(err)
	}
	if got := rates(f, &h); got != "44100, 48000, 96000" {
		t.Errorf("discrete rates %q", got)
	}
	f = dummyLike()
	h = anyParams()
	f.refine(&h)
	if got := rates(f, &h); got != "5500-48000" {
		t.Errorf("continuous rates %q", got)
	}
}
