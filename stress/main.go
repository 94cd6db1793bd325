package stress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"latencytest/internal/badinput"
	"latencytest/internal/child"
	"os"
	"os/signal"
	"syscall"
	"time"

	"latencytest/internal/nice"
)

// Synopsis, About, FlagsHint and Examples are stress's help, which Main
// prints and latencytest's man page sets; the stressors and their flags
// come from the Registry.
const (
	Synopsis  = "latencytest stress NAME [--duration D] [flags]"
	About     = "Runs one load until stopped (Ctrl-C) or for --duration, printing its throughput."
	FlagsHint = "'latencytest stress NAME -h' lists a stressor's flags."
)

// Examples are stress's examples, as typed.
func Examples() []string {
	return []string{
		"latencytest stress hackbench 6",
		"latencytest stress disk-write --dir /srv --size 2G --duration 1m",
		"latencytest stress x11 --xvfb",
	}
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
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\nStressors:\n", Synopsis, About)
		for _, n := range r.Names() {
			s, _ := r.Lookup(n)
			fmt.Fprintf(stdout, "  %-11s %s\n", n, s.Description())
		}
		fmt.Fprintf(stdout, "\n%s\n\nExamples:\n", FlagsHint)
		for _, e := range Examples() {
			fmt.Fprintf(stdout, "  %s\n", e)
		}
		return 0
	}
	name := args[0]
	// Started by `run` (child.Start), or by hand from a shell (conn nil).
	conn, err := child.Attach()
	if err != nil {
		fmt.Fprintf(stderr, "latencytest stress %s: %v\n", name, err)
		return 1
	}
	c, err := r.parse(name, args[1:], stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return fail(conn, stderr, err)
	}
	if err := nameThreads(Comm(name)); err != nil {
		return fail(conn, stderr, err)
	}
	if s, ok := c.load.(scratcher); ok && conn.TempDir() != "" {
		s.useScratch(conn.TempDir())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn.WatchParent(ctx, cancel)

	if once, ok := c.load.(oneShot); ok && !c.durationSet && conn == nil {
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
	return runLoad(ctx, cancel, name, c, conn, stdout, stderr)
}

// fail reports err, on stderr and to the parent, and returns the exit
// code: 2 for bad input, else 1.
func fail(conn *child.Conn, stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "latencytest %v\n", err)
	_ = conn.Fail(err)
	if badinput.Is(err) {
		return 2
	}
	return 1
}

// runLoad runs a load until ctx ends (or --duration after it is ready:
// preparing a file does not count), printing its throughput every interval
// and reporting to the parent.
func runLoad(ctx context.Context, cancel context.CancelFunc, name string, c *config, conn *child.Conn, stdout, stderr io.Writer) int {
	m := newMeter()
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
			_ = conn.Send(eventReady, nil)
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
			_ = conn.Send(eventProgress, m.Stats(now))
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
		return fail(conn, stderr, fmt.Errorf("stress %s: %w", name, runErr))
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
		_ = conn.Send(eventDone, doneReport{Stats: st, Error: runErr.Error()})
		fmt.Fprintf(stderr, "latencytest stress %s: %v\n", name, runErr)
		return 1
	}
	_ = conn.Send(eventDone, doneReport{Stats: st})
	return 0
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
