package cyclictest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// cyclictest writes its histogram in 1 µs bins, like rundata.Histogram, so
// its files convert without resampling: per-thread columns are merged into
// one distribution, the "all CPUs" view latencytest's single audio thread
// is compared against.

// Result is a cyclictest histogram or JSON file, its threads merged into
// one distribution.
type Result struct {
	Hist    *rundata.Histogram
	Threads int
	Cycles  uint64
	// Kernel, Version and Realtime come from the JSON's sysinfo, Cmdline
	// from its command line; empty for a --histfile, which records none.
	Kernel, Version, Cmdline string
	Realtime                 bool
	// Within100US and Within1MS say whether the "within" counts are
	// known (see BinnedAtMost).
	Within100US, Within1MS bool
}

// ErrUnknownFormat is returned for a file that is neither a cyclictest
// histogram nor its JSON output.
var ErrUnknownFormat = errors.New("unknown format: want a latencytest results directory, a cyclictest --histfile or a cyclictest --json file")

// Parse recognises and parses either of cyclictest's outputs: its
// --histfile text or its --json (rt-tests 2.x). A terminal log is IsLog's
// and ParseLog's.
func Parse(b []byte) (*Result, error) {
	t := bytes.TrimLeft(b, " \t\r\n")
	switch {
	case len(t) > 0 && t[0] == '{':
		return parseCyclictestJSON(t)
	case bytes.HasPrefix(t, []byte("# Histogram")) || bytes.Contains(b, []byte("\n# Max Latencies:")):
		return parseCyclictestHist(b)
	}
	return nil, ErrUnknownFormat
}

// parseCyclictestHist reads cyclictest's histogram text, with the codec
// that also writes latencytest's --histfile.
func parseCyclictestHist(b []byte) (*Result, error) {
	hf, err := ParseHistFile(b)
	if err != nil {
		return nil, err
	}
	return &Result{Hist: hf.Hist, Threads: hf.Columns, Cycles: hf.Hist.Count,
		Within100US: hf.Within100US, Within1MS: hf.Within1MS}, nil
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
	NumThreads int                 `json:"num_threads"`
	Thread     map[string]ctThread `json:"thread"`
}

func parseCyclictestJSON(b []byte) (*Result, error) {
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
	asked := histRange(cmd)
	if asked > rundata.MaxHistUS {
		return nil, fmt.Errorf("cyclictest JSON: its command line asks for a %d µs histogram; latencytest reads up to %d", asked, rundata.MaxHistUS)
	}
	rangeUS := int(asked)
	for _, t := range j.Thread {
		for k := range t.Histogram {
			bin, err := strconv.Atoi(k)
			if err != nil || bin < 0 || bin >= rundata.MaxHistUS {
				return nil, fmt.Errorf("cyclictest JSON: bad histogram bin %q (bins are µs below %d)", k, rundata.MaxHistUS)
			}
			rangeUS = max(rangeUS, bin+1)
		}
	}
	h := rundata.NewHistogram(max(rangeUS, 1))
	var sum float64
	for name, t := range j.Thread {
		if err := addCTThread(h, &sum, t); err != nil {
			return nil, fmt.Errorf("cyclictest JSON: thread %q: %w", name, err)
		}
	}
	h.SumNS = sum * 1000
	c := &Result{Hist: h, Threads: len(j.Thread), Cycles: h.Count, Kernel: j.Sysinfo.Release,
		Version: j.Sysinfo.Version, Cmdline: cmd, Realtime: j.Sysinfo.Realtime == 1}
	if h.Count == 0 {
		h.MinNS, h.MaxNS = 0, 0
	}
	if h.Overflow > 0 && h.MaxNS < int64(h.RangeUS)*1000 {
		return nil, fmt.Errorf("cyclictest JSON: %d cycles beyond the %d µs histogram but a max of %d µs", h.Overflow, h.RangeUS, h.MaxNS/1000)
	}
	h.AtMost100US, c.Within100US = BinnedAtMost(h, rundata.Within100US/1000)
	h.AtMost1MS, c.Within1MS = BinnedAtMost(h, rundata.Within1MS/1000)
	return c, nil
}

// ctThread is one thread of cyclictest's JSON.
type ctThread = struct {
	Histogram map[string]uint64 `json:"histogram"`
	Cycles    uint64            `json:"cycles"`
	Min       float64           `json:"min"`
	Max       float64           `json:"max"`
	Avg       float64           `json:"avg"`
}

// addCTThread merges one thread into h, refusing figures that contradict
// each other (cyclictest's latencies are whole µs, never negative).
func addCTThread(h *rundata.Histogram, sum *float64, t ctThread) error {
	var in uint64
	for k, n := range t.Histogram {
		bin, _ := strconv.Atoi(k)
		var c uint64
		if in, c = bits.Add64(in, n, 0); c != 0 {
			return errors.New("the histogram's counts overflow")
		}
		if n > 0 && (float64(bin) < math.Floor(t.Min) || float64(bin) > t.Max) {
			return fmt.Errorf("bin %d outside its min %g and max %g µs", bin, t.Min, t.Max)
		}
		h.AddBin(int64(bin), n)
	}
	if t.Cycles < in {
		return fmt.Errorf("%d cycles but %d in the histogram", t.Cycles, in)
	}
	if t.Cycles == 0 {
		return nil
	}
	if !(t.Min >= 0 && t.Min <= t.Avg && t.Avg <= t.Max && t.Max <= maxCTLatencyUS) {
		return fmt.Errorf("min %g, avg %g, max %g µs do not hold together", t.Min, t.Avg, t.Max)
	}
	count, c := bits.Add64(h.Count, t.Cycles, 0)
	if c != 0 {
		return errors.New("the cycle counts overflow")
	}
	h.Count = count
	h.AddBin(int64(h.RangeUS), t.Cycles-in) // the cycles the histogram did not hold
	*sum += t.Avg * float64(t.Cycles)
	h.MinNS = min(h.MinNS, int64(math.Round(t.Min*1000)))
	h.MaxNS = max(h.MaxNS, int64(math.Round(t.Max*1000)))
	return nil
}

// maxCTLatencyUS bounds the latencies a cyclictest file may claim, so
// that they convert to ns (11.6 days).
const maxCTLatencyUS = 1e12

// IntervalUS is the interval cyclictest's command line asked for (-i N,
// --interval N), µs; 0 when it is not there.
func (r *Result) IntervalUS() int64 {
	return cmdlineInt(r.Cmdline, []string{"-i"}, []string{"--interval"})
}

// histRange finds cyclictest's histogram size on its command line, 0 when
// it is not there.
func histRange(cmd string) int64 {
	return cmdlineInt(cmd, []string{"-h", "-H"}, []string{"--histogram", "--histofall"})
}

// cmdlineInt finds the value of an integer option of cyclictest's command
// line, given as "-x N", "-xN", "--long N" or "--long=N"; 0 when absent.
// It is an int64 whatever int is, and a value past it reads as the
// largest: on 32-bit, Atoi's range error made "-h 9e18" read as absent.
func cmdlineInt(cmd string, short, long []string) int64 {
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
		if n, err := strconv.ParseInt(v, 10, 64); (err == nil || errors.Is(err, strconv.ErrRange)) && n > 0 {
			return n
		}
	}
	return 0
}
