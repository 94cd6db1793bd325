package stress

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Meter counts a load's work. A load sets its unit, calls Ready once it is
// running, and then Adds work from any goroutine; the child's main loop
// turns the count into throughput lines and reports.
type Meter struct {
	count atomic.Int64

	mu     sync.Mutex
	unit   string  // what one unit of work is called: "frames", "MB", ...
	per    float64 // counts per unit (1e6 when counting bytes as MB)
	ready  chan struct{}
	start  time.Time
	values map[string]any       // fixed figures: the size used, the display...
	series map[string][]float64 // per-round figures (hackbench round times)
}

// maxSeries bounds a series so a long phase cannot grow run.json without
// limit.
const maxSeries = 10000

func newMeter() *Meter {
	return &Meter{unit: "ops", per: 1, ready: make(chan struct{}), values: map[string]any{}, series: map[string][]float64{}}
}

// Unit names the work counted by Add: one unit is per counts (e.g. "MB",
// 1e6 for a load that adds bytes).
func (m *Meter) Unit(name string, per float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unit, m.per = name, per
}

// Set records a fixed figure for the final stats.
func (m *Meter) Set(key string, v any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values[key] = v
}

// Append adds v to the series key (e.g. one hackbench round's time).
func (m *Meter) Append(key string, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.series[key]) < maxSeries {
		m.series[key] = append(m.series[key], v)
	}
}

// Ready says the load is running; throughput counts from here.
func (m *Meter) Ready() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.ready:
	default:
		m.count.Store(0)
		m.start = time.Now()
		close(m.ready)
	}
}

// Add counts n counts of work (bytes, frames, files...).
func (m *Meter) Add(n int64) { m.count.Add(n) }

func (m *Meter) isReady() bool {
	select {
	case <-m.ready:
		return true
	default:
		return false
	}
}

func (m *Meter) unitName() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unit
}

// key is the unit as a JSON key: "MB" -> "mb".
func (m *Meter) key() string { return strings.ToLower(strings.ReplaceAll(m.unit, "/", "_")) }

// snapshot is the count in units and the seconds since Ready.
func (m *Meter) snapshot(now time.Time) (units, seconds float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return float64(m.count.Load()) / m.per, now.Sub(m.start).Seconds()
}

// Stats are the figures for run.json's stressor_stats: the total, the
// mean rate since Ready, the seconds measured, fixed figures and series.
func (m *Meter) Stats(now time.Time) map[string]any {
	units, secs := m.snapshot(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	st := map[string]any{"unit": m.unit, "seconds": round3(secs)}
	st[m.key()] = round3(units)
	if secs > 0 {
		st[m.key()+"_per_s"] = round3(units / secs)
	}
	maps.Copy(st, m.values)
	for k, v := range m.series {
		st[k] = append([]float64(nil), v...)
	}
	return st
}

func round3(x float64) float64 {
	if x < 0 {
		return -round3(-x)
	}
	return float64(int64(x*1000+0.5)) / 1000
}
