package rundata

import "testing"

// The link instant travels on the wire; the phase's figures are how far
// before Boundary (the grid, else Due) it lies, skipping duplex periods
// and periods without one; past linkKeep periods min and max stay exact
// and the median is of every 2^k-th.
func TestLinkBeforeDue(t *testing.T) {
	in := Sample{Index: 3, Due: 5e9, Grid: 5e9 - 4000, Woke: 5e9 + 9000, Link: 5e9 - 4000 - 1234, Loop: 2}
	var wire [WireSize]byte
	var out Sample
	PutWire(wire[:], &in)
	GetWire(wire[:], &out)
	if out != in {
		t.Fatalf("wire: got %+v, want %+v", out, in)
	}
	if d, ok := out.LinkBefore(); !ok || d != 1234 {
		t.Errorf("LinkBefore = %d, %v; want 1234 before the grid", d, ok)
	}
	noGrid := Sample{Due: 5e9, Link: 5e9 + 700}
	if d, ok := noGrid.LinkBefore(); !ok || d != -700 {
		t.Errorf("without a grid: LinkBefore = %d, %v; want -700 (after the update)", d, ok)
	}
	for _, s := range []Sample{{Due: 5e9}, {Due: 5e9, PlaybackDue: 5e9, CaptureDue: 5e9 - 10, Link: 5e9 - 3}} {
		if _, ok := s.LinkBefore(); ok {
			t.Errorf("%+v: a link difference without a link instant, or in duplex", s)
		}
	}

	a := NewAccumulator(NewSampleHeader(48000, 256, 2), 0)
	n := int64(3*linkKeep + 17)
	for i := range n {
		d := i%1001 - 500 // -500 … 500, median 0
		s := Sample{Index: i, Due: 1e9 + i*5_333_333, Woke: 1e9 + i*5_333_333 + 10_000}
		s.Link = s.Due - d
		a.Add(&s)
	}
	var ph Phase
	a.Fill(&ph)
	l := ph.LinkBeforeDue
	if l == nil || l.Periods != n || l.MinNS != -500 || l.MaxNS != 500 || l.MedianNS < -10 || l.MedianNS > 10 {
		t.Errorf("link_before_due_ns %+v; want %d periods, -500 … 500, median about 0", l, n)
	}
	if len(a.link.kept) > linkKeep {
		t.Errorf("kept %d differences, more than %d", len(a.link.kept), linkKeep)
	}
}
