package report

import "testing"

// However long the series, the envelope keeps at most maxBuckets buckets,
// loses no period, keeps every extreme and every xrun, and its buckets stay
// in time order.
func TestEnvelopeKeepsExtremes(t *testing.T) {
	for _, n := range []int{1, maxBuckets, maxBuckets + 1, 10*maxBuckets + 7, 1_000_003} {
		e := newEnvelope()
		spike, xrun := n*2/3, n/3
		for i := range n {
			lat, dsp := float32(0.01), float32(0.2)
			if i == spike {
				lat, dsp = 7.5, 1.9
			}
			e.add(float64(i)*0.001, lat, dsp, i == xrun)
		}
		if len(e.buckets) > maxBuckets || len(e.buckets) == 0 {
			t.Fatalf("n=%d: %d buckets", n, len(e.buckets))
		}
		var periods int64
		var xruns int32
		maxLat, maxDSP := float32(0), float32(0)
		for i, b := range e.buckets {
			periods += b.periods
			xruns += b.xruns
			maxLat, maxDSP = max(maxLat, b.latMax), max(maxDSP, b.dspMax)
			if i > 0 && b.t <= e.buckets[i-1].t {
				t.Fatalf("n=%d: bucket %d starts at %v, before its predecessor", n, i, b.t)
			}
			if b.periods > e.per {
				t.Fatalf("n=%d: bucket %d holds %d periods, more than %d", n, i, b.periods, e.per)
			}
		}
		if periods != int64(n) || xruns != 1 {
			t.Errorf("n=%d: %d periods and %d xruns in the buckets", n, periods, xruns)
		}
		if maxLat != 7.5 || maxDSP != 1.9 {
			t.Errorf("n=%d: max latency %v, CPU loop %v: an extreme was lost", n, maxLat, maxDSP)
		}
		// The spike lands in the bucket whose time span holds it.
		for _, b := range e.buckets {
			at := float64(spike) * 0.001
			if b.latMax == 7.5 && (at < b.t || at >= b.t+float64(b.periods)*0.001) {
				t.Errorf("n=%d: the spike at %v s is in the bucket starting %v s", n, at, b.t)
			}
		}
	}
}
