package ktrace

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/held"
	"latencytest/internal/procfile"
)

// Restore leaves the tracer as the session of process run found it, for
// a run that died before its session could: the instance's tracer and
// events off, what the run held of the shared settings (the osnoise
// tracer's) put back from its record in store once the run is gone (nil:
// no store), the instance removed. Where the session ended as it should
// there is no instance, and nothing is done. The instance is the one
// process run creates (InstanceName), never a path from elsewhere.
func Restore(run procfile.Proc, store *held.Store) error {
	fs := lookTracefs("")
	if fs == nil {
		return nil // not mounted: no instance
	}
	return fs.restore(run, store)
}

func (t *tracefs) restore(run procfile.Proc, store *held.Store) error {
	dir := t.instanceDir(run)
	if !isDir(dir) {
		return nil
	}
	// The dead process's threads end one by one, and the first to end may
	// be the one whose death signals the guard: the run holds its record
	// until the last has ended, and the instance stays busy (EBUSY) until
	// the last has closed its trace pipes.
	end := time.Now().Add(restoreWait)
	for alive, _ := run.Alive(); alive && time.Now().Before(end); alive, _ = run.Alive() {
		time.Sleep(20 * time.Millisecond)
	}
	errs := []error{writeFile(dir, "current_tracer", "nop")}
	if store != nil {
		_, err := store.Recover()
		errs = append(errs, err)
	}
	err := t.removeInstance(dir)
	for errors.Is(err, unix.EBUSY) && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
		err = t.removeInstance(dir)
	}
	return errors.Join(append(errs, err)...)
}

// restoreWait bounds how long Restore waits for a dead process's instance
// to be released.
const restoreWait = 10 * time.Second

// instanceDir is the instance of process p's session.
func (t *tracefs) instanceDir(p procfile.Proc) string {
	return filepath.Join(t.root, "instances", InstanceName(p))
}

// Guard is the trace guard's body, in the process `run --trace` starts
// beside itself (runner.TraceGuardCommand) for the run, its parent. It
// calls ready, and when ctx ends — told to stop, the run dead or no longer
// its parent — leaves the tracer as the run found it (Restore). A run that
// ended as it should has done so itself; there is then nothing left to do.
func Guard(ctx context.Context, run procfile.Proc, store *held.Store, ready func()) error {
	ready()
	<-ctx.Done()
	return Restore(run, store)
}
