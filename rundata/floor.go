package rundata

import (
	"encoding/json"
	"path/filepath"
	"slices"

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
	// NotHeld says, for each of Sizes, why the phase did not hold there
	// ("" where it held; Phase.NotHeld).
	NotHeld []string `json:"not_held"`
	// FloorFrames is the smallest size that held and above which every
	// size measured held too (0: none): a size that held by luck below
	// one that did not is no floor.
	FloorFrames int `json:"floor_frames,omitempty"`
}

// FloorOf finds, per phase name (in order of first appearance), where
// each of runs (one per period size, in run order) held and the smallest
// size that did. A phase repeated within a run (--repeat) held there only
// if every repetition did.
func FloorOf(runs []*Run) Floor {
	fl := Floor{Rate: runs[0].Rate, Periods: runs[0].Periods}
	index := map[string]int{}
	var ran [][]bool // per phase, per size: it ran there
	for k, r := range runs {
		fl.Sizes = append(fl.Sizes, r.PeriodFrames)
		for _, ph := range r.Phases {
			i, ok := index[ph.Name]
			if !ok {
				i = len(fl.Phases)
				index[ph.Name] = i
				fl.Phases = append(fl.Phases, FloorPhase{Name: ph.Name, NotHeld: make([]string, len(runs))})
				ran = append(ran, make([]bool, len(runs)))
			}
			ran[i][k] = true
			if why := ph.NotHeld(r.Periods, r.PeriodUS); why != "" && fl.Phases[i].NotHeld[k] == "" {
				fl.Phases[i].NotHeld[k] = ph.Label() + " " + why // the first repetition that did not hold
			}
		}
	}
	bySize := make([]int, len(runs)) // indices of Sizes, largest first
	for k := range bySize {
		bySize[k] = k
	}
	slices.SortStableFunc(bySize, func(a, b int) int { return fl.Sizes[b] - fl.Sizes[a] })
	for i := range fl.Phases {
		ph := &fl.Phases[i]
		ph.Held = make([]bool, len(runs))
		for k, why := range ph.NotHeld {
			if !ran[i][k] {
				ph.NotHeld[k] = ph.Name + " did not run"
			}
			ph.Held[k] = ran[i][k] && why == ""
		}
		for _, k := range bySize {
			if !ph.Held[k] {
				break
			}
			ph.FloorFrames = fl.Sizes[k]
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
