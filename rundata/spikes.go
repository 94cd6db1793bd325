package rundata

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"

	"latencytest/internal/atomicfile"
)

// SpikesFile holds the anatomy of every late wakeup the tracer explained
// (run --trace): one record per spike.
const SpikesFile = "spikes.json"

// maxSpikesBytes bounds what ReadSpikes reads: a run explains at most a
// few thousand spikes per phase, far below it.
const maxSpikesBytes = 64 << 20

// Trace says whether spike causes were recorded, and if not, why.
type Trace struct {
	Enabled bool   `json:"enabled"`
	AboveNS int64  `json:"above_ns"`       // a spike: a wakeup later than this, or any xrun
	Note    string `json:"note,omitempty"` // why causes were not (all) recorded
	Lost    int64  `json:"lost_events,omitempty"`
	Dropped int64  `json:"dropped_spikes,omitempty"` // spikes beyond the per-phase limit, not explained
	// Osnoise: the osnoise tracer's events were recorded too (a spike's
	// KernelNoise); OsnoiseNote says why not where the kernel has tracefs
	// but they were not.
	Osnoise     bool   `json:"osnoise,omitempty"`
	OsnoiseNote string `json:"osnoise_note,omitempty"`
}

type spikesDoc struct {
	Spikes []Spike `json:"spikes"`
}

// WriteSpikes writes dir/spikes.json atomically.
func WriteSpikes(dir string, ss []Spike) error {
	b, err := MarshalSpikes(ss)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, SpikesFile), b)
}

// MarshalSpikes encodes spikes.json.
func MarshalSpikes(ss []Spike) ([]byte, error) {
	b, err := json.Marshal(spikesDoc{Spikes: ss})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", SpikesFile, err)
	}
	return append(b, '\n'), nil
}

// ReadSpikes reads dir/spikes.json; a run without one has no spikes.
func ReadSpikes(dir string) ([]Spike, error) {
	path := filepath.Join(dir, SpikesFile)
	f, err := OpenRegular(path, false) // a FIFO must not block the report
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeSpikes(path, io.LimitReader(f, maxSpikesBytes+1))
}

// spikesShape bounds spikes.json's values before it is decoded
// (jsonShape): a million, some 100 MB decoded at most, for thousands of
// spikes per phase with their causes.
func spikesShape() *jsonShape { return &jsonShape{maxValues: 1 << 20, maxArray: 1 << 18} }

func decodeSpikes(path string, r io.Reader) ([]Spike, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxSpikesBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxSpikesBytes>>20)
	}
	if err := spikesShape().check(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var d spikesDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, s := range d.Spikes {
		if s.LatencyNS < 0 || s.Phase < 0 {
			return nil, fmt.Errorf("%s: spike %d: negative latency or phase", path, i)
		}
	}
	return d.Spikes, nil
}

// Culprits ranks what held the audio thread's CPU across spikes: the time
// of each cause (threads by name and policy, whatever their thread id),
// largest first, and the spikes' total time, to which they are shares.
// Time is counted once: a thread held for 30 ms at 1 ms periods makes a
// spike for each period it missed, their windows all running to the same
// wakeup, and summed whole they would read about 100 ms (Fresh).
func Culprits(ss []Spike) (cs []Cause, total int64) {
	type key struct{ kind, name, policy string }
	sum := map[key]int64{}
	var order []key
	add := func(k key, ns int64) {
		if _, ok := sum[k]; !ok {
			order = append(order, k)
		}
		sum[k] += ns
	}
	var once Once
	for _, s := range byDue(ss) {
		causes, unexplained, n := once.Add(s)
		total += n
		for _, c := range causes {
			add(key{c.Kind, c.Name, c.Policy}, c.NS)
		}
		if unexplained > 0 {
			add(key{"", "unexplained", ""}, unexplained)
		}
	}
	for _, k := range order {
		cs = append(cs, Cause{Kind: k.kind, Name: k.name, Policy: k.policy, NS: sum[k]})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].NS > cs[j].NS })
	return cs, total
}

// byDue is ss in the order the spikes became due.
func byDue(ss []Spike) []Spike {
	out := slices.Clone(ss)
	slices.SortStableFunc(out, func(a, b Spike) int { return cmp.Compare(a.DueNS, b.DueNS) })
	return out
}

// Once counts spikes' time once, in the order they became due: each spike's
// part after the windows of those added before it (Fresh).
type Once struct{ covered int64 }

// Add is sp's part not yet counted, and counts it.
func (o *Once) Add(sp Spike) (causes []Cause, unexplained, n int64) {
	causes, unexplained, n = Fresh(sp, o.covered)
	o.covered = max(o.covered, sp.DueNS+sp.WindowNS())
	return causes, unexplained, n
}

// Fresh is the part of spike sp's window after covered (CLOCK_MONOTONIC
// ns: the end of the windows already counted): its causes' time there,
// what no cause accounts for, and its length. From the spike's strip
// where it has one, exactly; else its causes in proportion.
func Fresh(sp Spike, covered int64) (causes []Cause, unexplained, n int64) {
	w := sp.WindowNS()
	from, end := max(sp.DueNS, covered), sp.DueNS+w
	if end <= from {
		return nil, 0, 0
	}
	n = end - from
	if from == sp.DueNS {
		return sp.Causes, sp.UnexplainedNS, n
	}
	if len(sp.Strip) == 0 {
		for _, c := range sp.Causes {
			c.NS = c.NS * n / w
			causes = append(causes, c)
		}
		return causes, sp.UnexplainedNS * n / w, n
	}
	var explained int64
	for _, c := range sp.Causes {
		c.NS = 0
		for _, sl := range sp.Strip {
			if sl.Kind == c.Kind && sl.Name == c.Name {
				a, b := max(sp.DueNS+sl.StartNS, from), min(sp.DueNS+sl.StartNS+sl.NS, end)
				c.NS += max(b-a, 0)
			}
		}
		if c.NS > 0 {
			causes = append(causes, c)
			explained += c.NS
		}
	}
	return causes, max(n-explained, 0), n
}

// WindowNS is the time the spike's causes share out: from due to the
// wakeup, or for an xrun to the end of the period's work.
func (s Spike) WindowNS() int64 {
	ns := s.UnexplainedNS
	for _, c := range s.Causes {
		ns += c.NS
	}
	return max(ns, s.LatencyNS)
}

// String names a cause in a few words: "kworker/1:2 (SCHED_OTHER)",
// "IRQ 24 ahci", "NET_RX softirq", "CPU idle".
func (c Cause) String() string {
	switch c.Kind {
	case CauseThread, CauseHeld:
		return fmt.Sprintf("%s (%s)", c.Name, c.Policy)
	case CauseSoftIRQ:
		return c.Name + " softirq"
	case CauseAudio:
		return "the audio thread itself"
	case CauseIdle:
		return "CPU idle"
	case CauseThrottled:
		return "RT throttling"
	case CauseStopped:
		return "the machine was stopped"
	case "":
		return "unexplained"
	}
	return c.Name
}

// Throttled counts phase's spikes in which RT throttling held the audio
// thread, and the time it held it, counted once (Fresh).
func Throttled(ss []Spike, phase int) (n int, ns int64) {
	var once Once
	for _, sp := range byDue(ss) {
		if sp.Phase != phase {
			continue
		}
		causes, _, _ := once.Add(sp)
		var t int64
		for _, c := range causes {
			if c.Kind == CauseThrottled {
				t += c.NS
			}
		}
		for _, c := range sp.Causes {
			if c.Kind == CauseThrottled {
				n++
				break
			}
		}
		ns += t
	}
	return n, ns
}
