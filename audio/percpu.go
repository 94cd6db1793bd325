package audio

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"latencytest/internal/threads"
	"latencytest/rundata"
)

// CPUThread is what one measuring thread of RunPerCPU obtained, said
// before its stream starts: its CPU, its thread id (for the tracer and
// for reading its affinity back) and its real-time set-up.
type CPUThread struct {
	CPU   int
	TID   int
	Setup rundata.RTSetup
}

// RunPerCPU runs engines[i]'s period loop on an OS thread of its own
// pinned to cpus[i], each at rt's policy and priority, as cyclictest
// --smp runs a thread per CPU, and returns once every loop has ended (a
// duration passed, Stop, or a driver failed: the errors joined). A loop
// that breaks (Options.BreakAbove) stops the others, as cyclictest -b
// ends every thread at the first break; Loops counts per loop, as -l. The
// process-wide steps of rt (mlockall, /dev/cpu_dma_latency) are the
// caller's, done once (RTSetup on its own thread); each thread sets only
// its scheduling and affinity, which Linux keeps per thread. ready, if
// not nil, is called on each thread once it is set up and calibrated,
// before its stream starts. Each engine must have a driver of its own.
//
// Each loop holds a P for its whole run (see pin), so the process needs
// one P per loop and one for everything else: RunPerCPU raises
// GOMAXPROCS to that before any loop starts (a change stops the world,
// which a running pinned loop would hold up).
func RunPerCPU(engines []*Engine, cpus []int, rt rundata.RTParams, ready func(CPUThread)) error {
	if len(engines) != len(cpus) || len(cpus) == 0 {
		return fmt.Errorf("per-CPU loops: %d engines for %d CPUs", len(engines), len(cpus))
	}
	if n := len(cpus) + LoopPs - 1; runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
	}
	errs := make(chan error, len(cpus))
	for i := range cpus {
		go func() {
			err := runOnCPU(engines[i], cpus[i], rt, ready)
			if _, _, broke := engines[i].Broke(); broke {
				for _, e := range engines {
					e.Stop()
				}
			}
			errs <- err
		}()
	}
	var all []error
	for range cpus {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// runOnCPU is one thread of RunPerCPU: locked to its OS thread for good
// (the thread ends with the goroutine, its priority and affinity with
// it), set up, calibrated under that set-up, then the loop.
func runOnCPU(e *Engine, cpu int, rt rundata.RTParams, ready func(CPUThread)) error {
	runtime.LockOSThread()
	mine := rundata.RTParams{Policy: rt.Policy, Priority: rt.Priority, Affinity: []int{cpu}}
	setup, _ := RTSetup(mine) // no process-wide step: nothing to release
	setup = readBack(setup)
	e.Calibrate()
	if ready != nil {
		ready(CPUThread{CPU: cpu, TID: unix.Gettid(), Setup: setup})
	}
	if err := e.Run(); err != nil {
		return fmt.Errorf("CPU %d: %w", cpu, err)
	}
	return nil
}

// readBack replaces what setup says this thread obtained with what the
// kernel has for it now: its policy and priority (sched_getattr) and
// the CPUs it may run on (sched_getaffinity), so that a record of a
// thread is the kernel's, not what a successful call implies. A step
// that cannot be read back is said so and keeps what the call obtained.
func readBack(setup rundata.RTSetup) rundata.RTSetup {
	o := &setup.Obtained
	if a, err := unix.SchedGetAttr(0, 0); err != nil {
		setup.Refused = append(setup.Refused, fmt.Sprintf("reading the scheduling policy back: %v", err))
	} else {
		o.Policy, o.Priority = policyName(a.Policy), int(a.Priority)
	}
	cpus, err := threads.Allowed() // this thread's
	if err != nil {
		setup.Refused = append(setup.Refused, "reading back the "+err.Error())
		return setup
	}
	o.Affinity = cpus
	return setup
}

// policyName is run.json's name of a scheduling policy, SCHED_OTHER for
// one rundata.PolicyName does not know.
func policyName(p uint32) string {
	if n := rundata.PolicyName(int(p)); n != "" {
		return n
	}
	return "SCHED_OTHER"
}
