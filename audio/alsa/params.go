//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Hardware parameters are negotiated the way the kernel means them to be:
// start from "anything", narrow one parameter at a time, and let the
// kernel's HW_REFINE propagate each choice through the driver's rules
// (a period size limits the periods, a format the period bytes, ...). An
// empty result means the choice is impossible given the earlier ones.

// A refiner is HW_REFINE: it narrows p to what the device can do and fails
// when nothing is left. The PCM is one; tests use a model of a device.
type refiner interface {
	refine(p *hwParams) error
}

// errEmpty is what a refiner returns when no configuration is left.
var errEmpty = errors.New("no configuration left")

func (m *mask) set(bit int)          { m.Bits[bit/32] |= 1 << (bit % 32) }
func (m *mask) has(bit int) bool     { return m.Bits[bit/32]&(1<<(bit%32)) != 0 }
func (m *mask) only(bit int)         { *m = mask{}; m.set(bit) }
func (m *mask) empty() bool          { return *m == mask{} }
func (p *hwParams) mask(k int) *mask { return &p.Masks[k-paramFirstMask] }
func (p *hwParams) interval(k int) *interval {
	return &p.Intervals[k-paramFirstInterval]
}

// lo and hi are the smallest and largest integer the interval holds.
func (i *interval) lo() uint32 {
	if i.Flags&intervalOpenMin != 0 {
		return i.Min + 1
	}
	return i.Min
}

func (i *interval) hi() uint32 {
	if i.Flags&intervalOpenMax != 0 {
		return i.Max - 1
	}
	return i.Max
}

// setRange narrows the interval to the closed range [lo, hi].
func (i *interval) setRange(lo, hi uint32) {
	i.Min, i.Max = lo, hi
	i.Flags &^= intervalOpenMin | intervalOpenMax | intervalEmpty
}

// String is "48000" for one value, "64-8192" for a range.
func (i *interval) String() string {
	lo, hi := i.lo(), i.hi()
	if lo == hi {
		return strconv.FormatUint(uint64(lo), 10)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// maskBits is how many bits of a mask mean something: the kernel's masks
// have room for 256 values, but formats (the largest set) stop below 64,
// and the bits above are left alone by some kernels' refinement.
const maskBits = 64

// anyParams is the unconstrained configuration HW_REFINE starts from, as
// alsa-lib's snd_pcm_hw_params_any builds it: every mask full (its first
// 64 bits), every interval [0, UINT_MAX], every parameter marked for
// refinement.
func anyParams() hwParams {
	var p hwParams
	for k := paramFirstMask; k <= paramLastMask; k++ {
		m := p.mask(k)
		for i := 0; i < maskBits/32; i++ {
			m.Bits[i] = ^uint32(0)
		}
	}
	for k := paramFirstInterval; k <= paramLastInterval; k++ {
		*p.interval(k) = interval{Min: 0, Max: math.MaxUint32}
	}
	p.Rmask = ^uint32(0)
	return p
}

// tryMask narrows mask k to bit if the device allows it.
func tryMask(r refiner, p *hwParams, k, bit int) bool {
	q := *p
	q.mask(k).only(bit)
	q.Rmask = ^uint32(0)
	if r.refine(&q) != nil {
		return false
	}
	*p = q
	return true
}

// tryRange narrows interval k to [lo, hi] if the device allows anything
// there.
func tryRange(r refiner, p *hwParams, k int, lo, hi uint32) bool {
	q := *p
	q.interval(k).setRange(lo, hi)
	q.Rmask = ^uint32(0)
	if r.refine(&q) != nil {
		return false
	}
	*p = q
	return true
}

// trySet pins interval k to v if the device allows it.
func trySet(r refiner, p *hwParams, k int, v uint32) bool {
	q := *p
	iv := q.interval(k)
	iv.setRange(v, v)
	iv.Flags |= intervalInteger
	q.Rmask = ^uint32(0)
	if r.refine(&q) != nil {
		return false
	}
	*p = q
	return true
}

// nearest returns the allowed values of interval k closest to want from
// below and from above (0 when there is none on that side), given the
// choices already in p.
func nearest(r refiner, p *hwParams, k int, want uint32) (below, above uint32) {
	iv := p.interval(k)
	if lo := iv.lo(); want > lo {
		q := *p
		if tryRange(r, &q, k, lo, want) {
			below = q.interval(k).hi()
		}
	}
	if hi := iv.hi(); want < hi {
		q := *p
		if tryRange(r, &q, k, want, hi) {
			above = q.interval(k).lo()
		}
	}
	return below, above
}

// closest picks the nearer of below and above (above on a tie: more
// frames is the safer mistake for a latency test).
func closest(want, below, above uint32) uint32 {
	switch {
	case below == 0:
		return above
	case above == 0:
		return below
	case want-below < above-want:
		return below
	default:
		return above
	}
}

// nearestText says what the device offers instead of want.
func nearestText(below, above uint32) string {
	switch {
	case below != 0 && above != 0:
		return fmt.Sprintf("%d or %d", below, above)
	case below != 0:
		return strconv.FormatUint(uint64(below), 10)
	case above != 0:
		return strconv.FormatUint(uint64(above), 10)
	}
	return "nothing"
}

// shape is the stream asked for or granted.
type shape struct {
	access       int // accessMmapInterleaved (0: mmap is preferred where offered) or accessRWInterleaved
	format       int // granted; asked for, tried first (formatOrder): 0 (S8, never written) asks for none
	channels     int
	rate         int
	periodFrames int
	periods      int
	// anyRate: the rate was not asked for, so a device that does not
	// take it (a USB interface at 44.1 kHz only) plays at its nearest.
	anyRate bool
}

// preferredFormats are the sample formats this package writes, in the
// order it prefers them: the first the device takes wins.
var preferredFormats = []int{formatS16LE, formatS32LE, formatS24LE, formatS24_3LE, formatFloatLE}

// formatOrder is the order in which negotiate tries the formats: first
// the one wanted, when it is one this package writes (a duplex's capture
// side is asked for the playback's format, so that both sides carry the
// same samples where the card allows it), then preferredFormats.
func formatOrder(want int) []int {
	if want == preferredFormats[0] || !slices.Contains(preferredFormats, want) {
		return preferredFormats
	}
	order := []int{want}
	for _, f := range preferredFormats {
		if f != want {
			order = append(order, f)
		}
	}
	return order
}

// negotiate narrows p to want, parameter by parameter: mmap access where
// the device offers it (and want.access asks for it), else read/write. A
// channel count or
// a number of periods the device refuses is replaced by the nearest one
// (and said in the notes); a format it refuses by the next preferred one
// (want.format first when it is one of them: formatOrder);
// a rate or period size it refuses is an error naming the nearest it
// allows, because measuring another period than asked would answer
// another question. The error is a badParam so the caller can name the
// device and the flag.
func negotiate(r refiner, p *hwParams, want shape) (notes []string, err error) {
	if err := r.refine(p); err != nil {
		return nil, fmt.Errorf("the device refuses every configuration: %w", err)
	}
	if !(want.access == accessMmapInterleaved && tryMask(r, p, paramAccess, accessMmapInterleaved)) &&
		!tryMask(r, p, paramAccess, accessRWInterleaved) {
		return nil, &badParam{msg: "offers no interleaved access"}
	}
	ok := false
	order := formatOrder(want.format)
	for i, f := range order {
		if tryMask(r, p, paramFormat, f) {
			ok = true
			if i > 0 {
				notes = append(notes, fmt.Sprintf("format %s: the device takes no %s", formatName(f), formatName(order[0])))
			}
			break
		}
	}
	if !ok {
		return nil, &badParam{msg: fmt.Sprintf("offers none of the formats S16_LE, S32_LE, S24_LE, S24_3LE, FLOAT_LE (it has %s)", strings.Join(formatNames(p.mask(paramFormat)), ", "))}
	}
	if !trySet(r, p, paramChannels, uint32(want.channels)) {
		below, above := nearest(r, p, paramChannels, uint32(want.channels))
		c := closest(uint32(want.channels), below, above)
		if c == 0 || !trySet(r, p, paramChannels, c) {
			return nil, &badParam{flag: "--channels", msg: fmt.Sprintf("does not take %d channels (it takes %s)", want.channels, p.interval(paramChannels))}
		}
		notes = append(notes, fmt.Sprintf("%d channels instead of %d: the device takes %s", c, want.channels, p.interval(paramChannels)))
	}
	if !trySet(r, p, paramRate, uint32(want.rate)) {
		below, above := nearest(r, p, paramRate, uint32(want.rate))
		c := closest(uint32(want.rate), below, above)
		if !want.anyRate || c == 0 || !trySet(r, p, paramRate, c) {
			return nil, &badParam{flag: "--rate", msg: fmt.Sprintf("does not take %d Hz; nearest it allows: %s Hz", want.rate, nearestText(below, above))}
		}
		notes = append(notes, fmt.Sprintf("%d Hz instead of %d: the device does not take %d Hz (give --rate to insist)", c, want.rate, want.rate))
	}
	if !trySet(r, p, paramPeriodSize, uint32(want.periodFrames)) {
		below, above := nearest(r, p, paramPeriodSize, uint32(want.periodFrames))
		return nil, &badParam{flag: "--period", msg: fmt.Sprintf("does not take a period of %d frames at %d Hz; nearest it allows: %s frames", want.periodFrames, want.rate, nearestText(below, above))}
	}
	if !trySet(r, p, paramPeriods, uint32(want.periods)) {
		below, above := nearest(r, p, paramPeriods, uint32(want.periods))
		n := closest(uint32(want.periods), below, above)
		if n == 0 || !trySet(r, p, paramPeriods, n) {
			return nil, &badParam{flag: "--periods", msg: fmt.Sprintf("does not take %d periods of %d frames (it takes %s)", want.periods, want.periodFrames, p.interval(paramPeriods))}
		}
		notes = append(notes, fmt.Sprintf("%d periods instead of %d: with %d-frame periods the device takes %s", n, want.periods, want.periodFrames, p.interval(paramPeriods)))
	}
	// Pin the buffer to exactly periods × period: a driver may otherwise
	// choose a larger buffer with the same period count rounding.
	buf := p.interval(paramPeriods).lo() * uint32(want.periodFrames)
	trySet(r, p, paramBufferSize, buf)
	return notes, nil
}

// grantedShape reads the configuration the kernel settled on.
func grantedShape(p *hwParams) shape {
	s := shape{
		access:       accessRWInterleaved,
		channels:     int(p.interval(paramChannels).lo()),
		rate:         int(p.interval(paramRate).lo()),
		periodFrames: int(p.interval(paramPeriodSize).lo()),
		periods:      int(p.interval(paramPeriods).lo()),
		format:       -1,
	}
	for _, f := range preferredFormats {
		if p.mask(paramFormat).has(f) {
			s.format = f
			break
		}
	}
	if !p.mask(paramAccess).has(accessRWInterleaved) && p.mask(paramAccess).has(accessMmapInterleaved) {
		s.access = accessMmapInterleaved
	}
	return s
}

// badParam is a configuration the device refuses; flag names the
// latencytest flag that asked for it ("" when no flag can fix it).
type badParam struct {
	flag string
	msg  string
}

func (e *badParam) Error() string { return e.msg }

// formatNames are the SNDRV_PCM_FORMAT_* names, by number.
var formatNameTable = map[int]string{
	0: "S8", 1: "U8", 2: "S16_LE", 3: "S16_BE", 4: "U16_LE", 5: "U16_BE",
	6: "S24_LE", 7: "S24_BE", 8: "U24_LE", 9: "U24_BE", 10: "S32_LE",
	11: "S32_BE", 12: "U32_LE", 13: "U32_BE", 14: "FLOAT_LE", 15: "FLOAT_BE",
	16: "FLOAT64_LE", 17: "FLOAT64_BE", 18: "IEC958_SUBFRAME_LE",
	19: "IEC958_SUBFRAME_BE", 20: "MU_LAW", 21: "A_LAW", 22: "IMA_ADPCM",
	23: "MPEG", 24: "GSM", 25: "S20_LE", 26: "S20_BE", 27: "U20_LE",
	28: "U20_BE", 31: "SPECIAL", 32: "S24_3LE", 33: "S24_3BE", 34: "U24_3LE",
	35: "U24_3BE", 36: "S20_3LE", 37: "S20_3BE", 38: "U20_3LE", 39: "U20_3BE",
	40: "S18_3LE", 41: "S18_3BE", 42: "U18_3LE", 43: "U18_3BE",
	44: "G723_24", 45: "G723_24_1B", 46: "G723_40", 47: "G723_40_1B",
	48: "DSD_U8", 49: "DSD_U16_LE", 50: "DSD_U32_LE", 51: "DSD_U16_BE",
	52: "DSD_U32_BE",
}

func formatName(f int) string {
	if n, ok := formatNameTable[f]; ok {
		return n
	}
	return "format" + strconv.Itoa(f)
}

// formatNames lists the formats in m, in numeric order.
func formatNames(m *mask) []string {
	var names []string
	for f := 0; f < maskBits; f++ {
		if m.has(f) {
			names = append(names, formatName(f))
		}
	}
	return names
}

// bytesPerSample of the formats this package writes.
func bytesPerSample(format int) int {
	switch format {
	case formatS16LE:
		return 2
	case formatS24_3LE:
		return 3
	}
	return 4
}
