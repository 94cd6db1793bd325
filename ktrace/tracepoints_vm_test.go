//go:build vm

package ktrace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"latencytest/internal/onecpu"
)

// The VM's kernel patches its own code whenever a tracepoint gets its
// first or second probe, or loses one of its last two (the tracepoint's
// static key and static call, text_poke_bp: an int3 on the site, an IPI
// to every CPU, the new bytes). Every test here does that: a new trace
// instance enables its events, the osnoise tracer hooks its own, and the
// instance's removal takes them away. Under qemu's multi-threaded TCG a
// virtual CPU can keep a translation of a patched site made while the
// int3 was there: it then traps on an int3 that is no longer in memory,
// the kernel's int3 handler sends it back to the same place, and so on,
// with interrupts off when the site is in __schedule, so that CPU never
// answers the next patch's IPI and the whole guest stops (caught so: CPU 0
// in text_poke_bp's IPI wait from an event's enable, CPU 1 trapping
// without end at a jump label in __schedule whose bytes in memory were
// the finished jmp; docs/spikes.md). With two probes kept on each
// sched and irq tracepoint the tests and the osnoise tracer's hooks
// use, a test's probe is the third, and adding or removing it changes only the list of probes: no code is patched while
// the tests run. The two are put there with the other CPUs offline, so
// that no CPU runs kernel code while it is patched (internal/onecpu; setting them up with
// every CPU online froze the guest in the same way, 1 boot in 3).
func init() {
	if os.Getenv("KTRACE_CULPRIT") != "" {
		return
	}
	if err := keepTracepoints(); err != nil {
		fmt.Fprintln(os.Stderr, "ktrace vm tests: keep the tracepoints' probes:", err)
		os.Exit(1)
	}
}

// keepTracepoints enables the sched and irq events the tests and the
// osnoise tracer's hooks use in two instances of their own, which never trace (tracing_on
// 0: their probes find the buffer off and return), with every CPU but
// CPU 0 offline meanwhile (internal/onecpu).
func keepTracepoints() error {
	fs, err := findTracefs("")
	if err != nil {
		return err
	}
	if isDir(filepath.Join(fs.root, "instances", "vmtest-keep-2")) {
		return nil // kept since an earlier test binary of this boot
	}
	return onecpu.Run(func() error { return keepEvents(fs) })
}

// keepEvents enables the kept events in the two instances.
func keepEvents(fs *tracefs) error {
	// Not the osnoise events: their tracepoints are in the osnoise
	// tracer's hooks, which no CPU runs while an instance enables or
	// drops them (before the tracer starts, after it stopped), and a
	// kept probe there would run inside the hooks' measure.
	events := append([]string{"sched/sched_migrate_task"}, tracedEvents...)
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(fs.root, "instances", "vmtest-keep-"+strconv.Itoa(i))
		if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if err := writeFile(dir, "tracing_on", "0"); err != nil {
			return err
		}
		for _, ev := range events {
			// An event this kernel lacks (osnoise on the standard
			// kernel) has no tracepoint to keep.
			if _, err := os.Stat(filepath.Join(dir, "events", ev)); err != nil {
				continue
			}
			if err := writeFile(dir, filepath.Join("events", ev, "enable"), "1"); err != nil {
				return err
			}
		}
	}
	return nil
}
