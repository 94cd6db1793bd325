package rundata

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
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
	for _, s := range ss {
		total += s.WindowNS()
		for _, c := range s.Causes {
			add(key{c.Kind, c.Name, c.Policy}, c.NS)
		}
		if s.UnexplainedNS > 0 {
			add(key{"", "unexplained", ""}, s.UnexplainedNS)
		}
	}
	for _, k := range order {
		cs = append(cs, Cause{Kind: k.kind, Name: k.name, Policy: k.policy, NS: sum[k]})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].NS > cs[j].NS })
	return cs, total
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
	case "":
		return "unexplained"
	}
	return c.Name
}

// Throttled counts phase's spikes in which RT throttling held the audio
// thread, and the time it held it.
func Throttled(ss []Spike, phase int) (n int, ns int64) {
	for _, sp := range ss {
		if sp.Phase != phase {
			continue
		}
		var t int64
		for _, c := range sp.Causes {
			if c.Kind == CauseThrottled {
				t += c.NS
			}
		}
		if t > 0 {
			n, ns = n+1, ns+t
		}
	}
	return n, ns
}
