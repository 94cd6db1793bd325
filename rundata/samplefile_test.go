package rundata

import (
	"bytes"
	"io"
	"testing"
)

func TestSampleFileRoundTrip(t *testing.T) {
	hdr := NewSampleHeader(48000, 64, 2)
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, hdr)
	p := hdr.PeriodNS
	start := int64(5_000_000_000)
	var in []Sample
	due := start
	for i := int64(0); i < 1000; i++ {
		s := Sample{Index: i, Due: due, Woke: due + 3000 + i*7, DSP: p * 8 / 10, Avail: 64}
		switch i {
		case 100: // an xrun: the grid restarts 300 ms later
			s.Xrun = 297_000_000
			s.Flags = FlagSimulated
		case 500: // ALSA jitter within tolerance: due stays reconstructed
			s.Due += 5_000
			s.Woke += 5_000
		case 700: // 2 lost periods
			s.Index += 2
		}
		if i > 700 {
			s.Index += 2
		}
		in = append(in, s)
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		due += p
		if i == 100 {
			due += 300_000_000
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// 1000 records of 8 bytes, a 64-byte header and a few 16-byte controls.
	if n := buf.Len(); n > 64+1000*8+10*16 {
		t.Errorf("file is %d bytes for 1000 periods", n)
	}
	r, err := NewSampleReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.FirstDue != start || r.Header.PeriodNS != p || r.Header.Rate != 48000 {
		t.Fatalf("header %+v", r.Header)
	}
	for i, want := range in {
		var got Sample
		if err := r.Next(&got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got.Index != want.Index || got.Latency() != want.Latency() || got.Xrun != want.Xrun || got.Flags != want.Flags || got.Avail != want.Avail {
			t.Fatalf("record %d: got %+v, want %+v", i, got, want)
		}
		if d := got.Due - want.Due; d > DueTolerance || d < -DueTolerance {
			t.Fatalf("record %d: due off by %d ns", i, d)
		}
		if d := want.DSP - got.DSP; d < 0 || d >= int64(hdr.DSPUnitNS) {
			t.Fatalf("record %d: DSP %d, want %d within one unit", i, got.DSP, want.DSP)
		}
	}
	var s Sample
	if err := r.Next(&s); err != io.EOF {
		t.Fatalf("after the last record: %v, want EOF", err)
	}
	if r.Lost != 2 {
		t.Errorf("lost %d, want 2", r.Lost)
	}
}

// A run killed mid-write leaves a truncated last record; readers keep
// everything before it.
func TestTruncatedFileKeepsWholeRecords(t *testing.T) {
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, NewSampleHeader(48000, 64, 2))
	for i := range int64(10) {
		w.Write(&Sample{Index: i, Due: 1e9 + i*1333333, Woke: 1e9 + i*1333333 + 1000})
	}
	w.Flush()
	b := buf.Bytes()[:buf.Len()-3]
	r, err := NewSampleReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var s Sample
	for r.Next(&s) == nil {
		n++
	}
	if n != 9 {
		t.Fatalf("read %d whole records, want 9", n)
	}
}

func TestNotSamples(t *testing.T) {
	if _, err := NewSampleReader(bytes.NewReader(make([]byte, 64))); err != ErrNotSamples {
		t.Fatalf("got %v", err)
	}
}

// Latencies the 32-bit record cannot hold (negative, or beyond 4.29 s) are
// stored exactly in a control record, not clamped.
func TestSampleFileExactLatency(t *testing.T) {
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, NewSampleHeader(48000, 48, 2))
	lats := []int64{-12_345, 7_000, 5_000_000_000, maxLatencyNS, -1}
	for i, l := range lats {
		due := 1e9 + int64(i)*1_000_000
		if err := w.Write(&Sample{Index: int64(i), Due: due, Woke: due + l}); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	got, err := readAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lats {
		if got[i].Latency() != l {
			t.Errorf("period %d: latency %d, want %d", i, got[i].Latency(), l)
		}
	}
}

func readAll(r io.Reader) ([]Sample, error) {
	sr, err := NewSampleReader(r)
	if err != nil {
		return nil, err
	}
	var out []Sample
	for {
		var s Sample
		if err := sr.Next(&s); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

// A duplex period carries its capture side's due and its poll wait through
// the wire form and the file; a period without them reads back without.
func TestSampleDuplexRoundTrip(t *testing.T) {
	hdr := NewSampleHeader(48000, 256, 2)
	p := hdr.PeriodNS
	in := []Sample{
		// capture first, then playback first, then both at once
		{Index: 0, Due: 1e9, Woke: 1e9 + 40_000, PlaybackDue: 1e9, CaptureDue: 1e9 - 1_500, PollNS: p - 30_000, Avail: 256},
		{Index: 1, Due: 1e9 + p, Woke: 1e9 + p + 9_000, PlaybackDue: 1e9 + p - 700, CaptureDue: 1e9 + p, PollNS: 0, Avail: 256},
		{Index: 2, Due: 1e9 + 2*p, Woke: 1e9 + 2*p + 9_000, PlaybackDue: 1e9 + 2*p, CaptureDue: 1e9 + 2*p, PollNS: 3, Avail: 256},
		{Index: 3, Due: 1e9 + 3*p, Woke: 1e9 + 3*p + 9_000, Avail: 256},
		{Index: 4, Due: 1e9 + 4*p, Woke: 1e9 + 3*p + 2_000, PollNS: 5_000_000_000, Avail: 256},
	}
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, hdr)
	for i := range in {
		var wire [WireSize]byte
		var s Sample
		PutWire(wire[:], &in[i])
		GetWire(wire[:], &s)
		if s != in[i] {
			t.Fatalf("wire: got %+v, want %+v", s, in[i])
		}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewSampleReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range in {
		var got Sample
		if err := r.Next(&got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		// The poll wait travels on the wire but is not kept in the file
		// (SampleWriter.sides): it reads back as 0.
		if got.Due != want.Due || got.Woke != want.Woke || got.PlaybackDue != want.PlaybackDue || got.CaptureDue != want.CaptureDue || got.PollNS != 0 {
			t.Fatalf("record %d: got %+v, want %+v", i, got, want)
		}
		gp, gc, gok := got.SideLatencies()
		wp, wc, wok := want.SideLatencies()
		if gp != wp || gc != wc || gok != wok || gok != (i < 3) {
			t.Fatalf("record %d: side latencies %d %d %v, want %d %d %v", i, gp, gc, gok, wp, wc, wok)
		}
	}
}

// A file written before the capture-due and poll records existed (only
// kinds 1–5) still reads, with neither set.
func TestSampleFileOldStillReads(t *testing.T) {
	old, err := ReadSamples("testdata/run/samples/01-idle.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(old) == 0 {
		t.Fatal("no periods in the old file")
	}
	for i, s := range old {
		if s.PlaybackDue != 0 || s.CaptureDue != 0 || s.PollNS != 0 {
			t.Fatalf("period %d: side dues %d %d, poll %d from a file without them", i, s.PlaybackDue, s.CaptureDue, s.PollNS)
		}
	}
}

// Poll waits no writer makes are refused.
func TestSampleFileRefusesBadPoll(t *testing.T) {
	for _, payload := range []int64{0, -5, maxPollNS + 1} {
		var buf bytes.Buffer
		w := NewSampleWriter(&buf, NewSampleHeader(48000, 64, 2))
		s := Sample{Due: 1e9, Woke: 1e9 + 1000}
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		if err := w.control(ctlPoll, payload); err != nil {
			t.Fatal(err)
		}
		s.Index, s.Due, s.Woke = 1, s.Due+w.hdr.PeriodNS, s.Woke+w.hdr.PeriodNS
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		r, err := NewSampleReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		r.Next(&s)
		if err := r.Next(&s); err == nil {
			t.Errorf("poll wait %d accepted", payload)
		}
	}
}
