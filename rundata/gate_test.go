package rundata

import (
	"slices"
	"testing"
)

func TestGate(t *testing.T) {
	r := &Run{Phases: []Phase{
		{Name: "idle", Latency: LatencyStats{Max: 400}},
		{Name: "hackbench", Latency: LatencyStats{Max: 1500}, Xruns: 3},
		{Name: "x11", Skipped: "no display"},
	}}
	for _, tc := range []struct {
		g    Gate
		want []string
	}{
		{Gate{-1, -1}, nil},
		{Gate{1e6, -1}, []string{"hackbench: max latency 1500 µs, above --fail-above 1000 µs"}},
		{Gate{2e6, 2}, []string{"hackbench: 3 xruns, more than --max-xruns 2"}},
		{Gate{300e3, 0}, []string{"idle: max latency 400 µs, above --fail-above 300 µs", "hackbench: max latency 1500 µs, above --fail-above 300 µs", "hackbench: 3 xruns, more than --max-xruns 0"}},
		{Gate{2e6, 3}, nil},
	} {
		if got := tc.g.Failures(r); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.g, got, tc.want)
		}
	}
}
