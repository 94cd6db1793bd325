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
		{LatencyNS: 3000, Causes: []Cause{{Kind: CauseIRQ, Name: "IRQ 24 ahci", NS: 2000}, {Kind: CauseThread, Name: "kworker/1:2", PID: 11, Policy: "SCHED_OTHER", NS: 1000}}},
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

func TestThrottled(t *testing.T) {
	ss := []Spike{
		{Phase: 0, Causes: []Cause{{Kind: CauseThrottled, Name: "RT throttling", NS: 300e6}, {Kind: CauseIdle, NS: 1e6}}},
		{Phase: 0, Causes: []Cause{{Kind: CauseThread, Name: "hog", NS: 5e6}}},
		{Phase: 1, Causes: []Cause{{Kind: CauseThrottled, Name: "RT throttling", NS: 200e6}}},
		{Phase: 0, Causes: []Cause{{Kind: CauseHeld, Name: "hog", NS: 2e6}, {Kind: CauseThrottled, Name: "RT throttling", NS: 7e6}}},
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
