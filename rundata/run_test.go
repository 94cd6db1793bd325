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
	got, err := parseRun(b)
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
	if _, err := parseRun(b); err == nil || !strings.Contains(err.Error(), "phases") {
		t.Errorf("%d phases accepted: %v", len(r.Phases), err)
	}
}

// An xrun's span runs from a period after the last sample before it (its
// own Due may be late) to the first period after the restart; a pointer
// jump's is the step that lost buffers.
func TestStreamLost(t *testing.T) {
	const p = int64(1e6)
	ss := []Sample{
		{Due: 1 * p}, {Due: 2 * p}, {Due: 3 * p},
		{Due: 4*p + 600e3, Xrun: 2 * p}, // the update that found the buffer empty came 0.6 ms after
		{Due: 14 * p},                   // the restart and its refill: 9 periods lost
		{Due: 15 * p},
		{Due: 19 * p, Flags: FlagPointerJump}, // three periods' worth of buffers lost
		{Due: 20 * p},
	}
	lost, restarts := StreamLost(ss, p)
	if lost != 12*p || restarts != 1 {
		t.Errorf("lost %d ns over %d restarts, want %d over 1", lost, restarts, 12*p)
	}
	// Counted periods plus the lost time's are the stream time's.
	if n := int64(len(ss)) + lost/p; n != (ss[len(ss)-1].Due-ss[0].Due)/p+1 {
		t.Errorf("%d periods counted and lost, over %d ns", n, ss[len(ss)-1].Due-ss[0].Due)
	}
}
