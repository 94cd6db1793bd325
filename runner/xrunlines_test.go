package runner

import (
	"fmt"
	"strings"
	"testing"

	"latencytest/rundata"
)

// A second with 20 underruns prints 5 and sums the other 15 with the
// longest of them; the next second starts afresh; a pointer jump is
// summed apart; the flush at the phase's end sums what is left, one
// underrun in the singular ("1 more underruns" before). Every xrun is in
// a line or a sum.
func TestXrunLinesPerSecond(t *testing.T) {
	var out []string
	x := newXrunLines("idle", func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) })
	for i := int64(0); i < 20; i++ {
		x.add(&rundata.Sample{Index: i, Woke: 1e9 + i*40e6, Xrun: (i + 1) * 100e3}) // 0.1 to 2.0 ms, within 0.8 s
	}
	x.add(&rundata.Sample{Index: 20, Woke: 1.9e9, Flags: rundata.FlagPointerJump})
	for i := int64(0); i < 6; i++ {
		x.add(&rundata.Sample{Index: 100 + i, Woke: 2.5e9 + i*1e6, Xrun: 50e3, Flags: rundata.FlagSimulated})
	}
	x.flush()
	want := []string{
		"[idle] underrun!!! (at least 0.100 ms long)",
		"[idle] underrun!!! (at least 0.200 ms long)",
		"[idle] underrun!!! (at least 0.300 ms long)",
		"[idle] underrun!!! (at least 0.400 ms long)",
		"[idle] underrun!!! (at least 0.500 ms long)",
		"[idle] … and 15 more underruns in that second, longest 2.000 ms (every one is in the results)",
		"[idle] … and 1 more pointer jump in that second (every one is in the results)",
		"[idle] underrun!!! (at least 0.050 ms long) (simulated)",
		"[idle] underrun!!! (at least 0.050 ms long) (simulated)",
		"[idle] underrun!!! (at least 0.050 ms long) (simulated)",
		"[idle] underrun!!! (at least 0.050 ms long) (simulated)",
		"[idle] underrun!!! (at least 0.050 ms long) (simulated)",
		"[idle] … and 1 more underrun in that second, at least 0.050 ms long (every one is in the results)",
	}
	if got := strings.Join(out, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("lines\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
