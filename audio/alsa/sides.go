//go:build linux && (amd64 || arm64 || arm || 386)

package alsa

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"latencytest/internal/badinput"
)

// A duplex stream's two sides are two PCMs, often of one card but not
// always alike: a USB interface with 2 inputs and 4 outputs, a capture
// endpoint at 44.1 kHz only, a codec whose ADC offers S24_3LE alone. Each
// side gets its own channels, sample format and number of periods (the
// playback's where the capture takes them, so that both carry the same
// samples where they can). The rate and the period size are one for both:
// the loop moves one period of each side per wakeup, and periods of two
// lengths in time could not be lined up.

// node is one side's device, opened and not yet configured.
type node struct {
	r     refiner
	label string // "hw:0,0 (PCH playback)", for the errors
	dir   string // "playback" or "capture"
}

// settled is one side's negotiated hw_params and what they grant.
type settled struct {
	h     hwParams
	got   shape
	notes []string
}

// settleSides negotiates the stream's sides (play or capt nil when the
// stream has one direction), playback first. Each is installed (install:
// HW_PARAMS, nil in tests) before the next is negotiated, since a driver
// may narrow one direction by what the other was set to (snd-usb-audio's
// shared endpoints, snd-aloop's cable). Where the rate was not asked for,
// a duplex stream first finds one both sides take (commonRate).
func settleSides(play, capt *node, want shape, install func(*node, *settled) error) (ps, cs *settled, err error) {
	var rateNote string
	if play != nil && capt != nil && want.anyRate {
		if want.rate, rateNote, err = commonRate(play, capt, want); err != nil {
			return nil, nil, err
		}
	}
	first := play
	if first == nil {
		first = capt
	}
	s, err := settleOne(first, want, install)
	if err != nil {
		return nil, nil, err
	}
	if rateNote != "" {
		s.notes = append(s.notes, rateNote)
	}
	if first == capt {
		return nil, s, nil
	}
	if capt == nil {
		return s, nil, nil
	}
	c, err := settleCapture(capt, s.got, install)
	return s, c, err
}

// settleOne negotiates want on n and installs it; a refusal is one line
// naming the device and the flag.
func settleOne(n *node, want shape, install func(*node, *settled) error) (*settled, error) {
	h := anyParams()
	notes, err := negotiate(n.r, &h, want)
	if err != nil {
		return nil, sideError(n, err, "")
	}
	return installed(n, h, notes, install)
}

// installed is side n settled on h, installed where install is given.
func installed(n *node, h hwParams, notes []string, install func(*node, *settled) error) (*settled, error) {
	s := &settled{h: h, got: grantedShape(&h), notes: notes}
	if install != nil {
		if err := install(n, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// settleCapture negotiates a duplex's capture side against the playback's
// granted shape: its channels, format and periods where the capture takes
// them, else its own nearest; the playback's rate and period size or
// nothing. Its notes name the side, since the terminal's other notes are
// the playback's.
func settleCapture(n *node, play shape, install func(*node, *settled) error) (*settled, error) {
	want := play
	want.anyRate = false
	h := anyParams()
	notes, err := negotiate(n.r, &h, want)
	if err != nil {
		return nil, sideError(n, err, "a duplex stream runs both sides at one rate and period, the playback's")
	}
	for i, note := range notes {
		notes[i] = fmt.Sprintf("capture side %s: %s", n.label, note)
	}
	return installed(n, h, notes, install)
}

// commonRate is the rate a duplex stream whose rate was not asked for runs
// at: want.rate where both sides take it, else the nearest to it that both
// take (said in the note), else an error naming what each side takes.
func commonRate(play, capt *node, want shape) (rate int, note string, err error) {
	pr, perr := rateSet(play.r, want)
	cr, cerr := rateSet(capt.r, want)
	if perr != nil || cerr != nil {
		return want.rate, "", nil // settleOne says what is wrong with the side
	}
	best := 0
	for _, r := range pr {
		if !slices.Contains(cr, r) {
			continue
		}
		if best == 0 || absDiff(r, want.rate) < absDiff(best, want.rate) ||
			absDiff(r, want.rate) == absDiff(best, want.rate) && r > best {
			best = r
		}
	}
	switch {
	case best == 0:
		return 0, "", badinput.Errorf("--rate: %s and %s share no rate (playback takes %s Hz, capture %s Hz); a duplex stream runs both sides at one rate (periods of two lengths could not be lined up); give another --capture-device",
			play.label, capt.label, rateList(pr), rateList(cr))
	case best != want.rate:
		return best, fmt.Sprintf("%d Hz instead of %d: the rate both sides take (playback %s Hz, capture %s Hz); give --rate to insist", best, want.rate, rateList(pr), rateList(cr)), nil
	}
	return best, "", nil
}

// rateSet lists the rates device r takes with want's access (the
// standard rates in its range, and want.rate), from "anything".
func rateSet(r refiner, want shape) ([]int, error) {
	h := anyParams()
	if err := r.refine(&h); err != nil {
		return nil, err
	}
	iv := h.interval(paramRate)
	var out []int
	cands := append([]uint32{uint32(want.rate)}, standardRates...)
	for _, rate := range cands {
		if rate < iv.lo() || rate > iv.hi() || slices.Contains(out, int(rate)) {
			continue
		}
		q := h
		if trySet(r, &q, paramRate, rate) {
			out = append(out, int(rate))
		}
	}
	slices.Sort(out)
	return out, nil
}

// sideError is a negotiation's failure on side n as the user reads it:
// a refusal one line naming the flag, the device and why (and why, for
// a duplex's capture side, it must follow the playback).
func sideError(n *node, err error, why string) error {
	var bp *badParam
	if !errors.As(err, &bp) {
		return fmt.Errorf("%s: %w", n.label, err)
	}
	prefix := ""
	if bp.flag != "" {
		prefix = bp.flag + ": "
	}
	if why != "" && (bp.flag == "--rate" || bp.flag == "--period") {
		return badinput.Errorf("%s%s %s; %s", prefix, n.label, bp.msg, why)
	}
	return badinput.Errorf("%s%s %s", prefix, n.label, bp.msg)
}

// rateList is "44100" or "44100, 48000".
func rateList(rs []int) string {
	if len(rs) == 0 {
		return "none of the standard rates"
	}
	var b []string
	for _, r := range rs {
		b = append(b, strconv.Itoa(r))
	}
	return strings.Join(b, ", ")
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}
