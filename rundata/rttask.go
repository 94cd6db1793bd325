package rundata

// PolicyName is run.json's name of the scheduling policy numbered p, as
// sched_setattr and /proc/PID/stat number them (SCHED_* of
// linux/sched.h); "" for a number this table does not know.
func PolicyName(p int) string {
	switch p {
	case 0:
		return "SCHED_OTHER"
	case 1:
		return "SCHED_FIFO"
	case 2:
		return "SCHED_RR"
	case 3:
		return "SCHED_BATCH"
	case 5:
		return "SCHED_IDLE"
	case 6:
		return "SCHED_DEADLINE"
	}
	return ""
}

// RTTask is one thread that runs under a real-time policy (SCHED_FIFO,
// SCHED_RR or SCHED_DEADLINE), kernel threads and IRQ threads included: the
// tasks that can run before the audio thread whatever the load.
type RTTask struct {
	TID      int    `json:"tid"`
	PID      int    `json:"pid"` // the thread's process (thread group)
	Comm     string `json:"comm"`
	Policy   string `json:"policy"`   // "SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"
	Priority int    `json:"priority"` // 1-99; 0 for SCHED_DEADLINE
	CPUs     string `json:"cpus"`     // the CPUs it may run on, as /proc shows them ("0-3")
	Kernel   bool   `json:"kernel,omitempty"`
	// Preempts: it may run instead of the audio thread at the run's
	// priority: same or higher priority (a SCHED_FIFO task at the same
	// priority is not preempted when the audio thread wakes), or
	// SCHED_DEADLINE, on a CPU the audio thread may use.
	Preempts bool `json:"preempts,omitempty"`
	// SoundIRQ: the interrupt thread of a soundcard.
	SoundIRQ bool `json:"sound_irq,omitempty"`
}

// Spike is the anatomy of one late wakeup, from the kernel's tracer: what
// the audio thread's CPU did between the instant the period became due and
// the instant the thread ran.
type Spike struct {
	Phase     int   `json:"phase"`      // index into Run.Phases
	Period    int64 `json:"period"`     // the sample's index in the phase
	DueNS     int64 `json:"due_ns"`     // when the period became due (CLOCK_MONOTONIC)
	LatencyNS int64 `json:"latency_ns"` // woke − due; for an xrun the causes run on to the end of its work (WindowNS)
	XrunNS    int64 `json:"xrun_ns,omitempty"`
	CPU       int   `json:"cpu"` // the CPU the audio thread ran on
	// CPUs are the CPUs the window was charged to, in order, when the
	// audio thread migrated during it: each stretch to the CPU whose run
	// queue it was on. Absent when it stayed on CPU.
	CPUs []int `json:"cpus,omitempty"`
	// WakeupNS is from due until the kernel made the audio thread
	// runnable (its sched_wakeup); RunDelayNS from then until it ran.
	// -1 where the trace holds no wakeup in the window.
	WakeupNS   int64 `json:"wakeup_ns"`
	RunDelayNS int64 `json:"run_delay_ns"`
	// Causes share out the window, largest first; what no trace event
	// accounts for is UnexplainedNS.
	Causes        []Cause `json:"causes"`
	UnexplainedNS int64   `json:"unexplained_ns"`
	// Strip is the window as it happened, in order, for a timeline.
	Strip []Slice `json:"strip,omitempty"`
	// KernelNoise shares out the same window from the osnoise tracer's
	// events (the kernel's own measure of each interference), where the
	// kernel has that tracer (Trace.Osnoise); what they do not cover is
	// KernelNoiseUnexplainedNS. A cross-check of Causes.
	KernelNoise              []Cause `json:"kernel_noise,omitempty"`
	KernelNoiseUnexplainedNS int64   `json:"kernel_noise_unexplained_ns,omitempty"`
	// EventsLost: the kernel dropped trace events of the audio thread's
	// CPU within the window (its buffer was full), so Causes are what was
	// left: a culprit may be missing, or its time short.
	EventsLost bool `json:"events_lost,omitempty"`
	// Heard: glitches heard in the loopback's capture fell in this
	// window (run --trace --loopback; LineUpTrace), and its culprit is
	// the one heard.
	Heard *SpikeHeard `json:"heard,omitempty"`
}

// Cause is one thing that held the audio thread's CPU during a spike.
type Cause struct {
	Kind   string `json:"kind"`             // CauseIRQ, CauseSoftIRQ, CauseThread, CauseAudio, CauseIdle
	Name   string `json:"name"`             // "IRQ 24 ahci", "vector local_timer", "NET_RX", "kworker/1:2"
	PID    int    `json:"pid,omitempty"`    // threads
	Policy string `json:"policy,omitempty"` // threads: "SCHED_OTHER", "SCHED_FIFO 85", "SCHED_DEADLINE"
	NS     int64  `json:"ns"`
}

// Slice is a stretch of a spike's window spent in one cause.
type Slice struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	StartNS int64  `json:"start_ns"` // from due
	NS      int64  `json:"ns"`
}

// Kinds of Cause.
const (
	CauseIRQ     = "irq"     // a hard interrupt handler or a vector (local timer, IPI)
	CauseSoftIRQ = "softirq" //
	CauseThread  = "thread"  // another thread ran
	CauseAudio   = "audio"   // the audio thread itself (still busy, or returning from its wait)
	CauseIdle    = "idle"    // the CPU idled: the wakeup itself came late
	// CauseHeld: an ordinary (SCHED_OTHER) thread kept the CPU after the
	// real-time audio thread had been woken on it. The scheduler allows
	// that only while the thread is in kernel code that cannot be
	// preempted (preempt=none or voluntary kernels).
	CauseHeld = "held"
	// CauseThrottled: the scheduler switched to an ordinary thread (or to
	// idle) while the real-time audio thread was runnable on the CPU,
	// which it does only while real-time threads are throttled: their
	// budget (sched_rt_runtime_us of every sched_rt_period_us) used up.
	// Not the kernel's latency but the budget's; the name is the
	// thread that ran meanwhile.
	CauseThrottled = "throttled"
	// CauseStopped: on a virtual machine, the CPU stayed idle after the
	// real-time audio thread was woken on it, for longer than leaving
	// idle takes, with the budget not used up (so not throttling): the
	// hypervisor did not run the virtual CPU. The host's time, not the
	// guest kernel's.
	CauseStopped = "stopped"
)
