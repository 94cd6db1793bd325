package ktrace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"latencytest/internal/cpulist"
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
// shared by every instance: they are saved, changed while the run traces
// and put back.

// osnoiseEvents are the osnoise tracer's events the attribution reads.
var osnoiseEvents = []string{"osnoise/irq_noise", "osnoise/softirq_noise", "osnoise/thread_noise", "osnoise/nmi_noise"}

// osnoiseSaved is what the run changed, to be put back.
type osnoiseSaved struct {
	options []string // the options as osnoise/options listed them ("NO_" for one off)
	cpus    string   // osnoise/cpus, "" when not changed
}

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

// startOsnoise runs the osnoise tracer without its workload in the
// instance inst, on cpus (nil: the CPUs osnoise/cpus already names), with
// its noise events on. It returns what to put back; on error what it
// changed is already put back.
func (t *tracefs) startOsnoise(inst string, cpus []int) (*osnoiseSaved, error) {
	b, err := os.ReadFile(filepath.Join(t.root, "osnoise", "options"))
	if err != nil {
		return nil, err
	}
	sv := &osnoiseSaved{options: strings.Fields(string(b))}
	if len(cpus) > 0 {
		c, err := os.ReadFile(filepath.Join(t.root, "osnoise", "cpus"))
		if err != nil {
			return nil, err
		}
		sv.cpus = strings.TrimSpace(string(c))
		if sv.cpus == "" {
			sv.cpus = "\n" // an empty list: written back as such
		}
	}
	err = writeFile(t.root, "osnoise/options", "NO_OSNOISE_WORKLOAD")
	if err == nil && len(cpus) > 0 {
		err = writeFile(t.root, "osnoise/cpus", cpulist.Format(cpus))
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
		return nil, errors.Join(err, t.stopOsnoise(inst, sv))
	}
	return sv, nil
}

// stopOsnoise stops the tracer in inst and puts its settings back.
func (t *tracefs) stopOsnoise(inst string, sv *osnoiseSaved) error {
	errs := []error{writeFile(inst, "current_tracer", "nop")}
	for _, o := range sv.options {
		// DEFAULTS (or NO_DEFAULTS) is a command, not a state: writing it
		// would reset the others.
		if strings.TrimPrefix(o, "NO_") != "DEFAULTS" {
			errs = append(errs, writeFile(t.root, "osnoise/options", o))
		}
	}
	if sv.cpus != "" {
		errs = append(errs, writeFile(t.root, "osnoise/cpus", sv.cpus))
	}
	return errors.Join(errs...)
}

// resetOsnoise is for a killed run's instance that still runs the osnoise
// tracer: what it found is lost with it, and the kernel's defaults (the
// workload on, every CPU) are put back.
func (t *tracefs) resetOsnoise(inst string) {
	b, err := os.ReadFile(filepath.Join(inst, "current_tracer"))
	if err != nil || strings.TrimSpace(string(b)) != "osnoise" {
		return
	}
	writeFile(inst, "current_tracer", "nop")
	writeFile(t.root, "osnoise/options", "DEFAULTS")
	if c, err := os.ReadFile("/sys/devices/system/cpu/possible"); err == nil {
		writeFile(t.root, "osnoise/cpus", strings.TrimSpace(string(c)))
	}
}
