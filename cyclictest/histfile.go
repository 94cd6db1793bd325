package cyclictest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// The histogram file is cyclictest's --histfile format, so that tools made
// for cyclictest read latencytest's histograms and latencytest reads
// cyclictest's: "# Histogram", one line per µs bin with a count per thread
// (here: per phase, or per CPU of each phase under run --cpus), then
// "# Total:", "# Min/Avg/Max Latencies:" and
// "# Histogram Overflows:" with one value per column. latencytest adds rows
// for negative bins (before bin 0) and a "# Histogram Underflows:" line
// only when a histogram holds negative values; cyclictest's never do.
// docs/results-format.md is its specification.

// maxSummaryUS bounds the min/avg/max a histogram file may claim, so that
// their conversion to ns cannot overflow (11.6 days).
const maxSummaryUS = 1e12

// EncodeHistFile renders histograms in cyclictest's --histfile format, one
// column per histogram.
func EncodeHistFile(hists []*rundata.Histogram) []byte {
	var b strings.Builder
	lo, hi := int64(0), int64(0) // rows [lo, hi)
	for _, h := range hists {
		if h.Count == 0 {
			continue
		}
		hi = max(hi, min(rundata.BinOf(h.MaxNS)+1, int64(h.RangeUS)))
		lo = min(lo, max(rundata.BinOf(h.MinNS), -int64(h.RangeUS)))
	}
	b.WriteString("# Histogram\n")
	for i := lo; i < hi; i++ {
		fmt.Fprintf(&b, "%06d ", i)
		for j, h := range hists {
			if j > 0 {
				b.WriteByte('\t')
			}
			fmt.Fprintf(&b, "%06d", h.Bin(i))
		}
		b.WriteByte('\n')
	}
	line := func(name string, f func(h *rundata.Histogram) string) {
		b.WriteString("# " + name + ":")
		for _, h := range hists {
			b.WriteString(" " + f(h))
		}
		b.WriteByte('\n')
	}
	us := func(ns int64) string { return fmt.Sprintf("%05d", rundata.BinOf(ns)) }
	line("Total", func(h *rundata.Histogram) string { return fmt.Sprintf("%09d", h.Count-h.Overflow-h.Underflow) })
	line("Min Latencies", func(h *rundata.Histogram) string {
		if h.Count == 0 {
			return "00000"
		}
		return us(h.MinNS)
	})
	line("Avg Latencies", func(h *rundata.Histogram) string {
		if h.Count == 0 {
			return "00000"
		}
		return us(int64(math.Floor(h.SumNS / float64(h.Count))))
	})
	line("Max Latencies", func(h *rundata.Histogram) string {
		if h.Count == 0 {
			return "00000"
		}
		return us(h.MaxNS)
	})
	line("Histogram Overflows", func(h *rundata.Histogram) string { return fmt.Sprintf("%05d", h.Overflow) })
	for _, h := range hists {
		if h.Underflow > 0 {
			line("Histogram Underflows", func(h *rundata.Histogram) string { return fmt.Sprintf("%05d", h.Underflow) })
			break
		}
	}
	b.WriteString("# Histogram Overflow at cycle number:\n")
	for j := range hists {
		fmt.Fprintf(&b, "# Thread %d:\n", j)
	}
	return []byte(b.String())
}

// HistFile is a histogram file read back: its columns merged into one
// distribution (cyclictest's "all CPUs" view).
type HistFile struct {
	Hist    *rundata.Histogram
	Columns int // threads (cyclictest), or phases and their CPUs (latencytest)
	// PerColumn is each column's histogram, in the file's order: a
	// thread's (cyclictest -t), a CPU's (run --cpus).
	PerColumn []*rundata.Histogram
	// Within says whether Hist.AtMost100US and Hist.AtMost1MS are known:
	// a binned file cannot tell them when overflowed values lie beyond
	// the histogram's range but maybe below the limit.
	Within100US, Within1MS bool
}

// ErrHistFile marks a histogram file that cannot be read.
var ErrHistFile = errors.New("cyclictest histogram")

// histRow is one bin line: the bin, then its counts.
type histRow struct {
	bin    int64
	counts []uint64
}

// ParseHistFile reads cyclictest's histogram text (-h N on stdout, or
// --histfile; -H's sum column too). The number of columns is taken from
// "# Min Latencies:", which never has -H's sum column. Every count, total
// and summary is checked against the others, so a file cut short, edited
// or made up is refused rather than drawn. Memory is proportional to the
// file's lines.
func ParseHistFile(b []byte) (*HistFile, error) {
	var rows []histRow
	summary := map[string][]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w line %d: %s", ErrHistFile, line, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "#"); ok {
			k, v, ok := strings.Cut(rest, ":")
			if !ok {
				continue
			}
			k = strings.TrimSpace(k)
			switch k {
			case "Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows", "Histogram Underflows":
				if _, dup := summary[k]; dup {
					return nil, bad("a second %q line", k)
				}
				vals, err := summaryValues(k, v)
				if err != nil {
					return nil, bad("%v", err)
				}
				summary[k] = vals
			}
			continue
		}
		r, err := parseHistRow(s)
		if err != nil {
			return nil, bad("%v", err)
		}
		if n := len(rows); n > 0 && r.bin <= rows[n-1].bin {
			return nil, bad("bin %d after bin %d: bins must ascend", r.bin, rows[n-1].bin)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHistFile, err)
	}
	return buildHistFile(rows, summary)
}

// summaryValues parses one summary line's values. Counts are never
// negative; latencies are bounded so that they convert to ns.
func summaryValues(key, v string) ([]int64, error) {
	var vals []int64
	for _, f := range strings.Fields(v) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not an integer", key, f)
		}
		switch key {
		case "Total", "Histogram Overflows", "Histogram Underflows":
			if n < 0 {
				return nil, fmt.Errorf("%q: %d is negative", key, n)
			}
		default:
			if n > maxSummaryUS || n < -maxSummaryUS {
				return nil, fmt.Errorf("%q: %d µs is out of range", key, n)
			}
		}
		vals = append(vals, n)
	}
	return vals, nil
}

func parseHistRow(s string) (histRow, error) {
	fs := strings.Fields(s)
	if len(fs) < 2 {
		return histRow{}, fmt.Errorf("%q is not a bin and its counts", s)
	}
	bin, err := strconv.ParseInt(fs[0], 10, 64)
	if err != nil || bin < -rundata.MaxHistUS || bin >= rundata.MaxHistUS {
		return histRow{}, fmt.Errorf("bad bin %q (bins are µs within ±%d)", fs[0], rundata.MaxHistUS)
	}
	r := histRow{bin: bin, counts: make([]uint64, 0, len(fs)-1)}
	for _, f := range fs[1:] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return histRow{}, fmt.Errorf("bad count %q", f)
		}
		r.counts = append(r.counts, n)
	}
	return r, nil
}

// buildHistFile merges the rows' columns into one histogram and checks
// them against the summary lines.
func buildHistFile(rows []histRow, summary map[string][]int64) (*HistFile, error) {
	mins, maxs, avgs := summary["Min Latencies"], summary["Max Latencies"], summary["Avg Latencies"]
	cols := len(mins)
	if cols == 0 || len(maxs) < cols || len(avgs) < cols {
		return nil, fmt.Errorf("%w: no \"# Min/Avg/Max Latencies\" summary (was it cut short?)", ErrHistFile)
	}
	rangeUS := 1
	for _, r := range rows {
		if len(r.counts) < cols {
			return nil, fmt.Errorf("%w: bin %d has %d columns for %d threads", ErrHistFile, r.bin, len(r.counts), cols)
		}
		rangeUS = max(rangeUS, int(max(r.bin+1, -r.bin)))
	}
	h := rundata.NewHistogram(rangeUS)
	inBins := make([]uint64, cols)
	for _, r := range rows {
		for t := range cols {
			var c uint64
			inBins[t], c = bits.Add64(inBins[t], r.counts[t], 0)
			if c != 0 {
				return nil, fmt.Errorf("%w: the counts of column %d overflow", ErrHistFile, t+1)
			}
			h.AddBin(r.bin, r.counts[t])
		}
	}
	hf, err := finishHistFile(h, inBins, summary, cols)
	if err != nil {
		return nil, err
	}
	for t := range cols {
		ht := rundata.NewHistogram(rangeUS)
		for _, r := range rows {
			ht.AddBin(r.bin, r.counts[t])
		}
		one, err := finishHistFile(ht, inBins[t:t+1], columnOf(summary, t), 1)
		if err != nil {
			return nil, err
		}
		hf.PerColumn = append(hf.PerColumn, one.Hist)
	}
	return hf, nil
}

// columnOf is the summary lines' values of column t alone.
func columnOf(summary map[string][]int64, t int) map[string][]int64 {
	one := map[string][]int64{}
	for k, v := range summary {
		if t < len(v) {
			one[k] = v[t : t+1]
		}
	}
	return one
}

// finishHistFile sets the totals, min, max, average and "within" counts
// from the summary lines, refusing any that contradict the bins.
func finishHistFile(h *rundata.Histogram, inBins []uint64, summary map[string][]int64, cols int) (*HistFile, error) {
	of, uf, total := summary["Histogram Overflows"], summary["Histogram Underflows"], summary["Total"]
	at := func(v []int64, t int) uint64 {
		if t < len(v) {
			return uint64(v[t])
		}
		return 0
	}
	var sum float64
	for t := range cols {
		if len(total) > t && uint64(total[t]) != inBins[t] {
			return nil, fmt.Errorf("%w: column %d: \"# Total: %d\" but its bins hold %d (was it cut short?)", ErrHistFile, t+1, total[t], inBins[t])
		}
		n, c1 := bits.Add64(inBins[t], at(of, t), 0)
		n, c2 := bits.Add64(n, at(uf, t), 0)
		count, c3 := bits.Add64(h.Count, n, 0)
		if c1|c2|c3 != 0 {
			return nil, fmt.Errorf("%w: column %d: the counts overflow", ErrHistFile, t+1)
		}
		h.Count = count
		h.Overflow += at(of, t)
		h.Underflow += at(uf, t)
		if n == 0 {
			continue
		}
		mn, mx, avg := summary["Min Latencies"][t], summary["Max Latencies"][t], summary["Avg Latencies"][t]
		if mn > mx || avg < mn || avg > mx {
			return nil, fmt.Errorf("%w: column %d: min %d, avg %d, max %d µs do not hold together", ErrHistFile, t+1, mn, avg, mx)
		}
		sum += float64(avg) * float64(n)
		h.MinNS = min(h.MinNS, mn*1000)
		h.MaxNS = max(h.MaxNS, mx*1000)
	}
	hf := &HistFile{Hist: h, Columns: cols, Within100US: true, Within1MS: true}
	if h.Count == 0 {
		h.MinNS, h.MaxNS = 0, 0
		return hf, nil
	}
	if err := checkEdges(h); err != nil {
		return nil, err
	}
	h.SumNS = sum * 1000
	h.AtMost100US, hf.Within100US = BinnedAtMost(h, rundata.Within100US/1000)
	h.AtMost1MS, hf.Within1MS = BinnedAtMost(h, rundata.Within1MS/1000)
	return hf, nil
}

// checkEdges refuses a histogram whose bins hold values outside its
// claimed min and max.
func checkEdges(h *rundata.Histogram) error {
	lo, hi, ok := h.Span()
	if ok && (rundata.BinOf(h.MinNS) > lo || rundata.BinOf(h.MaxNS) < hi) {
		return fmt.Errorf("%w: bins from %d to %d µs outside the min %d and max %d µs", ErrHistFile, lo, hi, h.MinNS/1000, h.MaxNS/1000)
	}
	if h.Overflow > 0 && h.MaxNS < int64(h.RangeUS)*1000 {
		return fmt.Errorf("%w: %d overflows but a max of %d µs", ErrHistFile, h.Overflow, h.MaxNS/1000)
	}
	return nil
}

// BinnedAtMost counts the values of at most limit µs in a histogram of
// whole-µs values (cyclictest's: its latencies are truncated to µs, so bin
// i holds exactly the value i). It says false when the count cannot be
// told: some overflowed values lie beyond the range but maybe below limit.
func BinnedAtMost(h *rundata.Histogram, limit int64) (uint64, bool) {
	n := h.Underflow + h.CountIn(math.MinInt64, limit)
	if limit < int64(h.RangeUS) || h.Overflow == 0 {
		return n, true
	}
	if h.MaxNS <= limit*1000 {
		return n + h.Overflow, true
	}
	return n, false
}
