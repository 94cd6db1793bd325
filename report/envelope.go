package report

// maxBuckets bounds the memory and drawing cost of a time series: an hour at
// 64 frames / 48 kHz is 2.7 M periods, a figure is well under 1000 points
// wide, and drawing each period would take gonum seconds and megabytes.
const maxBuckets = 2048

// bucket is the min/max envelope of consecutive periods; times in seconds
// from the start of the phase, durations in ms.
type bucket struct {
	t              float64
	periods        int64
	latMin, latMax float32
	dspMin, dspMax float32
	xruns          int32
}

// envelope accumulates a time series of any length into at most maxBuckets
// buckets of a power-of-two number of periods each, halving its resolution
// whenever it fills, so one pass over the samples file is enough without
// knowing its length beforehand.
type envelope struct {
	per     int64 // periods per bucket
	buckets []bucket
}

func newEnvelope() *envelope {
	return &envelope{per: 1, buckets: make([]bucket, 0, maxBuckets)}
}

// add records one period at time t (s) with latency lat and CPU loop dsp
// (ms); xrun says an xrun was detected at this period.
func (e *envelope) add(t float64, lat, dsp float32, xrun bool) {
	n := len(e.buckets)
	if n == 0 || e.buckets[n-1].periods == e.per {
		if n == maxBuckets {
			e.halve()
			n = len(e.buckets)
		}
		if n == 0 || e.buckets[n-1].periods == e.per {
			e.buckets = append(e.buckets, bucket{t: t, latMin: lat, latMax: lat, dspMin: dsp, dspMax: dsp})
			n++
		}
	}
	b := &e.buckets[n-1]
	b.periods++
	b.latMin = min(b.latMin, lat)
	b.latMax = max(b.latMax, lat)
	b.dspMin = min(b.dspMin, dsp)
	b.dspMax = max(b.dspMax, dsp)
	if xrun {
		b.xruns++
	}
}

// halve merges neighbouring buckets pairwise; it is only called when every
// bucket is full.
func (e *envelope) halve() {
	for i := 0; i < len(e.buckets)/2; i++ {
		a, b := e.buckets[2*i], e.buckets[2*i+1]
		a.periods += b.periods
		a.latMin = min(a.latMin, b.latMin)
		a.latMax = max(a.latMax, b.latMax)
		a.dspMin = min(a.dspMin, b.dspMin)
		a.dspMax = max(a.dspMax, b.dspMax)
		a.xruns += b.xruns
		e.buckets[i] = a
	}
	e.buckets = e.buckets[:len(e.buckets)/2]
	e.per *= 2
}
