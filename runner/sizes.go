package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"latencytest/internal/badinput"
	"latencytest/rundata"
)

// CheckSizesOut refuses an out that already holds something: a run over a
// list of period sizes fills it with one results directory per size.
func CheckSizesOut(out string) error {
	d, err := os.ReadDir(out)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return badinput.Errorf("--out %s: %v", out, err)
	case len(d) > 0:
		return badinput.Errorf("--out %s: with a --period list, give a new or an empty directory (it gets one results directory per period size)", out)
	}
	return nil
}

// RunSizes runs cfg once per period size, into cfg.Out/N-frames, then
// writes the floor (rundata.FloorFile) and prints it on stdout; above
// gives the tracer's threshold for a period size. Ctrl-C keeps the sizes
// done.
func RunSizes(ctx context.Context, cfg Config, sizes []int, above func(periodFrames int) int64, stdout io.Writer) error {
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
		r, err := Run(ctx, c)
		if err != nil {
			if badinput.Is(err) && len(runs) == 0 && fresh {
				os.Remove(out) // nothing measured: leave nothing behind
			}
			return fmt.Errorf("--period %d: %w", n, err)
		}
		if r != nil && len(r.Phases) > 0 {
			runs = append(runs, r)
		}
		if r != nil && r.Broke() { // --break-above: no size after
			break
		}
	}
	if len(runs) == 0 {
		return nil
	}
	fl := rundata.FloorOf(runs)
	if err := rundata.WriteFloor(out, fl); err != nil {
		return err
	}
	printFloor(stdout, fl, runs[0].PeriodUS/float64(runs[0].PeriodFrames))
	return nil
}

// printFloor prints the practical floor per phase, and why each size
// below it did not hold: "floor: idle 32 frames × 2 (1.3 ms); hackbench
// 128 frames × 2 (5.3 ms) (64: hackbench needs × 3 (4.0 ms)); disk-write
// none of the sizes held (...)".
func printFloor(w io.Writer, fl rundata.Floor, frameUS float64) {
	var parts []string
	for _, ph := range fl.Phases {
		var why []string
		for k, n := range fl.Sizes {
			if ph.NotHeld[k] != "" && (ph.FloorFrames == 0 || n < ph.FloorFrames) {
				why = append(why, fmt.Sprintf("%d: %s", n, ph.NotHeld[k]))
			}
		}
		part := fmt.Sprintf("%s: none of the sizes held", ph.Name)
		if ph.FloorFrames != 0 {
			ms := float64(ph.FloorFrames*fl.Periods) * frameUS / 1000
			part = fmt.Sprintf("%s: %d frames × %d (%.1f ms)", ph.Name, ph.FloorFrames, fl.Periods, ms)
		}
		if len(why) > 0 {
			part += " (" + strings.Join(why, "; ") + ")"
		}
		parts = append(parts, part)
	}
	fmt.Fprintf(w, "floor (the smallest period size whose buffer held, and every larger one too): %s\n", strings.Join(parts, "; "))
}
