package cyclictest

import (
	"errors"
	"os"
	"strings"
	"testing"

	"latencytest/rundata"
)

func TestHistFileIsCyclictestFormat(t *testing.T) {
	a, b := rundata.NewHistogram(100), rundata.NewHistogram(100)
	for _, v := range []int64{3_200, 3_900, 5_000} {
		a.Add(v)
	}
	b.Add(1_000)
	b.Add(500_000) // overflow
	got := string(EncodeHistFile([]*rundata.Histogram{a, b}))
	for _, want := range []string{
		"# Histogram\n000000 000000\t000000\n",
		"000003 000002\t000000\n",
		"000005 000001\t000000\n",
		"# Total: 000000003 000000001\n",
		"# Min Latencies: 00003 00001\n",
		"# Max Latencies: 00005 00500\n",
		"# Histogram Overflows: 00000 00001\n",
		"# Thread 1:\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("histfile lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Underflows") {
		t.Errorf("an underflow line without negative values:\n%s", got)
	}
	// Rows run to the largest maximum within range: 0..99 here.
	if n := strings.Count(got, "\n000"); n != 100 {
		t.Errorf("%d rows, want 100", n)
	}
}

// latencytest's own file reads back as the merged distribution, negative
// bins included.
func TestHistFileRoundTrip(t *testing.T) {
	a, b := rundata.NewHistogram(rundata.DefaultHistUS), rundata.NewHistogram(rundata.DefaultHistUS)
	for _, v := range []int64{-1_500, 3_200, 3_900, 5_000, 42_000} {
		a.Add(v)
	}
	b.Add(7_000)
	got, err := ParseHistFile(EncodeHistFile([]*rundata.Histogram{a, b}))
	if err != nil {
		t.Fatal(err)
	}
	h := got.Hist
	if got.Columns != 2 || h.Count != 6 || h.Bin(-2) != 1 || h.Bin(3) != 2 || h.Bin(42) != 1 || h.Bin(7) != 1 {
		t.Fatalf("read back %+v", got)
	}
	// min and max come from the summary lines, in whole µs
	if h.MinNS != -2_000 || h.MaxNS != 42_000 || h.AtMost100US != 6 {
		t.Errorf("min %d max %d within %d", h.MinNS, h.MaxNS, h.AtMost100US)
	}
}

// A real file of cyclictest -t2 -h 50 with overflows.
func TestHistFileCyclictest(t *testing.T) {
	b, err := os.ReadFile("testdata/cyclictest-2threads.hist")
	if err != nil {
		t.Fatal(err)
	}
	hf, err := ParseHistFile(b)
	if err != nil {
		t.Fatal(err)
	}
	h := hf.Hist
	// Total 1709 + 1488 in the bins, overflows 291 + 512: 2 × 2000 loops.
	if hf.Columns != 2 || h.Count != 4000 || h.Overflow != 803 || h.RangeUS != 50 || h.MinNS != 18_000 || h.MaxNS != 6_244_000 {
		t.Fatalf("%d columns, count %d, overflow %d, range %d, min %d, max %d", hf.Columns, h.Count, h.Overflow, h.RangeUS, h.MinNS, h.MaxNS)
	}
	// Each thread's column alone: its total and overflows, and its min and
	// max from the summary lines.
	want := []struct {
		count, overflow uint64
		min, max        int64
	}{{2000, 291, 18_000, 6_244_000}, {2000, 512, 18_000, 6_090_000}}
	if len(hf.PerColumn) != 2 {
		t.Fatalf("%d columns kept, want 2", len(hf.PerColumn))
	}
	for i, c := range hf.PerColumn {
		if w := want[i]; c.Count != w.count || c.Overflow != w.overflow || c.MinNS != w.min || c.MaxNS != w.max {
			t.Errorf("thread %d: count %d, overflow %d, min %d, max %d; want %+v", i, c.Count, c.Overflow, c.MinNS, c.MaxNS, w)
		}
	}
	// 803 of 4000 beyond 50 µs: p80 is within the bins, p90 beyond them.
	if p := h.Percentile(0.9); p != 50 || !h.Stats().Beyond(p) {
		t.Errorf("p90 = %g, want the range 50 read as beyond", p)
	}
	// Beyond 50 µs with a max of 6.2 ms, "within 100 µs" cannot be told;
	// "within 1 ms" neither.
	if hf.Within100US || hf.Within1MS {
		t.Errorf("within shares claimed known: %v %v", hf.Within100US, hf.Within1MS)
	}
}

func TestHistFileRefusesInconsistent(t *testing.T) {
	const good = "# Histogram\n000000 000001\n000001 000002\n# Total: 000000003\n# Min Latencies: 00000\n# Avg Latencies: 00001\n# Max Latencies: 00001\n# Histogram Overflows: 00000\n"
	if _, err := ParseHistFile([]byte(good)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for name, in := range map[string]string{
		"negative overflows": strings.Replace(good, "Overflows: 00000", "Overflows: -1", 1),
		"total differs":      strings.Replace(good, "Total: 000000003", "Total: 000000004", 1),
		"min above max":      strings.Replace(good, "Min Latencies: 00000", "Min Latencies: 00005", 1),
		"bins beyond max":    strings.Replace(good, "Max Latencies: 00001", "Max Latencies: 00000", 1) + "",
		"overflow below max": strings.Replace(good, "Overflows: 00000", "Overflows: 00001", 1),
		"huge bin":           strings.Replace(good, "000001 000002", "9000000000 000002", 1),
		"count overflow":     strings.Replace(good, "000001 000002\n", "000001 18446744073709551615\n", 1),
		"descending bins":    strings.Replace(good, "000001 000002\n", "000001 000002\n000000 000000\n", 1),
		"huge min":           strings.Replace(good, "Min Latencies: 00000", "Min Latencies: 9000000000000000000", 1),
		"no summary":         "# Histogram\n000000 000001\n",
		"duplicate line":     good + "# Max Latencies: 00001\n",
	} {
		if _, err := ParseHistFile([]byte(in)); !errors.Is(err, ErrHistFile) {
			t.Errorf("%s: got %v, want a refusal", name, err)
		}
	}
}
