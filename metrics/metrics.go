// Package metrics exposes a measurement as Prometheus metrics, fed from
// the same per-period samples the runner writes into the results
// directory: a histogram of the wakeup latency, counters of periods,
// xruns and periods lost, the worst wakeup of the last seconds and, with the tracer, the
// causes of spikes. It lives in the parent process (the engine never
// sees it) and has a registry of its own, no global state.
package metrics

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"latencytest/internal/mono"
	"latencytest/rundata"
)

// Buckets of the latency histogram, in seconds: 1 µs to 100 ms, 40 steps
// of a factor 10^(1/8) (33 %), so that a quantile Prometheus estimates is
// within a third of the exact one. A later wakeup is in +Inf.
var Buckets = prometheus.ExponentialBucketsRange(1e-6, 0.1, 41)

// worstWindowS is how many seconds the worst-wakeup gauge looks back.
const worstWindowS = 10

// Labels are the constant labels of every metric: what was measured,
// where, so that many machines' series can be told apart and grouped.
type Labels struct {
	Driver, Device string
	PeriodFrames   int
	Kernel, Host   string
}

// Set is the metrics of one measurement. Its methods may be called from
// any goroutine.
type Set struct {
	reg       *prometheus.Registry
	latency   prometheus.Histogram
	periods   prometheus.Counter
	xruns     prometheus.Counter
	xrunSec   prometheus.Counter
	lost      prometheus.Counter
	spikes    *prometheus.CounterVec
	causeSec  *prometheus.CounterVec
	worst     worstWindow
	now       func() int64 // CLOCK_MONOTONIC, the samples' time base
	rotations prometheus.Counter
	// With Loopback: the round trip and the glitches heard.
	labelled  prometheus.Registerer // reg, with the labels
	roundTrip prometheus.Gauge
	glitches  *prometheus.CounterVec
	// once counts the causes' time once where windows overlap.
	once rundata.Once
	gaps lostGaps
}

// New makes the metrics, labelled with l.
func New(l Labels) *Set {
	device := l.Device
	if device == "" {
		device = "default"
	}
	reg := prometheus.NewRegistry()
	r := prometheus.WrapRegistererWith(prometheus.Labels{
		"driver": l.Driver, "device": device, "period_frames": strconv.Itoa(l.PeriodFrames),
		"kernel": l.Kernel, "host": l.Host,
	}, reg)
	s := &Set{reg: reg, labelled: r, now: mono.Now}
	s.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "latencytest_wakeup_latency_seconds",
		Help:    "How late the audio thread woke up after its period was due.",
		Buckets: Buckets,
	})
	s.periods = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latencytest_periods_total", Help: "Periods measured.",
	})
	s.xruns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latencytest_xruns_total", Help: "Xruns (underruns or overruns; simulated with the timer driver).",
	})
	s.xrunSec = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latencytest_xrun_seconds_total", Help: "Time the buffer ran dry in xruns (each at least).",
	})
	s.lost = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latencytest_lost_periods_total",
		Help: "Periods measured but not handed over (the engine's ring was full): in no other figure, and one may have been late.",
	})
	s.spikes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "latencytest_spikes_total",
		Help: "Spikes the kernel's tracer explained (run --trace), by the kind and name of their largest cause.",
	}, []string{"kind", "name"})
	s.causeSec = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "latencytest_spike_cause_seconds_total",
		Help: "Time each cause held the audio thread's CPU during spikes (run --trace), by kind and name.",
	}, []string{"kind", "name"})
	s.rotations = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "latencytest_results_directories_total", Help: "Results directories completed (monitor: rotations).",
	})
	worst := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "latencytest_wakeup_latency_max_seconds",
		Help: "The worst wakeup latency in the last " + strconv.Itoa(worstWindowS) + " s (0 when nothing was measured then).",
	}, func() float64 { return float64(s.worst.max(s.now())) / 1e9 })
	r.MustRegister(s.latency, s.periods, s.xruns, s.xrunSec, s.lost, s.spikes, s.causeSec, s.rotations, worst)
	return s
}

// Sample counts one period's sample.
func (s *Set) Sample(smp *rundata.Sample) {
	lat := smp.Latency()
	s.latency.Observe(float64(lat) / 1e9)
	s.periods.Inc()
	if smp.Xrun > 0 {
		s.xruns.Inc()
		s.xrunSec.Add(float64(smp.Xrun) / 1e9)
	}
	s.worst.add(smp.Boundary(), lat)
	if n := s.gaps.add(smp); n > 0 {
		s.lost.Add(float64(n))
	}
}

// lostGaps finds the periods lost before each sample: the indexes skipped
// since the same measuring thread's last sample (run --cpus has one per
// CPU, each counting its own). An index below the next one expected is a
// new phase's, or a monitor's next rotation's: its thread counts from 0
// again. It is the rule the samples file records losses by; periods lost
// after a phase's last sample handed over are in run.json's lost only.
type lostGaps struct {
	mu   sync.Mutex
	next []int64 // by Sample.Loop: the index expected next
}

// add counts s and returns how many periods its thread lost before it.
func (g *lostGaps) add(s *rundata.Sample) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.Loop < 0 {
		return 0
	}
	for int(s.Loop) >= len(g.next) {
		g.next = append(g.next, 0)
	}
	next := &g.next[s.Loop]
	if s.Index < *next {
		*next = 0
	}
	n := s.Index - *next
	*next = s.Index + 1
	return n
}

// Spike counts a spike the tracer explained.
func (s *Set) Spike(sp rundata.Spike) {
	if len(sp.Causes) > 0 {
		c := sp.Causes[0]
		s.spikes.WithLabelValues(c.Kind, c.Name).Inc()
	} else {
		s.spikes.WithLabelValues("unexplained", "").Inc()
	}
	causes, _, _ := s.once.Add(sp)
	for _, c := range causes {
		s.causeSec.WithLabelValues(c.Kind, c.Name).Add(float64(c.NS) / 1e9)
	}
}

// GlitchKinds are what a glitch heard came with (the glitches counter's
// kind): an xrun's seam, a pointer jump's period, or nothing that any
// counter reported.
var GlitchKinds = []string{"xrun", "pointer_jump", "alone"}

// Loopback adds the series of a loopback's sound (run or monitor
// --loopback): the round trip and the glitches, fed by RoundTrip and
// Glitch. Call it once, before the metrics are first served.
func (s *Set) Loopback() {
	s.roundTrip = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "latencytest_round_trip_seconds",
		Help: "The round trip through the loopback, from the application's write of a frame to its read of it (the playback buffer and the card's delay): the median of the newest second read.",
	})
	s.glitches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "latencytest_glitches_total",
		Help: "Breaks heard in the loopback's sine, by what came with them: xrun (at an xrun's seam), pointer_jump, alone (no counter reported it).",
	}, []string{"kind"})
	for _, k := range GlitchKinds {
		s.glitches.WithLabelValues(k) // each kind's series from the start, at 0
	}
	s.labelled.MustRegister(s.roundTrip, s.glitches)
}

// RoundTrip sets the round trip (s); Loopback must have been called.
func (s *Set) RoundTrip(seconds float64) { s.roundTrip.Set(seconds) }

// Glitch counts a glitch heard of kind (GlitchKinds); Loopback must have
// been called.
func (s *Set) Glitch(kind string) { s.glitches.WithLabelValues(kind).Inc() }

// Rotated counts a results directory completed.
func (s *Set) Rotated() { s.rotations.Inc() }

// Gatherer is the registry, for tests and the text file.
func (s *Set) Gatherer() prometheus.Gatherer { return s.reg }

// Handler serves the metrics (GET /metrics).
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
}

// worstWindow keeps the worst latency of each of the last worstWindowS
// seconds of the samples' due times.
type worstWindow struct {
	mu   sync.Mutex
	sec  [worstWindowS]int64 // the second each slot holds
	lat  [worstWindowS]int64
	used [worstWindowS]bool
}

func (w *worstWindow) add(due, lat int64) {
	sec := due / 1e9
	i := sec % worstWindowS
	if i < 0 {
		i += worstWindowS
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.used[i] || w.sec[i] != sec {
		w.sec[i], w.lat[i], w.used[i] = sec, lat, true
		return
	}
	w.lat[i] = max(w.lat[i], lat)
}

// max is the worst latency of the seconds within worstWindowS of now.
func (w *worstWindow) max(now int64) int64 {
	cur := now / 1e9
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst int64
	for i := range w.sec {
		if w.used[i] && w.sec[i] > cur-worstWindowS && w.sec[i] <= cur {
			worst = max(worst, w.lat[i])
		}
	}
	return worst
}
