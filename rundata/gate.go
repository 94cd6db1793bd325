package rundata

import "fmt"

// Gate is a pass/fail rule for scripts and CI (run --fail-above,
// --max-xruns): a run fails it when a phase that ran woke later than
// MaxLatencyNS or had more than MaxXruns xruns. A negative field is off.
type Gate struct {
	MaxLatencyNS int64
	MaxXruns     int
}

// Failures says, one line per phase and rule, where r failed g; none
// when it passed.
func (g Gate) Failures(r *Run) []string {
	var out []string
	for _, ph := range r.Phases {
		if ph.Skipped != "" {
			continue
		}
		if g.MaxLatencyNS >= 0 && ph.Latency.Max*1000 > float64(g.MaxLatencyNS) {
			out = append(out, fmt.Sprintf("%s: max latency %.0f µs, above --fail-above %.0f µs", ph.Label(), ph.Latency.Max, float64(g.MaxLatencyNS)/1000))
		}
		if g.MaxXruns >= 0 && ph.Xruns > g.MaxXruns {
			out = append(out, fmt.Sprintf("%s: %d xruns, more than --max-xruns %d", ph.Label(), ph.Xruns, g.MaxXruns))
		}
	}
	return out
}
