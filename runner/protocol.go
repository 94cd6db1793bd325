// Package runner runs a measurement: for each phase it starts the phase's
// load, runs the period loop in an engine process of its own, collects the
// samples into the results directory and summarises them into run.json.
//
// The engine is a separate process (the same binary, in an internal mode)
// because the Go runtime's own work — garbage collection, goroutine
// hand-offs — delays a real-time thread that shares a process with
// allocating goroutines by tens of milliseconds. The parent does everything
// that allocates: progress display, file writing, statistics, rendering.
package runner

import (
	"latencytest/audio"
	"latencytest/rundata"
)

// EngineCommand is the hidden subcommand that runs the engine process.
const EngineCommand = "__engine"

// RTBudgetCommand is the hidden subcommand of the guard that holds the
// real-time budget lifted for a run (internal/rtbudget).
const RTBudgetCommand = "__rt-budget"

// TraceGuardCommand is the hidden subcommand of the guard that leaves the
// tracer as a run found it when the run dies before it can (ktrace.Restore).
const TraceGuardCommand = "__trace-guard"

// The engine's events on its report pipe (internal/child), after
// child.EventError for why it cannot run.
const (
	eventHello = "hello" // data: engineHello
	eventBye   = "bye"   // data: engineBye
)

// engineRequest is what the parent sends the engine on its stdin.
type engineRequest struct {
	Driver     string       `json:"driver"`
	Config     audio.Config `json:"config"`
	CPULoad    int          `json:"cpu_load"`
	DurationNS int64        `json:"duration_ns"`
	Loops      int64        `json:"loops"`
	BreakAbove int64        `json:"break_above_ns"`
	StallAt    int64        `json:"stall_at"`
	StallForNS int64        `json:"stall_for_ns"`
	// StallCPU is, with CPUs, the CPU whose loop the stall is for; -1:
	// every loop's.
	StallCPU int `json:"stall_cpu"`
	// Glitches are the sound's breaks each phase makes on purpose
	// (internal/testhook).
	Glitches []audio.GlitchAt `json:"glitches,omitempty"`
	RT       rundata.RTParams `json:"rt"`
	// CPUs asks for one measuring thread per CPU (run --cpus), each
	// pinned to its CPU at RT's policy and priority; empty: one thread,
	// where RT.Affinity says.
	CPUs []int `json:"cpus,omitempty"`
}

// engineHello is the engine's first message: what it opened and obtained,
// sent before the stream starts.
type engineHello struct {
	// TID is the audio thread's, for the spike tracer; 0 when the
	// driver calls back from a thread of its own, named Comm then.
	TID        int             `json:"tid"`
	Comm       string          `json:"comm,omitempty"`
	Granted    audio.Granted   `json:"granted"`
	RT         rundata.RTSetup `json:"rt"`
	NominalDSP int64           `json:"nominal_dsp_ns"`
	// Threads are the measuring threads of a run --cpus, in the
	// request's order (Sample.Loop indexes them); the fields above are
	// then the first's, RT the process's with the threads' policy.
	Threads []engineThread `json:"threads,omitempty"`
}

// engineThread is what one measuring thread of run --cpus obtained.
type engineThread struct {
	CPU        int             `json:"cpu"`
	TID        int             `json:"tid"`
	RT         rundata.RTSetup `json:"rt"`
	NominalDSP int64           `json:"nominal_dsp_ns"`
}

// engineBye is the engine's last message.
type engineBye struct {
	Start   int64  `json:"start_ns"`
	Periods int64  `json:"periods"`
	Lost    uint64 `json:"lost"`
	// Broke is the period whose wakeup was later than the request's
	// BreakAbove and ended the loop; absent when none did.
	Broke *rundata.Break `json:"broke,omitempty"`
	// Reported is the delay the cards report beyond their buffers
	// (audio.DelayReporter), when the stream still ran at the end.
	Reported *rundata.ReportedDelay `json:"reported_delay,omitempty"`
	Err      string                 `json:"error,omitempty"`
	// Threads are each measuring thread's of a run --cpus, in the
	// request's order; the fields above are then the first thread's
	// start, the sums of periods and of lost, the break of the thread
	// that broke.
	Threads []threadBye `json:"threads,omitempty"`
}

// threadBye is one measuring thread's end.
type threadBye struct {
	Start   int64          `json:"start_ns"`
	Periods int64          `json:"periods"`
	Lost    uint64         `json:"lost"`
	Broke   *rundata.Break `json:"broke,omitempty"`
}

// PWProfileCommand is the hidden subcommand that records PipeWire's
// profiler (pw-profiler) during a phase run through PipeWire and sends its
// account of the late cycles (ServerRecord) when stopped.
const PWProfileCommand = "__pw-profile"
