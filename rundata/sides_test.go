package rundata

import (
	"bytes"
	"io"
	"testing"
)

// A phase recovered from its samples file gets the same duplex and poll
// figures as the run computes from the wire: the file holds them exactly.
func TestRecoverySides(t *testing.T) {
	hdr := NewSampleHeader(48000, 48, 2)
	var buf bytes.Buffer
	w := NewSampleWriter(&buf, hdr)
	live := newSideStats()
	for i := int64(0); i < 100; i++ {
		due := 1e9 + i*hdr.PeriodNS
		s := Sample{Index: i, Due: due, Woke: due + 20_000 + i*100, PlaybackDue: due, CaptureDue: due - i*1_000, PollNS: 500_000 + i}
		if i%3 == 0 {
			s.PlaybackDue, s.CaptureDue = due-7_000, due
		}
		live.Add(&s)
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	sr, err := NewSampleReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewAccumulator(sr.Header, 0)
	for {
		var s Sample
		if err := sr.Next(&s); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rec.Add(&s)
	}
	var want, got Phase
	live.Fill(&want)
	rec.Fill(&got)
	for _, c := range []struct {
		name string
		w, g *LatencyStats
	}{{"playback", want.PlaybackLatency, got.PlaybackLatency}, {"capture", want.CaptureLatency, got.CaptureLatency},
		{"apart", want.CapturePlaybackApart, got.CapturePlaybackApart}} {
		if c.w == nil || c.g == nil || *c.w != *c.g {
			t.Errorf("%s: recovered %+v, live %+v", c.name, c.g, c.w)
		}
	}
	// The poll wait is not in the file: the live phase has it, a
	// recovered one does not.
	if want.PollWait == nil || got.PollWait != nil {
		t.Errorf("poll wait: live %+v, recovered %+v; want live only", want.PollWait, got.PollWait)
	}
	if got.CaptureLatency.Max != 127.8 { // period 98: 20 + 9.8 + 98 µs
		t.Errorf("capture latency max %g µs", got.CaptureLatency.Max)
	}
}
