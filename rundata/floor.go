package rundata

import (
	"encoding/json"
	"path/filepath"

	"latencytest/internal/atomicfile"
)

// FloorFile is where a run over a list of period sizes (run --period
// 32,64,128) says, per phase, the smallest period size whose buffer held.
// It lies beside the sizes' results directories (OUT/N-frames).
const FloorFile = "floor.json"

// Floor is FloorFile's contents (docs/results-format.md).
type Floor struct {
	Rate    int          `json:"rate"`
	Periods int          `json:"periods"`
	Sizes   []int        `json:"sizes"` // the sizes measured, in run order
	Phases  []FloorPhase `json:"phases"`
}

// FloorPhase is one phase's floor.
type FloorPhase struct {
	Name string `json:"name"`
	// Held says, for each of Sizes, whether the phase held there (no xrun,
	// and its buffer verdict within the buffer measured).
	Held []bool `json:"held"`
	// FloorFrames is the smallest size that held (0: none did).
	FloorFrames int `json:"floor_frames,omitempty"`
}

// FloorOf finds, per phase name (in order of first appearance), where
// each of runs (one per period size, in run order) held and the smallest
// size that did. A phase repeated within a run (--repeat) held there only
// if every repetition did.
func FloorOf(runs []*Run) Floor {
	fl := Floor{Rate: runs[0].Rate, Periods: runs[0].Periods}
	index := map[string]int{}
	for k, r := range runs {
		fl.Sizes = append(fl.Sizes, r.PeriodFrames)
		seen := map[string]bool{}
		for _, ph := range r.Phases {
			i, ok := index[ph.Name]
			if !ok {
				i = len(fl.Phases)
				index[ph.Name] = i
				fl.Phases = append(fl.Phases, FloorPhase{Name: ph.Name, Held: make([]bool, len(runs))})
			}
			held := ph.Held(r.Periods)
			if !seen[ph.Name] {
				fl.Phases[i].Held[k], seen[ph.Name] = held, true
			} else {
				fl.Phases[i].Held[k] = fl.Phases[i].Held[k] && held
			}
		}
	}
	for i := range fl.Phases {
		for k, h := range fl.Phases[i].Held {
			if h && (fl.Phases[i].FloorFrames == 0 || fl.Sizes[k] < fl.Phases[i].FloorFrames) {
				fl.Phases[i].FloorFrames = fl.Sizes[k]
			}
		}
	}
	return fl
}

// WriteFloor writes fl as dir/FloorFile, atomically.
func WriteFloor(dir string, fl Floor) error {
	b, err := json.MarshalIndent(fl, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, FloorFile), append(b, '\n'))
}
