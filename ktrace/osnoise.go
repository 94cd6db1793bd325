package ktrace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"latencytest/internal/cpulist"
	"latencytest/internal/held"
)

// The osnoise tracer (kernels built with CONFIG_OSNOISE_TRACER; Debian's
// PREEMPT_RT kernels are, its standard ones are not) reports every
// interference on a CPU with the kernel's own measure of it: irq_noise,
// softirq_noise, thread_noise, nmi_noise. It does so only on CPUs where it
// is "sampling", which is while its workload runs there: a kernel thread
// per CPU that busy-loops (osnoise) or one at SCHED_FIFO 95 that wakes
// every period (timerlat). Either would disturb what latencytest measures.
// Its NO_OSNOISE_WORKLOAD option (osnoise/options) starts no workload and
// keeps every CPU of osnoise/cpus sampling: the events come for whatever
// runs there, the audio thread's CPU included, at the cost of tracing
// alone. latencytest uses the tracer only so; a kernel without the option
// is traced with sched/irq events alone, as one without the tracer.
//
// The tracer's settings (osnoise/options, osnoise/cpus) are the kernel's,
// shared by every instance: they are recorded as found (internal/held),
// changed while the run traces and put back.

// osnoiseEvents are the osnoise tracer's events the attribution reads.
var osnoiseEvents = []string{"osnoise/irq_noise", "osnoise/softirq_noise", "osnoise/thread_noise", "osnoise/nmi_noise"}

// osnoiseUsable reports whether the osnoise tracer can be used without its
// workload: the tracer, its events and the NO_OSNOISE_WORKLOAD option
// exist, and no instance (nor the top level) runs osnoise or timerlat
// already: someone's own rtla run owns the shared settings then.
func (t *tracefs) osnoiseUsable() (string, bool) {
	b, err := os.ReadFile(filepath.Join(t.root, "available_tracers"))
	if err != nil || !hasWord(string(b), "osnoise") {
		return "the kernel has no osnoise tracer", false
	}
	if !isDir(filepath.Join(t.root, "events", "osnoise")) {
		return "the kernel has no osnoise events", false
	}
	b, err = os.ReadFile(filepath.Join(t.root, "osnoise", "options"))
	if err != nil || !(hasWord(string(b), "OSNOISE_WORKLOAD") || hasWord(string(b), "NO_OSNOISE_WORKLOAD")) {
		return "the osnoise tracer has no NO_OSNOISE_WORKLOAD option (kernel before 6.3): it would need its workload threads", false
	}
	tracers, _ := filepath.Glob(filepath.Join(t.root, "instances", "*", "current_tracer"))
	for _, f := range append(tracers, filepath.Join(t.root, "current_tracer")) {
		if b, err := os.ReadFile(f); err == nil {
			if cur := strings.TrimSpace(string(b)); cur == "osnoise" || cur == "timerlat" {
				return "the osnoise tracer is in use (" + f + ")", false
			}
		}
	}
	return "", true
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// osnoiseSetting is the tracer's settings that every instance shares, as
// a run holds them (internal/held): the options without the workload and,
// with cpus, osnoise/cpus. One run at a time holds them; the record says
// them as found, and the run's end, its guard or the next run after a
// crash puts them back so.
func (t *tracefs) osnoiseSetting(cpus []int) held.Setting {
	opts, cpuFile := filepath.Join(t.root, "osnoise", "options"), filepath.Join(t.root, "osnoise", "cpus")
	st := held.Setting{Name: "osnoise", Exclusive: true, Set: []held.Write{{Path: opts, Value: "NO_OSNOISE_WORKLOAD"}}}
	if len(cpus) > 0 {
		st.Set = append(st.Set, held.Write{Path: cpuFile, Value: cpulist.Format(cpus)})
	}
	st.Found = func() ([]held.Write, error) {
		b, err := os.ReadFile(opts)
		if err != nil {
			return nil, err
		}
		var ws []held.Write
		for _, o := range strings.Fields(string(b)) {
			// The options as listed ("NO_" for one off), written back one
			// by one; DEFAULTS (or NO_DEFAULTS) is a command, not a state:
			// writing it would reset the others.
			if strings.TrimPrefix(o, "NO_") != "DEFAULTS" {
				ws = append(ws, held.Write{Path: opts, Value: o})
			}
		}
		if len(cpus) > 0 {
			c, err := os.ReadFile(cpuFile)
			if err != nil {
				return nil, err
			}
			v := strings.TrimSpace(string(c))
			if v == "" {
				v = "\n" // an empty list: written back as such
			}
			ws = append(ws, held.Write{Path: cpuFile, Value: v})
		}
		return ws, nil
	}
	return st
}

// startOsnoise runs the osnoise tracer without its workload in the
// instance inst, on cpus (nil: the CPUs osnoise/cpus already names), with
// its noise events on, holding the shared settings in store. On error
// what it changed is already put back.
func (t *tracefs) startOsnoise(store *held.Store, inst string, cpus []int) (*held.Hold, error) {
	h, err := store.Acquire(t.osnoiseSetting(cpus))
	if err != nil {
		return nil, err
	}
	for _, ev := range osnoiseEvents {
		if err == nil {
			err = writeFile(inst, filepath.Join("events", ev, "enable"), "1")
		}
	}
	if err == nil {
		err = writeFile(inst, "current_tracer", "osnoise")
	}
	if err != nil {
		return nil, errors.Join(err, t.stopOsnoise(inst, h))
	}
	return h, nil
}

// stopOsnoise stops the tracer in inst and lets go of its settings, which
// are put back as found.
func (t *tracefs) stopOsnoise(inst string, h *held.Hold) error {
	return errors.Join(writeFile(inst, "current_tracer", "nop"), h.Release())
}
