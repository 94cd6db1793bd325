package rundata

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
