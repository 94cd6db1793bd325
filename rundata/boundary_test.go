package rundata

import (
	"bytes"
	"testing"
)

// An interrupt starved for 5 ms (its thread preempted on PREEMPT_RT): the
// pointer update, and the thread right after it, come 5 ms after the period
// ended on the card's clock. The headline latency, the buffer verdict and
// the worst-case figures count those 5 ms; the split says the update, not
// the wakeup, took them; and a phase rebuilt from its samples file reads
// the same latency.
func TestLateInterruptIsLate(t *testing.T) {
	h := NewSampleHeader(48000, 256, 2) // 5.33 ms periods, a 10.7 ms buffer
	period := h.PeriodNS
	var live []Sample
	for i := int64(0); i < 1000; i++ {
		s := Sample{Index: i, Grid: 1e9 + i*period, Avail: 256}
		s.Due = s.Grid + 30_000 // the interrupt's usual 30 µs
		if i%100 == 50 {
			s.Due = s.Grid + 5_000_000
		}
		s.Woke = s.Due + 20_000
		live = append(live, s)
	}
	a := NewAccumulator(h, 0)
	var file bytes.Buffer
	w := NewSampleWriter(&file, h)
	for i := range live {
		a.Add(&live[i])
		if err := w.Write(&live[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var p Phase
	a.Fill(&p)
	if p.Latency.Max != 5020 || p.Latency.P50 != 50 {
		t.Errorf("latency %+v, want p50 50 µs and max 5020 µs (from the period's end)", p.Latency)
	}
	if u, w := p.UpdateDelay, p.AfterUpdate; u == nil || w == nil || u.Max != 5000 || w.Max != 20 {
		t.Errorf("update delay %+v, after update %+v: want the 5 ms in the update, 20 µs after it", u, w)
	}
	// 5.02 ms late of a 5.33 ms period: one period of margin is not enough
	// for the write (a 2-period buffer leaves one).
	if p.Safe == nil || p.Safe.MarginNS != period-5_020_000 {
		t.Errorf("verdict %+v, want a margin of %d ns", p.Safe, period-5_020_000)
	}

	back, err := readAll(&file)
	if err != nil || len(back) != len(live) {
		t.Fatalf("%d samples read back (%v)", len(back), err)
	}
	b := NewAccumulator(h, 0)
	for i := range back {
		if back[i].Latency() != live[i].Latency() {
			t.Fatalf("period %d: %d ns from the file, %d live", i, back[i].Latency(), live[i].Latency())
		}
		b.Add(&back[i])
	}
	var q Phase
	b.Fill(&q)
	if q.Latency != p.Latency || q.UpdateDelay != nil {
		t.Errorf("from the file: latency %+v (live %+v), split %+v (the file keeps none)", q.Latency, p.Latency, q.UpdateDelay)
	}
}
