package ktrace

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"latencytest/internal/procfile"
)

// Saved is what a session changed outside its own instance: the osnoise
// tracer's settings, which every instance shares. A run hands it to a
// guard process of its own, which puts the tracer back as the run found
// it when the run dies before it can (Restore): a SIGKILL or a crash runs
// none of the run's own clean-up.
type Saved struct {
	Osnoise bool     `json:"osnoise,omitempty"` // the session runs the osnoise tracer
	Options []string `json:"options,omitempty"` // osnoise/options as found
	CPUs    string   `json:"cpus,omitempty"`    // osnoise/cpus as found; "" when not changed
}

// Saved is what Restore needs to undo the session.
func (s *Session) Saved() Saved {
	if s.noise == nil {
		return Saved{}
	}
	return Saved{Osnoise: true, Options: s.noise.options, CPUs: s.noise.cpus}
}

// Restore leaves the tracer as the session of process run found it, for
// a run that died before its session could: the osnoise settings as sv
// says they were (sv nil: not known, and the kernel's defaults are put
// back, as the next session would), the instance's tracer and events off,
// the instance removed. Where the session ended as it should there is no
// instance, and nothing is done. The instance is the one process run
// creates (InstanceName), never a path from elsewhere.
func Restore(run procfile.Proc, sv *Saved) error {
	fs := lookTracefs("")
	if fs == nil {
		return nil // not mounted: no instance
	}
	dir := fs.instanceDir(run)
	if !isDir(dir) {
		return nil
	}
	var errs []error
	switch {
	case sv == nil:
		fs.resetOsnoise(dir)
	case sv.Osnoise:
		errs = append(errs, fs.stopOsnoise(dir, &osnoiseSaved{options: sv.Options, cpus: sv.CPUs}))
	}
	// The dead process's threads end one by one, and the first to end may
	// be the one whose death signals the guard: the instance stays busy
	// (EBUSY) until the last has closed its trace pipes.
	err := fs.removeInstance(dir)
	for end := time.Now().Add(restoreWait); errors.Is(err, unix.EBUSY) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		err = fs.removeInstance(dir)
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
// beside itself (runner.TraceGuardCommand) for the run, its parent.
// It reads from saved what the run's trace changed outside its instance
// (a run that died while writing it leaves nothing usable, and the tracer
// is then put back as the next run would: the osnoise tracer's defaults),
// calls ready, and when ctx ends — told to stop, the run dead or no longer
// its parent — leaves the tracer as the run found it. A run that ended as
// it should has done so itself; there is then nothing left to do.
func Guard(ctx context.Context, run procfile.Proc, saved io.Reader, ready func()) error {
	var sv *Saved
	if err := json.NewDecoder(io.LimitReader(saved, 64<<10)).Decode(&sv); err != nil {
		sv = nil
	}
	ready()
	<-ctx.Done()
	return Restore(run, sv)
}
