package check

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"latencytest/internal/cpulist"
	"latencytest/internal/procfile"
	"latencytest/rundata"
)

// Scheduling policies as /proc/PID/stat numbers them.
const (
	schedFIFO     = 1
	schedRR       = 2
	schedDeadline = 6
)

// pfKthread is the task flag (field 9 of /proc/PID/stat) of kernel threads.
const pfKthread = 0x00200000

// statTask is what the audit needs of /proc/PID/task/TID/stat.
type statTask struct {
	comm         string
	flags        uint64
	policy, prio int
}

// parseStatTask parses a stat line (procfile.ParseStat); ok is false
// without its scheduling fields.
func parseStatTask(stat string) (statTask, bool) {
	st, ok := procfile.ParseStat([]byte(stat))
	return statTask{comm: st.Comm, flags: st.Flags, policy: st.Policy, prio: st.RTPriority}, ok && st.Sched
}

// parseCPUs reads a CPU list such as "0-3,6" as /proc writes it (a
// newline after); ok is false when it is not one.
func parseCPUs(s string) (cpus []int, ok bool) { return cpulist.Parse(strings.TrimSpace(s)) }

// overlaps reports whether two CPU lists share a CPU; nil b means every CPU.
func overlaps(a, b []int) bool {
	if b == nil {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// allowedCPUs returns the Cpus_allowed_list of a /proc status file.
func allowedCPUs(status string) string {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// preempts tells whether a task can run instead of an audio thread at
// SCHED_FIFO prio: SCHED_DEADLINE runs before every FIFO task, and a FIFO
// or RR task at the same priority keeps the CPU it holds when the audio
// thread wakes. prio 0 (SCHED_OTHER) is preempted by every real-time task.
func preempts(policy, taskPrio, prio int) bool {
	return policy == schedDeadline || taskPrio >= prio
}

// rtTasks lists every real-time thread under /proc, flagging those that can
// run instead of an audio thread at SCHED_FIFO prio on cpus (nil: any CPU).
func (e *env) rtTasks(prio int, cpus []int) []rundata.RTTask {
	if e.tasks != nil && prio == e.audioPrio && slices.Equal(cpus, e.cpus) {
		return e.tasks
	}
	out := e.walkRTTasks(prio, cpus)
	if prio == e.audioPrio && slices.Equal(cpus, e.cpus) {
		e.tasks = out
	}
	return out
}

// walkRTTasks reads every thread's scheduling policy from /proc.
func (e *env) walkRTTasks(prio int, cpus []int) []rundata.RTTask {
	out := []rundata.RTTask{} // not nil, once walked
	for _, dir := range e.threads() {
		st, err := e.read(dir + "/stat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		t, ok := parseStatTask(st)
		if !ok || (t.policy != schedFIFO && t.policy != schedRR && t.policy != schedDeadline) {
			continue
		}
		tid, _ := strconv.Atoi(path.Base(dir))
		pid, _ := strconv.Atoi(path.Base(path.Dir(path.Dir(dir))))
		status, _ := e.read(dir + "/status")
		task := rundata.RTTask{TID: tid, PID: pid, Comm: t.comm, Policy: rundata.PolicyName(t.policy), Priority: t.prio,
			CPUs: allowedCPUs(status), Kernel: t.flags&pfKthread != 0}
		if rest, ok := strings.CutPrefix(t.comm, "irq/"); ok {
			_, action, _ := strings.Cut(rest, "-")
			task.SoundIRQ = isSound(action)
		}
		taskCPUs, known := parseCPUs(task.CPUs)
		task.Preempts = preempts(t.policy, t.prio, prio) && (!known || overlaps(taskCPUs, cpus))
		out = append(out, task)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority > out[j].Priority
		}
		return out[i].TID < out[j].TID
	})
	return out
}

// expectedKernel tells the per-CPU kernel threads that run at the top
// priority by design (CPU hotplug, migration, the watchdog): necessary, so
// listed but not warned about.
func expectedKernel(t rundata.RTTask) bool {
	for _, p := range []string{"migration/", "watchdog/", "idle_inject/", "cpuhp/", "posixcputmr/"} {
		if strings.HasPrefix(t.Comm, p) {
			return t.Kernel
		}
	}
	return false
}

func taskString(t rundata.RTTask) string {
	p := strings.TrimPrefix(t.Policy, "SCHED_")
	if t.Policy == "SCHED_DEADLINE" {
		return fmt.Sprintf("%s (%d) %s", t.Comm, t.TID, p)
	}
	return fmt.Sprintf("%s (%d) %s %d", t.Comm, t.TID, p, t.Priority)
}

// checkRTTasks is the real-time task audit (review every SCHED_FIFO task
// and keep only the necessary ones): it warns about the tasks that can run
// instead of the audio thread and are not the kernel's per-CPU threads or
// the soundcard's interrupt thread, and says where the soundcard's
// interrupt thread stands.
func checkRTTasks(e *env) []rundata.Finding {
	const name = "real-time tasks"
	const why = "a real-time task at or above the audio thread's priority on its CPUs runs first whenever it wants to, however busy the audio thread is"
	const fix = "lower or stop it (chrt -o -p 0 TID, or its service's settings), or pin it away from the audio thread's CPUs (taskset -p -c LIST TID)"
	ts := e.rtTasks(e.audioPrio, e.cpus)
	if len(ts) == 0 {
		if len(e.threads()) == 0 {
			return []rundata.Finding{finding(name, INFO, "cannot read /proc/*/task", why, "")}
		}
		return []rundata.Finding{finding(name, OK, "none", why, "")}
	}
	var above, worrying []string
	for _, t := range ts {
		if !t.Preempts {
			continue
		}
		above = append(above, taskString(t))
		if !t.SoundIRQ && !expectedKernel(t) {
			worrying = append(worrying, taskString(t))
		}
	}
	v := fmt.Sprintf("%d real-time threads; %d can run before the audio thread at %s", len(ts), len(above), audioPolicy(e.audioPrio))
	if len(above) > 0 {
		v += ": " + strings.Join(above, ", ")
	}
	if s := soundIRQStanding(ts); s != "" {
		v += "; " + s
	}
	if len(worrying) > 0 {
		return []rundata.Finding{finding(name, WARN, v, why, fix)}
	}
	return []rundata.Finding{finding(name, OK, v, why, "")}
}

// soundIRQStanding says, for each soundcard interrupt thread, how many
// real-time threads on its CPUs have a higher priority.
func soundIRQStanding(ts []rundata.RTTask) string {
	var out []string
	for _, s := range ts {
		if !s.SoundIRQ {
			continue
		}
		sc, _ := parseCPUs(s.CPUs)
		n := 0
		for _, t := range ts {
			tc, known := parseCPUs(t.CPUs)
			if (t.Policy == "SCHED_DEADLINE" || t.Priority > s.Priority) && (!known || sc == nil || overlaps(tc, sc)) {
				n++
			}
		}
		out = append(out, fmt.Sprintf("soundcard thread %s: %d of %d real-time threads above it", taskString(s), n, len(ts)-1))
	}
	return strings.Join(out, "; ")
}

func audioPolicy(prio int) string {
	if prio == 0 {
		return "SCHED_OTHER"
	}
	return fmt.Sprintf("FIFO %d", prio)
}
