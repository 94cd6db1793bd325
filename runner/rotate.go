package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"latencytest/internal/badinput"

	"latencytest/internal/mono"
	"latencytest/rundata"
)

// A rotating run (Config.Rotate, latencytest monitor) is one phase
// measured by one engine, without end, whose periods go to a new results
// directory at every rotation: the stream is never stopped, so no period
// goes unmeasured between two directories. The cut is on the periods' due
// instants, as run --duration's end is: with S the stream's start (the
// first period's due less a period) and R the rotation, directory k takes
// the periods due in (S+kR, S+(k+1)R]. It is done in the parent, on the
// goroutine that reads the samples (the engine only ever sees "run until
// stopped"), so a period is accounted once: into one directory, and once
// by OnSample. While the next directory is made and the last one
// completed, the periods wait in the engine's ring (at least 2^16 of them,
// minutes), and a period lost there is counted in the directory it
// belongs to.

// rotation is a rotating phase's hand-over state.
type rotation struct {
	start      int64 // the current directory's start (CLOCK_MONOTONIC ns); 0 before the first period
	cut        int64 // the current directory takes the periods due up to cut
	next       int64 // the engine's index of the period after the last one seen
	base       int64 // the engine's index of the current directory's period 0
	lostBefore int64 // periods lost in the directories completed
	err        error // the hand-over that failed; the engine is stopped then
}

// rotation hands the phase over to a new results directory when s is due
// after the current one's end, and numbers s within its directory.
func (r *phaseRun) rotation(s *rundata.Sample) {
	rot, every := &r.rot, int64(r.cfg.Rotate)
	switch {
	case rot.start == 0:
		rot.start = s.Due - r.shape.PeriodNS
		rot.cut = rot.start + every
	case s.Due > rot.cut && rot.err == nil:
		end := rot.cut
		for s.Due > rot.cut { // a stall longer than a rotation makes no empty directory
			rot.cut += every
		}
		if err := r.handOver(end, rot.cut-every); err != nil {
			rot.err = err
			r.cancel()
		}
	}
	rot.next = s.Index + 1
	s.Index -= rot.base
}

// handOver completes the current results directory, whose periods were
// due up to end, and goes on in a new one that starts at start. If the new
// one cannot be made, the periods stay in the current one and the error
// stops the run, which completes it as interrupted.
func (r *phaseRun) handOver(end, start int64) error {
	s := r.s
	// One reading of the wall clock: a directory ends at the instant the
	// next one starts, as run.json says.
	endWall := wallAt(end)
	var next *nextRotation
	err := r.roomFor(func() (err error) {
		next, err = r.nextDir(endWall.Add(time.Duration(start - end)))
		return err
	})
	if err != nil {
		// Not bad input (%v, not %w), whatever the cause: the monitor's
		// flags were good, and measured for a rotation or more.
		return fmt.Errorf("rotation: %v", err)
	}
	r.endProgress()
	syncErr := r.stopSync()
	r.stopProgress, r.stopSync = func() {}, func() error { return nil }
	ph, acc := r.ph, r.acc
	ph.StartMonoNS, ph.EndWall, ph.Incomplete = r.rot.start, endWall, false
	ph.Lost = r.rot.next - r.rot.base - acc.Periods() // the gaps in its indexes
	err = r.finish(nil, syncErr)
	s.phaseEnded(ph, acc)
	s.run.End = endWall
	var trace *rundata.Trace
	if s.trace != nil {
		trace = s.trace.cut()
	}
	err = errors.Join(err, r.roomFor(func() error { return s.complete(false, trace) }))
	s.res.close()
	done := s.res.path

	r.rot.start, r.rot.base, r.rot.lostBefore = start, r.rot.next, r.rot.lostBefore+ph.Lost
	s.run, s.res, s.hists, s.acts = next.run, next.res, nil, map[int]float64{}
	*r.ph, r.file = next.ph, next.file
	if oerr := r.open(start); oerr != nil {
		err = errors.Join(err, oerr)
	}
	if s.cfg.Rotated != nil {
		s.cfg.Rotated(done)
	}
	return err
}

// roomFor runs f, a step of the hand-over that writes, and runs it again
// while it fails for want of space and Config.MakeRoom removed an old
// rotation: a monitor on a full disk gives up its oldest results before
// its measurement.
func (r *phaseRun) roomFor(f func() error) error {
	for {
		err := f()
		if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) || r.cfg.MakeRoom == nil || !r.cfg.MakeRoom(r.s.res.path) {
			return err
		}
	}
}

// nextRotation is a rotation's results directory, ready for its periods.
type nextRotation struct {
	run  *rundata.Run
	res  *results
	ph   rundata.Phase
	file *os.File
}

// nextDir makes the results directory of the rotation that starts at
// wall, with its phase listed and its samples file made. Its run.json
// says what the current one says of the machine, the stream and the
// real-time setup (the same engine measures on), the checks and the
// real-time tasks included: those were taken before the engine started,
// as a run's are, and taken again they would find the engine itself.
func (r *phaseRun) nextDir(wall time.Time) (*nextRotation, error) {
	dir, err := r.cfg.NextOut(wall)
	if err != nil {
		return nil, err
	}
	run := *r.s.run
	run.Start, run.End, run.Interrupted, run.Incomplete = wall, time.Time{}, false, true
	run.Phases, run.Trace = []rundata.Phase{}, nil
	res, err := openResults(dir, &run, false)
	if err != nil {
		return nil, err
	}
	n := &nextRotation{run: &run, res: res,
		ph: rundata.Phase{Name: r.ph.Name, Repeat: r.ph.Repeat, Stressor: r.ph.Stressor, StartWall: wall}}
	if n.file, err = res.phaseStarting(&run, &n.ph, r.i, r.cfg.NoSamples); err != nil {
		res.discard()
		res.close()
		return nil, err
	}
	return n, nil
}

// wallAt is the wall clock's instant at at (CLOCK_MONOTONIC ns), for
// run.json's human-readable instants of a rotation's boundaries.
func wallAt(at int64) time.Time {
	return nowWall().Add(-time.Duration(mono.Now() - at))
}

// RunRotating is latencytest monitor's run: it measures into
// cfg.Out/YYYYMMDD-HHMMSS, one directory per rotation (cfg.Rotate), until
// ctx ends: one run of one engine, whose phase is handed over to a new
// directory at every rotation, so that the stream is measured without a
// gap. After each rotation completes a directory, rotated is called (the
// metrics count it) and the oldest directories past the newest keep (0:
// all kept) are removed. The last rotation is completed as an interrupted
// run. Bad input (the driver refused the device) leaves nothing behind.
func RunRotating(ctx context.Context, cfg Config, keep int, rotated func()) error {
	base := filepath.Clean(cfg.Out)
	if err := CheckMonitorOut(base); err != nil {
		return err
	}
	_, statErr := os.Lstat(base)
	made := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return badOut(base, err.Error())
	}
	// One monitor per base directory: two would prune each other's
	// rotations. The lock is held until the monitor ends.
	// (Not removed when the lock fails, even if made here: another
	// monitor may have made it at the same instant and hold it.)
	lock, err := lockDir(base)
	if err != nil {
		return err
	}
	defer lock.Close()
	dir, err := rotationDir(base, time.Now())
	if err != nil {
		return err
	}
	cfg.Out = dir
	cfg.NextOut = func(start time.Time) (string, error) { return rotationDir(base, start) }
	if keep > 0 {
		cfg.MakeRoom = func(current string) bool {
			removed, err := removeOldest(base, current)
			if removed != "" {
				fmt.Fprintf(cfg.Stderr, "latencytest monitor: no space left: removed the oldest results, %s\n", removed)
			} else if err != nil {
				fmt.Fprintf(cfg.Stderr, "latencytest monitor: no space left, and %v\n", err)
			}
			return removed != ""
		}
	}
	cfg.Rotated = func(string) {
		rotated()
		if err := prune(base, keep); err != nil {
			fmt.Fprintf(cfg.Stderr, "latencytest monitor: %v\n", err)
		}
	}
	if _, err := Run(ctx, cfg); err != nil {
		if made && badinput.Is(err) {
			os.Remove(base) // only if empty: what the run created
		}
		return err
	}
	cfg.Rotated(dir)
	return nil
}

// rotationPattern is the name of a rotation's directory.
var rotationPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}(-[0-9]+)?$`)

// rotationDir names the rotation starting at t: YYYYMMDD-HHMMSS in UTC,
// with -2, -3... when that name is taken (two rotations in one second).
// UTC, so that names sort as time goes: in local time the hour after a
// daylight-saving change back sorts before the one it follows, and prune
// would remove the newest.
func rotationDir(base string, t time.Time) (string, error) {
	name := t.UTC().Format("20060102-150405")
	for n := 1; n < 1000; n++ {
		dir := filepath.Join(base, name)
		if n > 1 {
			dir = fmt.Sprintf("%s-%d", dir, n)
		}
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%s: no free name for a results directory", base)
}

// prune removes the oldest rotation directories of base beyond the newest
// keep (0: none is removed). Only directories (never a symlink) named as
// rotations are touched.
func prune(base string, keep int) error {
	if keep == 0 {
		return nil
	}
	dirs, err := Rotations(base)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	var errs []error
	for _, d := range dirs[:max(len(dirs)-keep, 0)] {
		if err := os.RemoveAll(filepath.Join(base, d)); err != nil {
			errs = append(errs, fmt.Errorf("prune: %w", err))
		}
	}
	return errors.Join(errs...)
}

// removeOldest removes the oldest rotation directory of base other than
// current, the one being written, and the newest; it returns the one it
// removed ("" for none).
func removeOldest(base, current string) (string, error) {
	dirs, err := Rotations(base)
	if err != nil {
		return "", err
	}
	for _, d := range dirs[:max(len(dirs)-1, 0)] {
		if p := filepath.Join(base, d); p != filepath.Clean(current) {
			if err := os.RemoveAll(p); err != nil {
				return "", err
			}
			return p, nil
		}
	}
	return "", errors.New("no older results to remove")
}

// Rotations lists the rotation directories of base (directories, never a
// symlink, named as rotations), oldest first.
func Rotations(base string) ([]string, error) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.Type().IsDir() && rotationPattern.MatchString(e.Name()) {
			dirs = append(dirs, e.Name())
		}
	}
	slices.SortFunc(dirs, compareRotations)
	return dirs, nil
}

// compareRotations orders rotation names by time, then by their -N.
func compareRotations(a, b string) int {
	if c := strings.Compare(a[:15], b[:15]); c != 0 {
		return c
	}
	return rotationSeq(a) - rotationSeq(b)
}

// rotationSeq is a rotation name's N of -N, 1 without.
func rotationSeq(name string) int {
	n := 1
	if len(name) > 16 {
		n, _ = strconv.Atoi(name[16:])
	}
	return n
}
