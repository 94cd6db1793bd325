package check

import (
	"fmt"
	"strconv"
	"strings"

	"latencytest/rundata"
)

// checkRTThrottle reports the real-time bandwidth limit. While it is on,
// the kernel stops every SCHED_FIFO/RR thread of a CPU for the rest of the
// period once they together used the runtime: an audio thread busy with
// DSP work (and with the time a hypervisor steals from it) then sleeps up
// to period − runtime (50 ms by default), and the run reads that as the
// kernel's latency.
func checkRTThrottle(e *env) []rundata.Finding {
	const name = "RT throttling"
	const why = "once real-time threads have used the runtime of a period, the kernel stops them for the rest of it: a busy audio thread then wakes up to period − runtime late, which is the budget, not the kernel's latency"
	const fix = "lift the budget for the measurement: latencytest run --lift-rt-budget (as root; put back when the run ends), or sysctl -w kernel.sched_rt_runtime_us=-1 and restore it afterwards"
	rt, err1 := e.read("/proc/sys/kernel/sched_rt_runtime_us")
	per, err2 := e.read("/proc/sys/kernel/sched_rt_period_us")
	if err1 != nil || err2 != nil {
		return []rundata.Finding{finding(name, INFO, "cannot read /proc/sys/kernel/sched_rt_runtime_us and sched_rt_period_us", why, "")}
	}
	runtime, err1 := strconv.ParseInt(strings.TrimSpace(rt), 10, 64)
	period, err2 := strconv.ParseInt(strings.TrimSpace(per), 10, 64)
	if err1 != nil || err2 != nil || period <= 0 {
		return []rundata.Finding{finding(name, INFO, fmt.Sprintf("unreadable values %q of %q", strings.TrimSpace(rt), strings.TrimSpace(per)), why, "")}
	}
	if runtime < 0 || runtime >= period {
		return []rundata.Finding{finding(name, OK, fmt.Sprintf("off (sched_rt_runtime_us %d of %d)", runtime, period), why, "")}
	}
	return []rundata.Finding{finding(name, WARN, fmt.Sprintf("on: real-time threads get %d of every %d µs; a throttled audio thread sleeps up to %.1f ms",
		runtime, period, float64(period-runtime)/1000), why, fix)}
}
