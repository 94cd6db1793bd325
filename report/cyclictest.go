package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// cyclictest writes its histogram in 1 µs bins, like rundata.Histogram, so
// its files convert without resampling: per-thread columns are merged into
// one distribution, the "all CPUs" view latencytest's single audio thread
// is compared against.

// ctRun is a cyclictest result converted to one phase.
type ctRun struct {
	hist    *rundata.Histogram
	threads int
	cycles  uint64
	// kernel, version and realtime come from the JSON's sysinfo; empty
	// for a --histfile, which records no system.
	kernel, version, cmdline string
	realtime                 bool
}

// errUnknownFormat is returned for a file that is neither a cyclictest
// histogram nor its JSON output.
var errUnknownFormat = errors.New("unknown format: want a latencytest results directory, a cyclictest --histfile or a cyclictest --json file")

// parseCyclictest recognises and parses either of cyclictest's outputs.
func parseCyclictest(b []byte) (*ctRun, error) {
	t := bytes.TrimLeft(b, " \t\r\n")
	switch {
	case len(t) > 0 && t[0] == '{':
		return parseCyclictestJSON(t)
	case bytes.HasPrefix(t, []byte("# Histogram")) || bytes.Contains(b, []byte("\n# Max Latencies:")):
		return parseCyclictestHist(b)
	}
	return nil, errUnknownFormat
}

// parseCyclictestHist parses cyclictest's histogram text (-h N, --histfile):
// "# Histogram", one line per µs bin with a count per thread (and, with -H,
// a sum column), then "# Total:", "# Min/Avg/Max Latencies:" and
// "# Histogram Overflows:" with one value per thread (-H appends the sum to
// some of them). The thread count is taken from "# Min Latencies:", which
// never has the sum column.
func parseCyclictestHist(b []byte) (*ctRun, error) {
	type row struct {
		bin    int
		counts []uint64
	}
	var rows []row
	summary := map[string][]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
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
			case "Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows":
				var vals []int64
				for _, f := range strings.Fields(v) {
					n, err := strconv.ParseInt(f, 10, 64)
					if err != nil {
						return nil, fmt.Errorf("cyclictest histogram line %d: %q: %w", line, s, err)
					}
					vals = append(vals, n)
				}
				summary[k] = vals
			}
			continue
		}
		fs := strings.Fields(s)
		if len(fs) < 2 {
			return nil, fmt.Errorf("cyclictest histogram line %d: %q is not a bin and its counts", line, s)
		}
		bin, err := strconv.Atoi(fs[0])
		if err != nil || bin < 0 || bin > 10_000_000 {
			return nil, fmt.Errorf("cyclictest histogram line %d: bad bin %q", line, fs[0])
		}
		r := row{bin: bin}
		for _, f := range fs[1:] {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("cyclictest histogram line %d: bad count %q", line, f)
			}
			r.counts = append(r.counts, n)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	mins, maxs, avgs := summary["Min Latencies"], summary["Max Latencies"], summary["Avg Latencies"]
	threads := len(mins)
	if threads == 0 || len(maxs) < threads || len(avgs) < threads {
		return nil, fmt.Errorf("cyclictest histogram: no \"# Min/Avg/Max Latencies\" summary (was it cut short?)")
	}
	nbins := 0
	for _, r := range rows {
		nbins = max(nbins, r.bin+1)
		if len(r.counts) < threads {
			return nil, fmt.Errorf("cyclictest histogram: bin %d has %d columns for %d threads", r.bin, len(r.counts), threads)
		}
	}
	h := rundata.NewHistogram(nbins)
	perThread := make([]uint64, threads)
	for _, r := range rows {
		for t := 0; t < threads; t++ {
			h.Bins[r.bin] += r.counts[t]
			perThread[t] += r.counts[t]
		}
	}
	of := summary["Histogram Overflows"]
	var sum float64
	for t := 0; t < threads; t++ {
		n := perThread[t]
		if t < len(of) {
			n += uint64(of[t])
			h.Overflow += uint64(of[t])
		}
		h.Count += n
		sum += float64(avgs[t]) * float64(n)
		h.MinNS = min(h.MinNS, mins[t]*1000)
		h.MaxNS = max(h.MaxNS, maxs[t]*1000)
	}
	h.SumNS = sum * 1000
	if h.Count == 0 {
		h.MinNS = 0
	}
	return &ctRun{hist: h, threads: threads, cycles: h.Count}, nil
}

// ctJSON is the part of cyclictest's --json output (rt-tests 2.x) read
// here. Some versions spell keys with a trailing colon ("cmdline:").
type ctJSON struct {
	Cmdline  string `json:"cmdline"`
	Cmdline2 string `json:"cmdline:"`
	Sysinfo  struct {
		Release  string `json:"release"`
		Version  string `json:"version"`
		Realtime int    `json:"realtime"`
	} `json:"sysinfo"`
	NumThreads int `json:"num_threads"`
	Thread     map[string]struct {
		Histogram map[string]uint64 `json:"histogram"`
		Cycles    uint64            `json:"cycles"`
		Min       float64           `json:"min"`
		Max       float64           `json:"max"`
		Avg       float64           `json:"avg"`
	} `json:"thread"`
}

func parseCyclictestJSON(b []byte) (*ctRun, error) {
	var j ctJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("cyclictest JSON: %w", err)
	}
	if len(j.Thread) == 0 {
		return nil, errors.New("cyclictest JSON: no \"thread\" results")
	}
	cmd := j.Cmdline
	if cmd == "" {
		cmd = j.Cmdline2
	}
	// The JSON omits empty bins and does not say where the histogram
	// ended; the command line does (-h N / --histogram=N), and the largest
	// bin present is a lower bound.
	nbins := histRange(cmd)
	for _, t := range j.Thread {
		for k := range t.Histogram {
			bin, err := strconv.Atoi(k)
			if err != nil || bin < 0 || bin > 10_000_000 {
				return nil, fmt.Errorf("cyclictest JSON: bad histogram bin %q", k)
			}
			nbins = max(nbins, bin+1)
		}
	}
	h := rundata.NewHistogram(nbins)
	var sum float64
	for _, t := range j.Thread {
		var in uint64
		for k, n := range t.Histogram {
			bin, _ := strconv.Atoi(k)
			h.Bins[bin] += n
			in += n
		}
		if t.Cycles > in {
			h.Overflow += t.Cycles - in
		}
		h.Count += max(t.Cycles, in)
		sum += t.Avg * float64(max(t.Cycles, in))
		h.MinNS = min(h.MinNS, int64(math.Round(t.Min*1000)))
		h.MaxNS = max(h.MaxNS, int64(math.Round(t.Max*1000)))
	}
	h.SumNS = sum * 1000
	if h.Count == 0 {
		h.MinNS = 0
	}
	return &ctRun{hist: h, threads: len(j.Thread), cycles: h.Count, kernel: j.Sysinfo.Release,
		version: j.Sysinfo.Version, cmdline: cmd, realtime: j.Sysinfo.Realtime == 1}, nil
}

// histRange finds cyclictest's histogram size on its command line, 0 when
// it is not there.
func histRange(cmd string) int {
	return cmdlineInt(cmd, []string{"-h", "-H"}, []string{"--histogram", "--histofall"})
}

// cmdlineInt finds the value of an integer option of cyclictest's command
// line, given as "-x N", "-xN", "--long N" or "--long=N"; 0 when absent.
func cmdlineInt(cmd string, short, long []string) int {
	fs := strings.Fields(cmd)
	for i, f := range fs {
		var v string
		for _, o := range append(append([]string(nil), short...), long...) {
			switch {
			case f == o:
				if i+1 < len(fs) {
					v = fs[i+1]
				}
			case strings.HasPrefix(o, "--") && strings.HasPrefix(f, o+"="):
				v = f[len(o)+1:]
			case !strings.HasPrefix(o, "--") && len(f) > len(o) && strings.HasPrefix(f, o) && f[len(o)] >= '0' && f[len(o)] <= '9':
				v = f[len(o):]
			}
		}
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// ctPhase turns a cyclictest result into a phase for the tables. What
// cyclictest does not measure (the CPU loop, xruns) is marked unknown, and
// so is a "within" share its histogram cannot tell (overflowed values
// below the limit).
func ctPhase(name string, c *ctRun) *phaseData {
	h := c.hist
	p := &phaseData{hist: h, noLoop: true}
	p.Name = name
	p.Periods = int64(h.Count)
	p.Latency = h.Stats()
	p.Latency.Min = float64(h.MinNS) / 1000
	p.Latency.Max = float64(h.MaxNS) / 1000
	within := func(limitNS int64) float64 {
		if h.Overflow > 0 && limitNS/1000 > int64(len(h.Bins)) {
			return math.NaN()
		}
		return 100 * h.FractionBelow(limitNS)
	}
	p.WithinUS100 = within(100_000)
	p.WithinMS1 = within(1_000_000)
	p.Overflow = h.Overflow
	return p
}
