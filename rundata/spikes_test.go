package rundata

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"latencytest/internal/fuzzseed"
)

func TestCulprits(t *testing.T) {
	ss := []Spike{
		{LatencyNS: 5000, Causes: []Cause{{Kind: CauseThread, Name: "kworker/1:2", PID: 9, Policy: "SCHED_OTHER", NS: 3000}, {Kind: CauseIRQ, Name: "IRQ 24 ahci", NS: 1500}}, UnexplainedNS: 500},
		{DueNS: 10000, LatencyNS: 3000, Causes: []Cause{{Kind: CauseIRQ, Name: "IRQ 24 ahci", NS: 2000}, {Kind: CauseThread, Name: "kworker/1:2", PID: 11, Policy: "SCHED_OTHER", NS: 1000}}},
	}
	cs, total := Culprits(ss)
	want := []Cause{
		{Kind: CauseThread, Name: "kworker/1:2", Policy: "SCHED_OTHER", NS: 4000},
		{Kind: CauseIRQ, Name: "IRQ 24 ahci", NS: 3500},
		{Name: "unexplained", NS: 500},
	}
	if total != 8000 || !reflect.DeepEqual(cs, want) {
		t.Errorf("Culprits = %+v, %d\nwant %+v, 8000", cs, total, want)
	}
}

func TestSpikesFile(t *testing.T) {
	dir := t.TempDir()
	if ss, err := ReadSpikes(dir); err != nil || ss != nil {
		t.Fatalf("no file: %v %v", ss, err)
	}
	in := []Spike{{Phase: 1, Period: 7, LatencyNS: 4e6, CPU: 0, WakeupNS: 10, RunDelayNS: 3e6,
		Causes: []Cause{{Kind: CauseThread, Name: "hog", PID: 5, Policy: "SCHED_FIFO 90", NS: 39e5}},
		Strip:  []Slice{{Kind: CauseThread, Name: "hog", StartNS: 0, NS: 39e5}}}}
	if err := WriteSpikes(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadSpikes(dir)
	if err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	for name, body := range map[string]string{"not json": "{", "negative": `{"spikes":[{"latency_ns":-1}]}`} {
		os.WriteFile(filepath.Join(dir, SpikesFile), []byte(body), 0o644)
		if _, err := ReadSpikes(dir); err == nil || !strings.Contains(err.Error(), SpikesFile) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
}

func FuzzDecodeSpikes(f *testing.F) {
	f.Add([]byte(`{"spikes":[{"phase":1,"period":7,"latency_ns":4000000,"causes":[{"kind":"thread","name":"hog","ns":3900000}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzseed.Bounded(t, len(b), runPerByte, func() int {
			ss, err := decodeSpikes("f", bytes.NewReader(b))
			if err == nil {
				Culprits(ss)
			}
			return 0
		})
	})
}

// A thread held 30 ms at 1 ms periods makes 30 spikes whose windows all
// end at the one wakeup: its time is 30 ms, counted once, from the strips
// or, without them, in proportion (before: 465 ms, summed). Windows that
// overlap in part count their new part only, each cause where it was.
func TestCulpritsOverlapCountedOnce(t *testing.T) {
	const ms = int64(1e6)
	for _, withStrip := range []bool{true, false} {
		var ss []Spike
		for k := int64(0); k < 30; k++ {
			w := 30*ms - k*ms
			sp := Spike{Period: k, DueNS: k * ms, LatencyNS: w, Causes: []Cause{{Kind: CauseThread, Name: "hog", Policy: "SCHED_FIFO 90", NS: w}}}
			if withStrip {
				sp.Strip = []Slice{{Kind: CauseThread, Name: "hog", NS: w}}
			}
			ss = append(ss, sp)
		}
		cs, total := Culprits(ss)
		if total != 30*ms || len(cs) != 1 || cs[0].NS != 30*ms {
			t.Errorf("strip %v: %+v of %d ns, want hog 30 ms of 30 ms", withStrip, cs, total)
		}
	}
	a := Spike{DueNS: 0, LatencyNS: 10 * ms, Causes: []Cause{{Kind: CauseThread, Name: "hog", NS: 10 * ms}}, Strip: []Slice{{Kind: CauseThread, Name: "hog", NS: 10 * ms}}}
	b := Spike{DueNS: 5 * ms, LatencyNS: 15 * ms, Causes: []Cause{{Kind: CauseThread, Name: "hog", NS: 5 * ms}, {Kind: CauseIRQ, Name: "IRQ 9", NS: 10 * ms}},
		Strip: []Slice{{Kind: CauseThread, Name: "hog", NS: 5 * ms}, {Kind: CauseIRQ, Name: "IRQ 9", StartNS: 5 * ms, NS: 10 * ms}}}
	cs, total := Culprits([]Spike{b, a})
	if want := []Cause{{Kind: CauseThread, Name: "hog", NS: 10 * ms}, {Kind: CauseIRQ, Name: "IRQ 9", NS: 10 * ms}}; total != 20*ms || !reflect.DeepEqual(cs, want) {
		t.Errorf("partial overlap: %+v of %d ns, want %+v of 20 ms", cs, total, want)
	}
}

func TestThrottled(t *testing.T) {
	ss := []Spike{
		{Phase: 0, Causes: []Cause{{Kind: CauseThrottled, Name: "RT throttling", NS: 300e6}, {Kind: CauseIdle, NS: 1e6}}},
		{Phase: 0, DueNS: 400e6, Causes: []Cause{{Kind: CauseThread, Name: "hog", NS: 5e6}}},
		{Phase: 1, DueNS: 2e9, Causes: []Cause{{Kind: CauseThrottled, Name: "RT throttling", NS: 200e6}}},
		{Phase: 0, DueNS: 800e6, Causes: []Cause{{Kind: CauseHeld, Name: "hog", NS: 2e6}, {Kind: CauseThrottled, Name: "RT throttling", NS: 7e6}}},
	}
	if n, ns := Throttled(ss, 0); n != 2 || ns != 307e6 {
		t.Errorf("phase 0: %d spikes, %d ns; want 2, 307 ms", n, ns)
	}
	if n, ns := Throttled(ss, 2); n != 0 || ns != 0 {
		t.Errorf("phase 2: %d, %d", n, ns)
	}
	if got := (Cause{Kind: CauseThrottled, Name: "RT throttling"}).String(); got != "RT throttling" {
		t.Errorf("named %q", got)
	}
}
