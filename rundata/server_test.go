package rundata

import (
	"fmt"
	"testing"
)

// TestMaxServerRead: a run of MaxPhases phases, each with a server block
// as full as a run writes (MaxServerLate late cycles, each with others
// unfinished beside it, a node for each reason), is within what a reader
// decodes.
func TestMaxServerRead(t *testing.T) {
	lat := LatencyStats{Min: 1.5, Avg: 2.5, P50: 2, P90: 3, P99: 4, P999: 5, P9999: 6, Max: 7.25, RangeUS: 100000}
	sv := &Server{Server: ServerPipeWire, DetectedBy: "this process's libjack is PipeWire's", Rate: 48000, QuantumFrames: 256,
		QuantumUS: 5333, Cycles: 1 << 20, LateCycles: 1 << 19}
	for i := range 16 {
		sv.ByNode = append(sv.ByNode, ServerNode{Node: fmt.Sprint("client-", i), ID: i, Why: "ran past its deadline", N: 3, MaxOverrunUS: 2700})
	}
	for i := range MaxServerLate {
		sv.Late = append(sv.Late, ServerLate{Line: i, Node: "slow", ID: 31, Why: "ran past its deadline", SignalUS: 1, AwakeUS: 2,
			FinishUS: -1, OverrunUS: 2700, Others: []string{"a", "b", "c"}})
	}
	r := &Run{Schema: SchemaVersion}
	for i := range MaxPhases {
		r.Phases = append(r.Phases, Phase{Name: fmt.Sprint("p", i), Periods: 1e6, Latency: lat, Xruns: 3, Server: sv,
			CPULoop: CPULoop{1, 2, 3, 4}, Safe: &Safe{2, -3, 4, true}, SafeAtDefaultLoad: &Safe{4, 5, 6, false}})
	}
	b, err := MarshalRun(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseRun(b); err != nil {
		t.Fatalf("a run of %d phases with full server blocks (%d KB) is refused: %v", MaxPhases, len(b)>>10, err)
	}
}
