package stress

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"latencytest/internal/nice"
)

// The parent (Start) and the child (Main) talk through these: the child
// writes JSON lines (message) to the descriptor named by envReportFD and
// watches that its parent is still envParent.
const (
	envReportFD = "LATENCYTEST_STRESS_REPORT_FD"
	envParent   = "LATENCYTEST_STRESS_PARENT"
)

// message is one JSON line from the child to the parent.
type message struct {
	Event string         `json:"event"` // "file", "ready", "progress", "error", "done"
	Files []string       `json:"files,omitempty"`
	Stats map[string]any `json:"stats,omitempty"`
	Error string         `json:"error,omitempty"`
	Usage bool           `json:"usage,omitempty"` // Error is bad input (exit 2)
}

// reporter writes messages for the parent, when there is one.
type reporter struct {
	mu  sync.Mutex
	enc *json.Encoder // nil: run by hand
}

func (r *reporter) send(m message) {
	if r.enc == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(m) // a parent that stopped listening is handled by the parent watch
}

// Main implements `latencytest stress` (args are those after "stress"):
// `latencytest stress -list` and `latencytest stress NAME [--duration D]
// [flags]`. It returns the exit code: 0 done, 1 failed while working, 2 bad
// input. exe is this binary, as given to Start.
func Main(exe string, args []string, stdout, stderr io.Writer) int {
	// A load runs at the default priority: the run's parent raises its
	// own (runner.parentNice), and this process inherited that.
	if n, err := nice.Get(); err == nil && n < 0 {
		nice.SetAll(0)
	}
	r := NewRegistry()
	if len(args) == 0 {
		fmt.Fprintf(stderr, "Usage: latencytest stress NAME [--duration D] [flags]   (latencytest stress -list)\n")
		return 2
	}
	switch args[0] {
	case "-list", "--list", "list":
		for _, n := range r.Names() {
			s, _ := r.Lookup(n)
			fmt.Fprintf(stdout, "%-11s %s\n", n, s.Description())
		}
		return 0
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, "Usage: latencytest stress NAME [--duration D] [flags]\n\nRuns one load until stopped (Ctrl-C) or for --duration, printing its throughput.\nStressors:\n")
		for _, n := range r.Names() {
			s, _ := r.Lookup(n)
			fmt.Fprintf(stdout, "  %-11s %s\n", n, s.Description())
		}
		fmt.Fprintf(stdout, "\n'latencytest stress NAME -h' lists a stressor's flags.\n")
		return 0
	}
	name := args[0]
	rep := &reporter{}
	parent := 0
	if fd, err := strconv.Atoi(os.Getenv(envReportFD)); err == nil && fd > 2 {
		rep.enc = json.NewEncoder(os.NewFile(uintptr(fd), "report"))
		parent, _ = strconv.Atoi(os.Getenv(envParent))
	}
	// The processes a load starts (a user's command, Xvfb) are not ours to
	// talk through.
	os.Unsetenv(envReportFD)
	os.Unsetenv(envParent)

	c, err := r.parse(name, args[1:], stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "latencytest %v\n", err)
		rep.send(message{Event: "error", Error: err.Error(), Usage: IsUsage(err)})
		if IsUsage(err) {
			return 2
		}
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if parent > 0 {
		// PR_SET_PDEATHSIG is the first line of defence; this is the second,
		// should the signal have been missed or sent for a thread's exit.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go watchParent(ctx, parent, cancel)
	}

	if once, ok := c.load.(oneShot); ok && !c.durationSet && rep.enc == nil {
		if err := once.RunOnce(ctx, stdout); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "latencytest stress %s: stopped\n", name)
				return 1
			}
			fmt.Fprintf(stderr, "latencytest stress %s: %v\n", name, err)
			return 1
		}
		return 0
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return runLoad(ctx, cancel, name, c, rep, stdout, stderr)
}

// runLoad runs a load until ctx ends (or --duration after it is ready:
// preparing a file does not count), printing its throughput every interval
// and reporting to the parent.
func runLoad(ctx context.Context, cancel context.CancelFunc, name string, c *config, rep *reporter, stdout, stderr io.Writer) int {
	m := newMeter()
	m.onFile = func(path string) { rep.send(message{Event: "file", Files: []string{path}}) }
	done := make(chan error, 1)
	go func() { done <- c.load.Run(ctx, m) }()

	var runErr error
	readyCh := m.ready // nil once seen: a closed channel would always be ready
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	lastUnits, lastTime := 0.0, time.Now()
	// The figures end when the load is told to stop, not after its clean-up.
	stopCh, stoppedAt := ctx.Done(), time.Time{}
loop:
	for {
		select {
		case runErr = <-done:
			break loop
		case <-stopCh:
			stopCh, stoppedAt = nil, time.Now()
		case <-readyCh:
			readyCh = nil
			rep.send(message{Event: "ready", Files: m.filesCopy()})
			if c.duration > 0 {
				t := time.AfterFunc(c.duration, cancel)
				defer t.Stop()
			}
			lastUnits, lastTime = 0, time.Now()
			tick.Reset(c.interval)
		case now := <-tick.C:
			if readyCh != nil {
				continue
			}
			units, _ := m.snapshot(now)
			rate := (units - lastUnits) / now.Sub(lastTime).Seconds()
			lastUnits, lastTime = units, now
			fmt.Fprintf(stdout, "%s: %.1f %s/s (%.1f %s)\n", name, rate, m.unitName(), units, m.unitName())
			rep.send(message{Event: "progress", Stats: m.Stats(now)})
		}
	}
	stopped := ctx.Err() != nil
	if runErr != nil && stopped && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)) {
		runErr = nil
	}
	if !m.isReady() {
		if runErr == nil {
			runErr = errors.New("stopped before the load was running")
		}
		msg := fmt.Sprintf("stress %s: %v", name, runErr)
		fmt.Fprintf(stderr, "latencytest %s\n", msg)
		rep.send(message{Event: "error", Error: msg, Usage: IsUsage(runErr)})
		if IsUsage(runErr) {
			return 2
		}
		return 1
	}
	if stoppedAt.IsZero() {
		stoppedAt = time.Now()
	}
	st := m.Stats(stoppedAt)
	units, secs := m.snapshot(stoppedAt)
	if secs > 0 {
		fmt.Fprintf(stdout, "%s: %.1f %s/s on average (%.1f %s in %.1f s)\n", name, units/secs, m.unitName(), units, m.unitName(), secs)
	}
	if runErr != nil {
		st["error"] = runErr.Error()
		rep.send(message{Event: "done", Stats: st, Error: runErr.Error()})
		fmt.Fprintf(stderr, "latencytest stress %s: %v\n", name, runErr)
		return 1
	}
	rep.send(message{Event: "done", Stats: st})
	return 0
}

// watchParent cancels when the process that started us is gone (we were
// reparented).
func watchParent(ctx context.Context, parent int, cancel context.CancelFunc) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if os.Getppid() != parent {
			cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stoppedSoon reports whether ctx ends within a second. When Stop signals
// a stressor's process group, a process the stressor started (Xvfb, the
// exec command) may die of it before the stressor has seen its own signal;
// what looks like a failure is then the stop.
func stoppedSoon(ctx context.Context) bool {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}
