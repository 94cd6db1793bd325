package rundata

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A 1 MB run.json costs memory in proportion to it: the most a phase can
// carry is its stressor figures, here 128 phases of 8 KB of them.
func TestParseRunMemory(t *testing.T) {
	r := Run{Schema: 1}
	for i := range MaxPhases {
		st := map[string]any{}
		for k := range 200 {
			st[fmt.Sprintf("k%03d", k)] = strings.Repeat("x", 30)
		}
		r.Phases = append(r.Phases, Phase{Name: fmt.Sprint(i), StressorStats: st})
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := ParseRun(b)
	runtime.ReadMemStats(&after)
	if err != nil || len(got.Phases) != MaxPhases {
		t.Fatalf("%v", err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("run.json of %d KB: %d KB allocated to parse it", len(b)>>10, alloc>>10)
	if alloc > 20*uint64(len(b)) {
		t.Errorf("%d bytes allocated for %d bytes of run.json", alloc, len(b))
	}
	r.Phases = append(r.Phases, Phase{})
	b, _ = json.Marshal(&r)
	if _, err := ParseRun(b); err == nil || !strings.Contains(err.Error(), "phases") {
		t.Errorf("%d phases accepted: %v", len(r.Phases), err)
	}
}
