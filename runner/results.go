package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/atomicfile"
	"latencytest/internal/badinput"
	"latencytest/internal/mono"
	"latencytest/rundata"
)

// The results directory is written so that a run killed at any instant
// (kill -9, OOM killer, a machine reset) leaves a directory the report
// reads: run.json exists from the start, is replaced whole (never
// rewritten in place) as phases start and end, and each samples file
// reaches the page cache at least every samplesFlushEvery and the disk
// every samplesSyncEvery. docs/results-format.md says what a reader sees.

const (
	// samplesFlushEvery bounds what a kill of the parent loses: samples
	// still in the writer's buffer. The engine hands periods over every
	// audio.DrainInterval, so a kill loses less than the sum, under 1 s.
	samplesFlushEvery = 250 * time.Millisecond
	// samplesSyncEvery bounds what a machine reset loses.
	samplesSyncEvery = time.Second
	// parentNice is the parent's nice value during a run, inherited by
	// the engine's hand-over thread (the drainer): a load of 80
	// processes (hackbench) would otherwise starve the hand-over of
	// samples for a second or more at nice 0, and a kill then would lose
	// that much. Both use little CPU (a write every 100 ms and every
	// 250 ms); the loads reset their own to 0 (stress.Main).
	parentNice = -10
	// maxRunJSON bounds the run.json read to recognise a results directory.
	maxRunJSON = 64 << 20
)

// results is the results directory while a run writes it. Everything in
// it is reached through roots opened once, so that a symlink planted in
// the directory (samples -> /etc, run.json -> a victim) is never followed
// out of it, and files are created with O_EXCL. One run at a time writes
// a results directory: it holds the directory's lock (flock) until it
// ends, and a second run with the same --out is refused as bad input.
type results struct {
	path    string
	root    *os.Root // the results directory
	samples *os.Root // its samples folder
	lock    *os.File // the directory itself, flocked while the run writes it
	created bool     // Run created the directory (and may remove it)
	// replaced is, with Config.Force, the earlier run's directory, moved
	// aside (locked by replacedLock) when the new one took its name: close
	// removes it, discard puts it back.
	replaced     string
	replacedLock *os.File
}

// openResults creates the results directory at path, or takes an empty
// one, and writes first as its run.json before returning, so that
// run.json is there before anything is measured. A new directory is made
// under a temporary name beside path, locked, and renamed into place with
// run.json in it: no instant shows it without run.json or unlocked. An
// earlier run's directory is refused unless force, and then replaced
// whole the same way (made beside, then exchanged with it in one rename).
// A symlink at path is refused, never followed: latencytest runs as root.
// Bad input (internal/badinput) means path cannot be a results directory
// now; another run holding it is said so.
func openResults(path string, first *rundata.Run, force bool) (*results, error) {
	path = filepath.Clean(path) // "out/" names out, not a directory inside it
	if err := CheckOut(path); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return createResults(path, first, nil)
	}
	lock, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	empty, err := adoptable(path)
	switch {
	case err != nil:
		lock.Close()
		return nil, err
	case !empty && !force:
		lock.Close()
		return nil, badOut(path, "holds an earlier run; give --force to replace it whole, or a new directory")
	case !empty:
		return createResults(path, first, lock)
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		lock.Close()
		return nil, badOutErr(path, err)
	}
	r := &results{path: path, root: root, lock: lock}
	if err := r.openSamples(true); err != nil {
		r.close()
		return nil, err
	}
	if err := r.writeRun(first); err != nil {
		r.discard()
		r.close()
		return nil, err
	}
	return r, nil
}

// CheckOut refuses, as bad input naming --out, a path that is a symbolic
// link or something other than a directory; a path that does not exist
// yet passes. Run, monitor and a --period list share it.
func CheckOut(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badOutErr(path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		to, _ := os.Readlink(path)
		return badOut(path, fmt.Sprintf("a symbolic link (to %s); give the directory itself (latencytest, often run as root, does not follow one)", to))
	case !fi.IsDir():
		return badOut(path, "not a directory")
	}
	return nil
}

func badOut(path, why string) error {
	return badinput.Errorf("--out %s: %s", path, why)
}

// badOutErr is badOut of an error, kept for errors.Is (ENOSPC: a monitor
// makes room and tries again).
func badOutErr(path string, err error) error {
	return badinput.Errorf("--out %s: %w", path, err)
}

// errInUse is the line a second run with the same --out gets.
const errInUse = "in use by another latencytest run (it holds the directory's lock); wait for it to end or give another directory"

// lockDir opens the directory at path, never through a symlink, and
// takes its exclusive lock without waiting. The lock is the open file's
// (flock), so it is held until the file is closed or the process ends,
// however it ends, and a killed run leaves no stale lock. A directory
// moved away from path between the open and the lock (another run
// replacing it with --force) counts as in use.
func lockDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, badOut(path, fmt.Sprintf("open: %v", err))
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, badOut(path, errInUse)
		}
		return nil, badOut(path, fmt.Sprintf("lock: %v", err))
	}
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(path, &named) != nil || held.Dev != named.Dev || held.Ino != named.Ino {
		f.Close()
		return nil, badOut(path, errInUse)
	}
	return f, nil
}

// adoptable says whether the existing directory at path is empty (taken
// as it is) or an earlier run's (a regular run.json with a schema: taken
// only with --force, replaced whole); anything else is refused, so that a
// run never mixes its files into, or removes, a directory of other files.
func adoptable(path string) (empty bool, err error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return false, badOutErr(path, err)
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return false, badOutErr(path, err)
	}
	names, err := d.Readdirnames(1)
	d.Close()
	if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
		return true, nil
	}
	if err != nil {
		return false, badOutErr(path, err)
	}
	if !holdsRun(root) {
		return false, badOut(path, "not empty and not a latencytest results directory (no valid "+rundata.RunFile+"); give a new or an empty directory")
	}
	return false, nil
}

// holdsRun reports whether the directory root is a results directory: it
// holds a valid run.json (a regular file, a schema). It is what makes run
// refuse an earlier run's directory without --force (adoptable), and a
// monitor refuse one as its base (CheckMonitorOut).
func holdsRun(root *os.Root) bool {
	b, err := readRegular(root, rundata.RunFile, maxRunJSON)
	var head struct {
		Schema int `json:"schema"`
	}
	return err == nil && json.Unmarshal(b, &head) == nil && head.Schema >= 1
}

// CheckMonitorOut is CheckOut for a monitor's base directory, which holds
// its rotations: an earlier run's results directory is refused as well,
// as run refuses it (holdsRun), since the rotations would be written
// inside it. A monitor has no --force: it would replace the earlier run
// with a directory of rotations.
func CheckMonitorOut(base string) error {
	if err := CheckOut(base); err != nil {
		return err
	}
	root, err := os.OpenRoot(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return badOutErr(base, err)
	}
	defer root.Close()
	if holdsRun(root) {
		return badOut(base, "holds an earlier run's results; give a new directory, or a monitor's (it holds the rotations)")
	}
	return nil
}

// readRegular reads name in root if it is a regular file (not a symlink,
// FIFO or device) of at most limit bytes.
func readRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", name, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// createResults makes a new results directory: a temporary directory
// beside path, locked, filled with samples/ and run.json, then renamed to
// path. With old (the lock of an earlier run's directory at path, which
// --force replaces) the two are exchanged in one rename instead, so path
// always holds one whole results directory, and the earlier one waits
// aside for close (removed) or discard (put back).
func createResults(path string, first *rundata.Run, old *os.File) (*results, error) {
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		old.Close()
		return nil, badOutErr(path, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".tmp")
	if err != nil {
		old.Close()
		return nil, badOutErr(path, err)
	}
	r := &results{path: path, created: old == nil}
	err = func() error {
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		if r.lock, err = lockDir(tmp); err != nil {
			return err
		}
		if r.root, err = os.OpenRoot(tmp); err != nil {
			return err
		}
		if err := r.openSamples(true); err != nil {
			return err
		}
		return r.writeRun(first)
	}()
	if err == nil && old == nil {
		if err = atomicfile.RenameNoReplace(tmp, path); errors.Is(err, fs.ErrExist) {
			err = badOut(path, "made by another latencytest run meanwhile; give another directory")
		} else if err != nil {
			err = badOutErr(path, err)
		}
	} else if err == nil {
		if err = atomicfile.Exchange(tmp, path); err != nil {
			err = badOutErr(path, err)
		}
	}
	if err != nil {
		r.close()
		old.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	if old != nil {
		r.replaced, r.replacedLock = tmp, old
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		r.discard()
		r.close()
		return nil, fmt.Errorf("--out %s: %w", path, err)
	}
	return r, nil
}

// openSamples makes or opens the samples folder, which must be a real
// directory (a symlink there is refused, not followed).
func (r *results) openSamples(fresh bool) error {
	err := r.root.Mkdir("samples", 0o755)
	if err != nil && (fresh || !errors.Is(err, fs.ErrExist)) {
		return badOutErr(r.path, err)
	}
	fi, err := r.root.Lstat("samples")
	if err != nil {
		return badOutErr(r.path, err)
	}
	if !fi.IsDir() {
		return badOut(r.path, "samples is not a directory (a symlink or file is there); give a new or an empty directory")
	}
	if r.samples, err = r.root.OpenRoot("samples"); err != nil {
		return badOutErr(r.path, err)
	}
	return nil
}

// writeRun replaces run.json atomically and durably.
func (r *results) writeRun(run *rundata.Run) error {
	if err := rundata.WriteRunIn(r.root, run); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(r.path, rundata.RunFile), err)
	}
	return nil
}

// phaseStarting is called before ph's engine starts. It creates ph's
// samples file (none with noSamples) and writes run.json, durably, with
// ph appended as incomplete: run.json names the file before anything is
// measured into it, and this write, which can take a second on a busy
// disk, delays the engine's start rather than the hand-over of periods.
func (r *results) phaseStarting(run *rundata.Run, ph *rundata.Phase, i int, noSamples bool) (*os.File, error) {
	var f *os.File
	if !noSamples {
		base := fmt.Sprintf("%02d-%s.bin", i+1, ph.Name)
		var err error
		if f, err = r.createSamples(base); err != nil {
			return nil, err
		}
		ph.SamplesFile = "samples/" + base
	}
	ph.StartMonoNS, ph.Incomplete = mono.Now(), true
	if err := r.writeRun(withPhase(run, ph)); err != nil {
		if f != nil {
			r.dropSamples(ph, f)
		}
		return nil, err
	}
	return f, nil
}

// withPhase is run with ph appended, sharing run's fields.
func withPhase(run *rundata.Run, ph *rundata.Phase) *rundata.Run {
	snap := *run
	snap.Phases = append(slices.Clip(run.Phases), *ph)
	return &snap
}

// dropSamples removes the samples file of a phase that never opened its
// stream (nothing was written to it).
func (r *results) dropSamples(ph *rundata.Phase, f *os.File) {
	if f == nil {
		return
	}
	f.Close()
	r.samples.Remove(filepath.Base(ph.SamplesFile))
	ph.SamplesFile = ""
}

// phaseOpened is called when ph's stream has opened, before its first
// period (or when a rotation hands ph over to this directory): it records
// in run.json what the engine was granted (the stream for the first
// phase, the nominal CPU loop, the start) and keeps ph's
// samples file (nil: none) current until the returned stop, which waits
// for that run.json write too. The write goes on in the background: the
// parent must read the engine's periods meanwhile, and the previous
// run.json already names the phase and its file.
func (r *results) phaseOpened(run *rundata.Run, ph *rundata.Phase, start, nominalDSP int64, acc *accumulator, file *os.File) (stop func() error, err error) {
	ph.StartMonoNS = start
	ph.CPULoop.NominalUS = float64(nominalDSP) / 1000
	if acc.writer != nil { // the file says from now on when the phase began
		if err := acc.writer.Begin(ph.StartMonoNS); err != nil {
			return nil, fmt.Errorf("samples file: %w", err)
		}
		acc.flush()
	}
	b, err := rundata.MarshalRun(withPhase(run, ph))
	if err != nil {
		return nil, err
	}
	written := make(chan error, 1)
	go func() { written <- atomicfile.WriteIn(r.root, rundata.RunFile, b) }()
	stopSync := func() error { return nil }
	if file != nil {
		stopSync = syncSamples(acc, file)
	}
	return func() error { return errors.Join(stopSync(), <-written) }, nil
}

// createSamples creates a phase's samples file as a new file: whatever an
// earlier run (or anyone) left under its name is removed, not opened.
func (r *results) createSamples(name string) (*os.File, error) {
	if err := r.samples.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("samples file: %w", err)
	}
	f, err := r.samples.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("samples file: %w", err)
	}
	return f, nil
}

// discard undoes the directory when nothing was measured (the driver
// refused the device): a created one is removed, a replaced one (--force)
// is put back, an empty one taken is emptied again.
func (r *results) discard() {
	switch {
	case r.replaced != "":
		if atomicfile.Exchange(r.replaced, r.path) == nil {
			os.RemoveAll(r.replaced) // now this run's
			atomicfile.SyncDir(filepath.Dir(r.path))
		}
		r.replaced = "" // put back, or (if that failed) kept aside: never removed
	case r.created:
		r.root.RemoveAll("samples")
		r.root.Remove(rundata.RunFile)
		os.Remove(r.path)
	default:
		r.root.Remove("samples")
		r.root.Remove(rundata.RunFile)
	}
}

func (r *results) close() {
	if r.replaced != "" {
		os.RemoveAll(r.replaced)
		atomicfile.SyncDir(filepath.Dir(r.path))
		r.replaced = ""
	}
	if r.replacedLock != nil {
		r.replacedLock.Close()
		r.replacedLock = nil
	}
	if r.lock != nil {
		r.lock.Close()
		r.lock = nil
	}
	if r.samples != nil {
		r.samples.Close()
	}
	if r.root != nil {
		r.root.Close()
	}
}

// flush hands the samples written so far to the file.
func (a *accumulator) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.writer != nil && a.writeErr == nil {
		a.writeErr = a.writer.Flush()
	}
}

// syncSamples keeps a phase's samples file current while it runs: the
// writer's buffer is flushed every samplesFlushEvery and the file synced
// every samplesSyncEvery, each on a goroutine of the parent (never the
// engine's real-time thread), the sync apart so that a slow disk (a disk
// stressor runs) cannot hold up the flushes. stop returns a sync error.
func syncSamples(acc *accumulator, f *os.File) (stop func() error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var syncErr error
	wg.Go(func() { tick(samplesFlushEvery, done, acc.flush) })
	wg.Go(func() {
		tick(samplesSyncEvery, done, func() {
			if err := f.Sync(); err != nil && syncErr == nil {
				syncErr = err
			}
		})
	})
	return func() error {
		close(done)
		wg.Wait()
		return syncErr
	}
}

// closeSamples ends a phase's samples file durably, before run.json says
// the phase is complete.
func closeSamples(f *os.File) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
