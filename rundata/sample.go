// Package rundata holds the contract between a measurement and everything
// that reads it afterwards: the per-period Sample, its wire and file
// encodings, the latency histogram and the run.json document.
//
// Data flows one way: the engine produces Samples, the run writes them to a
// results directory, and the report reads that directory back. Nothing here
// knows about drivers or stressors.
package rundata

import "encoding/binary"

// Sample is one period as measured by the engine. All instants are
// CLOCK_MONOTONIC nanoseconds so that the engine process, its parent and the
// kernel's ALSA timestamps share one time base.
type Sample struct {
	Index int64 // period number within the phase, from 0
	Due   int64 // instant the period became due (timer deadline, hardware-pointer update)
	Woke  int64 // instant the audio thread ran after waiting for the period
	DSP   int64 // real duration of the simulated DSP work, ns
	Xrun  int64 // length of an xrun detected at this period, ns; 0 when none
	Avail int32 // frames available to the application at wakeup
	Flags uint32
	// Grid is the instant the period was due on the ideal period grid
	// fitted to the hardware pointer (the card's clock, drift corrected):
	// the period's Boundary. 0 when the driver has no hardware pointer
	// (timer), no fit yet, or a card too far off its rate for one.
	Grid int64
	// PlaybackDue and CaptureDue are, in duplex mode, the instants each
	// side's period became due (each side has its own hardware-pointer
	// timestamp); Due is then the later of the two, since the period is
	// there only when both sides are. A card may raise separate capture
	// and playback interrupts, and the wakeup after each is a different
	// distribution. Both 0 when the stream is not duplex.
	PlaybackDue int64
	CaptureDue  int64
	// PollNS is how long the driver waited in poll for this period (the
	// time jackd spends in poll, as jack-test measured it). 0 for drivers
	// without a poll (timer, RTC) and when the period was already there.
	PollNS int64
	// Link is the instant the period ended on the card's link clock, where
	// the card offers one (an audio timestamp: HD-Audio's wall clock,
	// SNDRV_PCM_INFO_HAS_LINK_ATIME) and the driver reads it: the link
	// time taken with the system time at a pointer update, carried to the
	// period's end at the nominal rate. A cross-check of Boundary, beside
	// it (Phase.LinkBeforeDue); it does not date the period. 0 without.
	Link int64
	// Loop is which of the engine's measuring threads took the sample,
	// by its index in run --cpus's list (0 with one thread). It travels
	// on the wire only: each thread's samples go to a file of their own.
	Loop int32
}

// Boundary is the instant the period ended on the card's own clock: the
// period boundary on the grid fitted to its pointer, where the driver has
// one (ALSA), else Due. It is what the headline latency runs from, so
// that an interrupt that came late (an interrupt thread starved on
// PREEMPT_RT, a handler held up) counts as late: Due, the pointer update's
// timestamp, is taken in that interrupt and would hide its delay. A duplex
// period keeps Due (the later side's update): its samples file stores the
// two sides against Due, and both sides' grids are not fitted.
func (s *Sample) Boundary() int64 {
	if s.Grid != 0 && !s.Duplex() {
		return s.Grid
	}
	return s.Due
}

// Latency is the wakeup latency of the period, the headline figure: woke −
// the period's end on the card's clock (Boundary).
func (s *Sample) Latency() int64 { return s.Woke - s.Boundary() }

// UpdateSplit splits the latency of a period measured from the card's
// clock in two: from the period's end to the pointer update that reported
// it (the interrupt's delay, and on a card whose pointer moves in coarse
// steps, up to a step), and from that update to the wakeup. ok is false
// when the latency has no such split (Boundary is Due).
func (s *Sample) UpdateSplit() (update, wake int64, ok bool) {
	if b := s.Boundary(); b != s.Due {
		return s.Due - b, s.Woke - s.Due, true
	}
	return 0, 0, false
}

// LinkBefore is how long before the period's Boundary (the instant that
// dated it: the grid's, else the pointer update's) the card's link clock
// says it ended: positive when the link clock has it earlier. ok is false
// without a link timestamp (Link 0) and for a duplex period.
func (s *Sample) LinkBefore() (ns int64, ok bool) {
	if s.Link == 0 || s.Duplex() {
		return 0, false
	}
	return s.Boundary() - s.Link, true
}

// WorkLate reports whether the period's xrun came from the work after the
// wakeup rather than from the wakeup: the thread woke within the period,
// but its write (the wakeup plus the DSP work) came later than the buffer
// of bufPeriods periods could wait, (bufPeriods − 1) periods after the
// period was due (docs/method.md, "Xruns").
func (s *Sample) WorkLate(periodNS int64, bufPeriods int) bool {
	lat := s.Latency()
	return s.Xrun > 0 && lat <= periodNS && lat+s.DSP > int64(bufPeriods-1)*periodNS
}

// Duplex reports whether the sample holds both sides' due instants.
func (s *Sample) Duplex() bool { return s.CaptureDue != 0 && s.PlaybackDue != 0 }

// SideLatencies returns the wakeup latency against each side's due
// instant (woke − playback due, woke − capture due); ok is false when the
// sample is not duplex.
func (s *Sample) SideLatencies() (play, capt int64, ok bool) {
	if !s.Duplex() {
		return 0, 0, false
	}
	return s.Woke - s.PlaybackDue, s.Woke - s.CaptureDue, true
}

// Sample flags.
const (
	// FlagSimulated marks an xrun found by a virtual buffer (timer driver)
	// rather than reported by a soundcard.
	FlagSimulated uint32 = 1 << iota
	// FlagCapture marks an xrun on the capture side (an overrun).
	FlagCapture
	// FlagPointerJump marks a wakeup at which the hardware pointer was a
	// buffer or more behind the clock fitted to its earlier updates (the
	// period interrupt came more than a buffer late, and a driver reading
	// its position modulo the buffer lost whole buffers). It is not an
	// xrun: the kernel reported none and the stream ran on; Xrun stays 0.
	FlagPointerJump
	// FlagRestart marks a wakeup at which the host restarted its period
	// schedule (a JACK server's xrun, its own or a client's; a buffered
	// host API's underflow): the driver's period grid starts again here,
	// and the part of a period between the xrun and this wakeup is in no
	// period. It is what a count of periods against the time they took
	// must allow for, within one period each.
	FlagRestart
)

// WireSize is the size of one Sample on the pipe from the engine process to
// its parent. The wire form is exact; the file form (see Writer) is compact.
const WireSize = 92

// PutWire encodes s into b, which must hold WireSize bytes. It does not
// allocate, so the engine can call it on its real-time path.
func PutWire(b []byte, s *Sample) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(s.Index))
	le.PutUint64(b[8:], uint64(s.Due))
	le.PutUint64(b[16:], uint64(s.Woke))
	le.PutUint64(b[24:], uint64(s.DSP))
	le.PutUint64(b[32:], uint64(s.Xrun))
	le.PutUint32(b[40:], uint32(s.Avail))
	le.PutUint32(b[44:], s.Flags)
	le.PutUint64(b[48:], uint64(s.Grid))
	le.PutUint64(b[56:], uint64(s.PlaybackDue))
	le.PutUint64(b[64:], uint64(s.CaptureDue))
	le.PutUint64(b[72:], uint64(s.PollNS))
	le.PutUint32(b[80:], uint32(s.Loop))
	le.PutUint64(b[84:], uint64(s.Link))
}

// GetWire decodes a Sample encoded by PutWire.
func GetWire(b []byte, s *Sample) {
	le := binary.LittleEndian
	s.Index = int64(le.Uint64(b[0:]))
	s.Due = int64(le.Uint64(b[8:]))
	s.Woke = int64(le.Uint64(b[16:]))
	s.DSP = int64(le.Uint64(b[24:]))
	s.Xrun = int64(le.Uint64(b[32:]))
	s.Avail = int32(le.Uint32(b[40:]))
	s.Flags = le.Uint32(b[44:])
	s.Grid = int64(le.Uint64(b[48:]))
	s.PlaybackDue = int64(le.Uint64(b[56:]))
	s.CaptureDue = int64(le.Uint64(b[64:]))
	s.PollNS = int64(le.Uint64(b[72:]))
	s.Loop = int32(le.Uint32(b[80:]))
	s.Link = int64(le.Uint64(b[84:]))
}

// StreamLost returns the stream time of samples ss, a phase's periods of
// periodNS each, in which no period became due because of an xrun (from
// the xrun's period to the first after the restart: the stop, the restart
// and the refill) or a pointer jump (the buffers the pointer lost): the
// time by which the Due steps across such a place exceed a period each.
// The periods a phase counts are its stream time less this, over periodNS.
// The number of restarts is returned too.
//
// Neither an xrun's own Due nor a pointer jump's is used. A driver may
// only know an xrun's to the pointer update that found the buffer empty
// (ALSA's steps back in whole update steps, so up to a step late), but the
// xrun's period became due a period after the last one before it. A
// jump's period is due where it was on the card's clock, before the lost
// buffers (ALSA's jumpDue), and the periods after the jump on the grid
// restarted past them: the buffers were lost on either side of it, so the
// span is measured across it, from the sample before to the one after.
func StreamLost(ss []Sample, periodNS int64) (lost int64, restarts int) {
	last := -1 // the last sample that is neither an xrun nor a pointer jump
	for i := range ss {
		if i > 0 && ss[i-1].Xrun != 0 {
			restarts++
		}
		if ss[i].Xrun != 0 || ss[i].Flags&FlagPointerJump != 0 {
			continue
		}
		if last >= 0 && i-last > 1 {
			lost += max(0, ss[i].Due-ss[last].Due-int64(i-last)*periodNS)
		}
		last = i
	}
	return lost, restarts
}
