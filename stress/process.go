package stress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"latencytest/internal/child"
)

// Grace periods of Stop and Start: how long a stressor may take to clean
// up after SIGTERM (a disk stressor may be inside a write of its last
// block), and how long it may take to start (Xvfb gets 10 s, a disk
// stressor's file 5 s and its fdatasync).
const (
	stopGrace  = 15 * time.Second
	startLimit = 60 * time.Second
)

// The events a stressor child sends on its report pipe, after
// child.EventError for why it cannot run.
const (
	eventReady    = "ready"    // the load is running
	eventProgress = "progress" // data: stats
	eventDone     = "done"     // data: done
)

// doneReport is the final report: the figures, and the error the load ended
// with.
type doneReport struct {
	Stats map[string]any `json:"stats"`
	Error string         `json:"error,omitempty"`
}

// Process is a stressor running in a child process of its own, in a
// process group of its own (internal/child).
type Process struct {
	name string
	p    *child.Process

	mu       sync.Mutex
	progress map[string]any
	final    *doneReport
	stopped  bool
	shown    int  // rounds NewLines has returned
	placed   bool // NewLines has said where a disk load's files are
}

// Start runs `exe stress NAME --duration 0 args...` as a child
// (internal/child) and returns once the load is running, or with the
// reason it cannot run here (bad flags, no X server and no Xvfb...), which
// is bad input (internal/badinput) when it is the user's to fix. Cancelling
// ctx calls the start off within a second. The stressor's files go in a
// private directory the parent makes in the stressor's --dir (or the
// system's), and removes after it. set, if not nil, holds the child for
// set.KillAll. cpus, if not empty, is where the stressor may run: the
// load is free of the CPUs latencytest keeps its own work on.
func Start(ctx context.Context, exe, name string, args []string, set *child.Set, cpus []int) (*Process, error) {
	c, err := NewRegistry().parse(name, args, io.Discard)
	if err != nil {
		return nil, err
	}
	sp := &Process{name: name}
	p, _, err := child.Start(ctx, child.Spec{
		Name:       "stress " + name,
		Exe:        exe,
		Args:       append([]string{"stress", name, "--duration", "0"}, args...),
		Pdeathsig:  syscall.SIGTERM, // it cleans up, then exits
		TempIn:     scratchIn(c.load),
		StartLimit: startLimit,
		OnMessage:  sp.message,
		Set:        set,
		CPUs:       cpus,
	})
	if err != nil {
		return nil, err
	}
	sp.p = p
	return sp, nil
}

// scratchIn is the directory in which a load makes its files: the one it
// was given (disk stressors) or the system's.
func scratchIn(l Load) string {
	if s, ok := l.(scratcher); ok {
		return s.scratchIn()
	}
	return os.TempDir()
}

// A scratcher is a load that makes files in a directory of the user's
// choosing (--dir): the parent makes the child's private directory there,
// and the child uses it.
type scratcher interface {
	scratchIn() string
	useScratch(dir string)
}

func (sp *Process) message(m child.Message) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	switch m.Event {
	case eventProgress:
		var st map[string]any
		if json.Unmarshal(m.Data, &st) == nil {
			sp.progress = st
		}
	case eventDone:
		var d doneReport
		if json.Unmarshal(m.Data, &d) == nil {
			sp.final = &d
		}
	}
}

// NewLines returns the lines the reference tool prints per round that
// arrived since the last call: hackbench's "Time: 3.728" for each round of
// the hackbench stressor, so that the run's terminal interleaves them with
// the underrun lines, as the transcripts in bug reports do.
func (sp *Process) NewLines() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	rounds, _ := sp.progress["round_time_s"].([]any)
	if sp.final != nil {
		if r, ok := sp.final.Stats["round_time_s"].([]any); ok {
			rounds = r
		}
	}
	var lines []string
	if fs, ok := sp.progress["filesystem"].(string); ok && !sp.placed {
		sp.placed = true
		lines = append(lines, placeLine(sp.progress["dir"], fs, sp.progress["in_ram"] == true))
	}
	for _, v := range rounds[min(sp.shown, len(rounds)):] {
		if s, ok := v.(float64); ok {
			lines = append(lines, fmt.Sprintf("Time: %.3f", s))
		}
	}
	sp.shown = max(sp.shown, len(rounds))
	return lines
}

// placeLine says where a disk load's files are, and when that is RAM
// that the phase loads memory, not a disk.
func placeLine(dir any, fs string, inRAM bool) string {
	l := fmt.Sprintf("files in %v: %s", dir, fs)
	if inRAM {
		l += "; this loads memory, not a disk: give --disk-dir a directory on the disk to load"
	}
	return l
}

// Pid is the stressor's process (and process group) id.
func (sp *Process) Pid() int { return sp.p.Pid() }

// Progress returns the latest throughput figures the stressor reported
// (nil before the first report, one interval after Start).
func (sp *Process) Progress() map[string]any {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.progress
}

// Exited is closed when the stressor's process has ended, whether by Stop or
// on its own (a crash, a failing command).
func (sp *Process) Exited() <-chan struct{} { return sp.p.Exited() }

// Stop ends the stressor: SIGTERM to its group, SIGKILL after a grace
// period; it waits until no process of the group is left, removes the
// stressor's directory (saying what was left in it), and returns its final
// figures (the latest progress if it had to be killed).
func (sp *Process) Stop() (map[string]any, error) {
	sp.mu.Lock()
	if sp.stopped {
		sp.mu.Unlock()
		return nil, fmt.Errorf("stress %s: already stopped", sp.name)
	}
	sp.stopped = true
	sp.mu.Unlock()

	var errs []error
	select {
	case <-sp.p.Exited():
		errs = append(errs, errors.New("exited before it was stopped: "+sp.earlyReason()))
	default:
	}
	if _, err := sp.p.Stop(stopGrace); err != nil {
		errs = append(errs, err)
	}
	sp.mu.Lock()
	st := sp.progress
	if sp.final != nil {
		st = sp.final.Stats
	}
	sp.mu.Unlock()
	if len(errs) > 0 {
		return st, fmt.Errorf("stress %s: %w", sp.name, errors.Join(errs...))
	}
	return st, nil
}

// earlyReason is why a stressor that exited on its own did: its final
// error, else the last line of its stderr.
func (sp *Process) earlyReason() string {
	sp.p.Wait() // the report pipe is read to its end
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.final != nil && sp.final.Error != "" {
		return sp.final.Error
	}
	return sp.p.LastStderr()
}
