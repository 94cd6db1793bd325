package rundata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// The samples file holds one phase's periods in 8 bytes each, so that a
// one-hour run at 64 frames / 48 kHz (2.7 M periods) is about 22 MB and can
// be written as it is measured. docs/results-format.md is its specification.

const (
	sampleMagic      = "LTSAMP01"
	sampleHeaderSize = 64
	recordSize       = 8
	controlMarker    = 0xFFFFFFFF
	maxLatencyNS     = controlMarker - 1
)

// Control record kinds. A control record is the marker word, the kind and
// an 8-byte payload; it applies to the next period record.
const (
	ctlDue  = 1 // payload: the next period's due instant, ns
	ctlXrun = 2 // payload: the xrun length of the next period, ns
	ctlLost = 3 // payload: periods lost (engine ring full) before the next one
	ctlFlag = 4 // payload: flags of the next period
	ctlLat  = 5 // payload: the next period's latency, ns, when the record's 32 bits cannot hold it (negative, or ≥ 4.29 s)
	// The next two are control records rather than fields of the period
	// record so that the common 8-byte record (and with it every file
	// written before they existed) stays as it is: timer and RTC runs
	// pay nothing, and only a driver that polls (ALSA) or a duplex
	// stream pays 16 bytes a period for each.
	// A duplex period's due is the later side's, so one signed
	// difference (capture due − playback due) gives both sides' dues:
	// the earlier side's is the period's due minus its size.
	ctlApart = 6 // payload: the next period's capture-side due minus its playback-side due, ns (duplex only)
	ctlPoll  = 7 // payload: how long the next period waited in poll, ns (> 0)
)

// maxPollNS bounds the poll wait a reader accepts: a poll longer than this
// is a damaged file, not a wait (the engine gives up long before).
const maxPollNS = 1 << 40

// DueTolerance is how far a reconstructed due instant may drift from the
// measured one before the writer stores the exact value again. Latencies are
// stored exactly; due instants only place periods on the time axis.
const DueTolerance = 20_000 // ns

// SampleHeader describes the stream of one phase.
type SampleHeader struct {
	FirstDue  int64 // due instant of the first period, CLOCK_MONOTONIC ns
	PeriodNS  int64 // nominal period
	DSPUnitNS uint32
	Rate      uint32
	Frames    uint32 // period size in frames
	Periods   uint32 // buffer size in periods
}

// NewSampleHeader returns the header for a stream of the given shape. Its
// DSP unit lets the 16-bit DSP field span four periods, since a preempted
// CPU loop can take several periods and that is exactly what must show.
// A shape without a rate has no period.
func NewSampleHeader(rate, frames, periods int) SampleHeader {
	var periodNS int64
	if rate > 0 {
		periodNS = int64(frames) * 1e9 / int64(rate)
	}
	unit := (4*periodNS + 65534) / 65535
	if unit < 1 {
		unit = 1
	}
	return SampleHeader{PeriodNS: periodNS, DSPUnitNS: uint32(unit), Rate: uint32(rate), Frames: uint32(frames), Periods: uint32(periods)}
}

// SampleWriter encodes Samples into the compact file form.
type SampleWriter struct {
	w       *bufio.Writer
	hdr     SampleHeader
	started bool
	nextDue int64 // reconstructed due of the next record, as a reader will compute it
	nextIdx int64
	rec     [2 * recordSize]byte
	Records int64
}

// NewSampleWriter returns a writer; the header is written with the first
// sample, whose due instant it records.
func NewSampleWriter(w io.Writer, hdr SampleHeader) *SampleWriter {
	return &SampleWriter{w: bufio.NewWriterSize(w, 64<<10), hdr: hdr}
}

func (sw *SampleWriter) control(kind uint16, payload int64) error {
	le := binary.LittleEndian
	le.PutUint32(sw.rec[0:], controlMarker)
	le.PutUint16(sw.rec[4:], kind)
	le.PutUint16(sw.rec[6:], 0)
	le.PutUint64(sw.rec[8:], uint64(payload))
	_, err := sw.w.Write(sw.rec[:16])
	return err
}

// Write appends one period. Samples must come in index order; a gap in the
// indexes is recorded as lost periods.
//
// The period's due instant in the file is its Boundary (the end of the
// period on the card's clock, where the driver has one), the instant the
// headline latency runs from, so that a phase rebuilt from the file reads
// the latency the run did.
func (sw *SampleWriter) Write(s *Sample) error {
	due := s.Boundary()
	if !sw.started {
		if err := sw.begin(due, s.Index); err != nil {
			return err
		}
	}
	if s.Index > sw.nextIdx {
		if err := sw.control(ctlLost, s.Index-sw.nextIdx); err != nil {
			return err
		}
	}
	if d := due - sw.nextDue; d > DueTolerance || d < -DueTolerance {
		if err := sw.control(ctlDue, due); err != nil {
			return err
		}
		sw.nextDue = due
	}
	if s.Xrun != 0 {
		if err := sw.control(ctlXrun, s.Xrun); err != nil {
			return err
		}
	}
	if s.Flags != 0 {
		if err := sw.control(ctlFlag, int64(s.Flags)); err != nil {
			return err
		}
	}
	if err := sw.sides(s); err != nil {
		return err
	}
	lat := s.Latency()
	if lat < 0 || lat > maxLatencyNS {
		if err := sw.control(ctlLat, lat); err != nil {
			return err
		}
		lat = max(0, min(lat, maxLatencyNS))
	}
	dsp := s.DSP / int64(sw.hdr.DSPUnitNS)
	dsp = max(0, min(dsp, 0xFFFF))
	avail := max(0, min(int64(s.Avail), 0xFFFF))
	le := binary.LittleEndian
	le.PutUint32(sw.rec[0:], uint32(lat))
	le.PutUint16(sw.rec[4:], uint16(dsp))
	le.PutUint16(sw.rec[6:], uint16(avail))
	if _, err := sw.w.Write(sw.rec[:recordSize]); err != nil {
		return err
	}
	sw.Records++
	sw.nextDue += sw.hdr.PeriodNS
	sw.nextIdx = s.Index + 1
	return nil
}

// sides writes the control record of a duplex stream's two dues. A duplex
// sample's Due must be the later of its two sides' (as the ALSA driver's
// is): the file stores only their difference. The poll wait is not
// written: a record for it in every period would triple an ALSA run's file
// (16 bytes beside the period's 8), and run.json keeps its distribution
// (poll_wait_us), made from the samples as they arrive. Readers still
// take ctlPoll records (files written while they were written).
func (sw *SampleWriter) sides(s *Sample) error {
	if s.Duplex() {
		return sw.control(ctlApart, s.CaptureDue-s.PlaybackDue)
	}
	return nil
}

// Begin writes the header before the first period, with at (the instant
// the stream opened, CLOCK_MONOTONIC ns) as the file's time origin
// (FirstDue), so that a file cut before its first period still says when
// its phase began; the first period then carries its exact due instant in
// a control record. Without Begin, the header goes out with the first
// period, whose due instant is the origin.
func (sw *SampleWriter) Begin(at int64) error {
	if sw.started {
		return errors.New("samples file: Begin after the first period")
	}
	return sw.begin(at, 0)
}

func (sw *SampleWriter) begin(firstDue, firstIdx int64) error {
	sw.started = true
	sw.hdr.FirstDue = firstDue
	sw.nextDue = firstDue
	sw.nextIdx = firstIdx
	var h [sampleHeaderSize]byte
	le := binary.LittleEndian
	copy(h[0:8], sampleMagic)
	le.PutUint32(h[8:], SchemaVersion)
	le.PutUint32(h[12:], sampleHeaderSize)
	le.PutUint64(h[16:], uint64(sw.hdr.FirstDue))
	le.PutUint64(h[24:], uint64(sw.hdr.PeriodNS))
	le.PutUint32(h[32:], sw.hdr.DSPUnitNS)
	le.PutUint32(h[36:], sw.hdr.Rate)
	le.PutUint32(h[40:], sw.hdr.Frames)
	le.PutUint32(h[44:], sw.hdr.Periods)
	_, err := sw.w.Write(h[:])
	return err
}

// Flush writes buffered records to the underlying writer.
func (sw *SampleWriter) Flush() error { return sw.w.Flush() }

// SampleReader decodes a samples file.
type SampleReader struct {
	r       *bufio.Reader
	Header  SampleHeader
	nextDue int64
	nextIdx int64
	rec     [recordSize]byte
	// Lost counts periods the file records as lost so far.
	Lost int64
}

// ErrNotSamples is returned for a file that is not a samples file.
var ErrNotSamples = errors.New("not a latencytest samples file")

// NewSampleReader reads the header. An empty file (a phase that measured
// nothing), or one cut inside its header, yields a reader whose Next
// returns io.EOF at once.
func NewSampleReader(r io.Reader) (*SampleReader, error) {
	sr := &SampleReader{r: bufio.NewReaderSize(r, 64<<10)}
	var h [sampleHeaderSize]byte
	n, err := io.ReadFull(sr.r, h[:])
	if n == 0 && err == io.EOF {
		return sr, nil
	}
	// A run killed while writing the header leaves part of it: nothing
	// was measured yet, as with an empty file.
	if err == io.ErrUnexpectedEOF && string(h[:min(n, len(sampleMagic))]) == sampleMagic[:min(n, len(sampleMagic))] {
		return sr, nil
	}
	if err != nil {
		return nil, fmt.Errorf("samples header: %w", err)
	}
	if string(h[0:8]) != sampleMagic {
		return nil, ErrNotSamples
	}
	le := binary.LittleEndian
	if v := le.Uint32(h[8:]); v > SchemaVersion {
		return nil, fmt.Errorf("samples file version %d is newer than this latencytest reads (%d)", v, SchemaVersion)
	}
	if hs := le.Uint32(h[12:]); hs > sampleHeaderSize {
		if _, err := sr.r.Discard(int(hs - sampleHeaderSize)); err != nil {
			return nil, fmt.Errorf("samples header: %w", err)
		}
	}
	sr.Header = SampleHeader{
		FirstDue:  int64(le.Uint64(h[16:])),
		PeriodNS:  int64(le.Uint64(h[24:])),
		DSPUnitNS: le.Uint32(h[32:]),
		Rate:      le.Uint32(h[36:]),
		Frames:    le.Uint32(h[40:]),
		Periods:   le.Uint32(h[44:]),
	}
	sr.nextDue = sr.Header.FirstDue
	return sr, nil
}

// Next decodes the next period into s. It returns io.EOF at the end; a
// truncated last record (a run killed mid-write) also ends the stream.
func (sr *SampleReader) Next(s *Sample) error {
	*s = Sample{}
	le := binary.LittleEndian
	var lat, apart int64
	exact, duplex := false, false
	for {
		if _, err := io.ReadFull(sr.r, sr.rec[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				return io.EOF
			}
			return err
		}
		word := le.Uint32(sr.rec[0:])
		if word != controlMarker {
			s.Index = sr.nextIdx
			s.Due = sr.nextDue
			s.Woke = s.Due + int64(word)
			if exact {
				s.Woke = s.Due + lat
			}
			if duplex {
				s.PlaybackDue, s.CaptureDue = s.Due+min(0, -apart), s.Due+min(0, apart)
			}
			s.DSP = int64(le.Uint16(sr.rec[4:])) * int64(sr.Header.DSPUnitNS)
			s.Avail = int32(le.Uint16(sr.rec[6:]))
			sr.nextIdx++
			sr.nextDue += sr.Header.PeriodNS
			return nil
		}
		kind := le.Uint16(sr.rec[4:])
		if _, err := io.ReadFull(sr.r, sr.rec[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				return io.EOF
			}
			return err
		}
		payload := int64(le.Uint64(sr.rec[:]))
		if err := sr.control(s, kind, payload); err != nil {
			return err
		}
		switch kind {
		case ctlLat:
			lat, exact = payload, true
		case ctlApart:
			apart, duplex = payload, true
		}
	}
}

// control applies one control record, refusing payloads no writer makes:
// a file is read as it comes, and a damaged one must not turn into
// figures.
func (sr *SampleReader) control(s *Sample, kind uint16, payload int64) error {
	switch kind {
	case ctlDue:
		sr.nextDue = payload
	case ctlXrun:
		if payload < 0 {
			return fmt.Errorf("samples file: xrun of %d ns", payload)
		}
		s.Xrun = payload
	case ctlLost:
		if payload <= 0 || payload > 1<<40 {
			return fmt.Errorf("samples file: %d periods lost", payload)
		}
		sr.nextIdx += payload
		sr.Lost += payload
	case ctlFlag:
		if payload < 0 || payload > 0xFFFFFFFF {
			return fmt.Errorf("samples file: flags %#x", payload)
		}
		s.Flags = uint32(payload)
	case ctlLat:
		if payload >= 0 && payload <= maxLatencyNS {
			return fmt.Errorf("samples file: exact latency %d ns the record itself holds", payload)
		}
	case ctlApart:
		// The two sides of one stream are due within a buffer of each
		// other; twenty minutes apart is a damaged file.
		if payload < -1<<40 || payload > 1<<40 {
			return fmt.Errorf("samples file: capture due %d ns from playback's", payload)
		}
	case ctlPoll:
		if payload <= 0 || payload > maxPollNS {
			return fmt.Errorf("samples file: poll wait of %d ns", payload)
		}
		s.PollNS = payload
	default:
		return fmt.Errorf("samples file: unknown control record %d", kind)
	}
	return nil
}

// ReadSamples reads a whole samples file into memory: for tests and tools
// that look at individual periods of a short run. The report streams
// instead (NewSampleReader), since a long run holds millions of periods.
func ReadSamples(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sr, err := NewSampleReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Sample
	for {
		var s Sample
		err := sr.Next(&s)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, s)
	}
}
