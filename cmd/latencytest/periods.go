package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"latencytest/internal/badinput"
	"latencytest/rundata"
	"latencytest/runner"
)

// periodList is --period: one size in frames, or a comma-separated list
// to run the whole suite once per size.
type periodList struct {
	sizes []int
}

func (p *periodList) String() string {
	s := make([]string, len(p.sizes))
	for i, n := range p.sizes {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (p *periodList) Set(v string) error {
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not a number of frames (one size, or a list such as 32,64,128)", f)
		}
		for _, s := range sizes {
			if s == n {
				return fmt.Errorf("%d frames given twice", n)
			}
		}
		sizes = append(sizes, n)
	}
	p.sizes = sizes
	return nil
}

// FloorFile is where a run over a --period list says, per phase, the
// smallest period size whose buffer held.
const FloorFile = "floor.json"

// floor is FloorFile's contents.
type floor struct {
	Rate    int          `json:"rate"`
	Periods int          `json:"periods"`
	Sizes   []int        `json:"sizes"` // the sizes measured, in run order
	Phases  []floorPhase `json:"phases"`
}

type floorPhase struct {
	Name string `json:"name"`
	// Held says, for each of Sizes, whether the phase held there (no xrun,
	// and its buffer verdict within the buffer measured).
	Held []bool `json:"held"`
	// FloorFrames is the smallest size that held (0: none did).
	FloorFrames int `json:"floor_frames,omitempty"`
}

// checkListOut refuses an --out that already holds something: a run over
// a --period list fills it with one results directory per size.
func checkListOut(out string) error {
	d, err := os.ReadDir(out)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return badFlag("--out %s: %v", out, err)
	case len(d) > 0:
		return badFlag("--out %s: with a --period list, give a new or an empty directory (it gets one results directory per period size)", out)
	}
	return nil
}

// runSizes runs the suite once per period size, into OUT/N-frames, then
// writes and prints the floor. Ctrl-C keeps the sizes done.
func runSizes(ctx context.Context, cfg runner.Config, sizes []int, above func(periodFrames int) int64, stdout io.Writer) error {
	out := cfg.Out
	_, statErr := os.Stat(out)
	fresh := os.IsNotExist(statErr)
	var runs []*rundata.Run
	for i, n := range sizes {
		if ctx.Err() != nil {
			break
		}
		c := cfg
		c.Audio.PeriodFrames = n
		c.Out = filepath.Join(out, fmt.Sprintf("%d-frames", n))
		c.TraceAbove = above(n)
		fmt.Fprintf(stdout, "period size %d frames (%d of %d): %s\n", n, i+1, len(sizes), c.Out)
		r, err := runner.Run(ctx, c)
		if err != nil {
			if badinput.Is(err) && len(runs) == 0 && fresh {
				os.Remove(out) // nothing measured: leave nothing behind
			}
			return fmt.Errorf("--period %d: %w", n, err)
		}
		if r != nil && len(r.Phases) > 0 {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	fl := floorOf(runs)
	b, err := json.MarshalIndent(fl, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := rundata.WriteFileAtomic(filepath.Join(out, FloorFile), b); err != nil {
		return err
	}
	printFloor(stdout, fl, runs[0].PeriodUS/float64(runs[0].PeriodFrames))
	return nil
}

// floorOf finds, per phase name (in order of first appearance), where
// each size held and the smallest that did. A phase repeated within a run
// (--repeat) held there only if every repetition did.
func floorOf(runs []*rundata.Run) floor {
	fl := floor{Rate: runs[0].Rate, Periods: runs[0].Periods}
	index := map[string]int{}
	for k, r := range runs {
		fl.Sizes = append(fl.Sizes, r.PeriodFrames)
		seen := map[string]bool{}
		for _, ph := range r.Phases {
			i, ok := index[ph.Name]
			if !ok {
				i = len(fl.Phases)
				index[ph.Name] = i
				fl.Phases = append(fl.Phases, floorPhase{Name: ph.Name, Held: make([]bool, len(runs))})
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

// printFloor prints the practical floor per phase: "floor: idle 32 frames
// × 2 (1.3 ms); hackbench 128 frames × 2 (5.3 ms); disk-write none of
// 32, 64 held".
func printFloor(w io.Writer, fl floor, frameUS float64) {
	var parts []string
	for _, ph := range fl.Phases {
		if ph.FloorFrames == 0 {
			parts = append(parts, fmt.Sprintf("%s: none of the sizes held", ph.Name))
			continue
		}
		ms := float64(ph.FloorFrames*fl.Periods) * frameUS / 1000
		parts = append(parts, fmt.Sprintf("%s: %d frames × %d (%.1f ms)", ph.Name, ph.FloorFrames, fl.Periods, ms))
	}
	fmt.Fprintf(w, "floor (the smallest period size whose buffer held): %s\n", strings.Join(parts, "; "))
}
