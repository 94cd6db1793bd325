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

// A period with an xrun restarted the stream: how far apart its sides
// became due says nothing of the card's two interrupts, and is left out
// of the apart figure (not of the sides' latencies).
func TestApartLeavesOutXruns(t *testing.T) {
	st := newSideStats()
	for i := int64(0); i < 10; i++ {
		s := Sample{Index: i, Due: i * 1e6, Woke: i*1e6 + 30e3, PlaybackDue: i * 1e6, CaptureDue: i*1e6 - 5e3}
		if i == 4 {
			s.Xrun, s.CaptureDue = 2e6, i*1e6-900e3
		}
		st.Add(&s)
	}
	var ph Phase
	st.Fill(&ph)
	if a := ph.CapturePlaybackApart; a == nil || a.Min != -5 || a.Max != -5 || ph.CaptureLatency.Max != 930 {
		t.Errorf("apart %+v, capture latency %+v; want apart -5 µs throughout, the xrun's capture latency kept", a, ph.CaptureLatency)
	}
}

// A duplex run.json names each side's card, channels and format; one
// written before the sides could differ (no capture_* keys) still reads,
// its capture side the playback's shape, and a one-sided run writes none
// of the keys.
func TestRunCaptureSide(t *testing.T) {
	dir := t.TempDir()
	in := &Run{Schema: SchemaVersion, Stream: "duplex", Format: "S16_LE", Channels: 4, Card: &Card{Index: 0, ID: "Out", Flags: []string{"MMAP"}},
		CaptureCard: &Card{Index: 1, ID: "In", Flags: []string{"BATCH"}}, CaptureChannels: 2, CaptureFormat: "S24_3LE"}
	if err := WriteRun(dir, in); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.CaptureCard == nil || got.CaptureCard.ID != "In" || got.CaptureChannels != 2 || got.CaptureFormat != "S24_3LE" || got.Card.ID != "Out" || got.Channels != 4 {
		t.Errorf("read back: card %+v, capture card %+v, capture %d ch %s", got.Card, got.CaptureCard, got.CaptureChannels, got.CaptureFormat)
	}
	old, err := parseRun([]byte(`{"schema":1,"stream":"duplex","format":"S16_LE","channels":2,"card":{"index":0,"id":"Dummy","driver":"","name":"","flags":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if old.CaptureCard != nil || old.CaptureChannels != 0 || old.CaptureFormat != "" || old.Card == nil {
		t.Errorf("an older run.json: %+v", old)
	}
	b, err := MarshalRun(&Run{Schema: SchemaVersion, Stream: "playback", Channels: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("capture_")) {
		t.Errorf("a playback run writes capture keys: %s", b)
	}
}
