package ktrace

import (
	"testing"

	"latencytest/internal/fuzzseed"
)

// Lines as this machine's tracefs printed them (trace_clock mono).
func TestParseLine(t *testing.T) {
	cases := []struct {
		line string
		want Event
	}{
		{`            bash-16560   [001] d..2.   782.982208: sched_switch: prev_comm=bash prev_pid=16560 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:0 next_pid=20768 next_prio=120`,
			Event{TS: 782982208000, CPU: 1, Kind: evSwitch, PID: 20768, Comm: "kworker/1:0", Prio: 120, PrevPID: 16560, PrevComm: "bash", PrevPrio: 120, PrevRunnable: true, Current: 16560, CurrentKnown: true}},
		{`     latencytest-15981   [000] d.h2.   782.978914: sched_wakeup: comm=latencytest pid=15981 prio=19 target_cpu=000`,
			Event{TS: 782978914000, CPU: 0, Kind: evWakeup, PID: 15981, Comm: "latencytest", Prio: 19, Current: 15981, CurrentKnown: true}},
		// The kernel's own text of a migration (sched_migrate_task's TP_printk).
		{`     migration/1-21      [001] d..5.   782.990000: sched_migrate_task: comm=lt-audio pid=15981 prio=19 orig_cpu=0 dest_cpu=1`,
			Event{TS: 782990000000, CPU: 1, Kind: evMigrate, PID: 15981, Comm: "lt-audio", Prio: 19, OrigCPU: 0, TargetCPU: 1, Current: 21, CurrentKnown: true}},
		// Task names with spaces, dashes and brackets.
		{` Web Content-a-9   [003] d..2. 10.000001: sched_switch: prev_comm=Web Content-a prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=[pool] x next_pid=77 next_prio=-1`,
			Event{TS: 10000001000, CPU: 3, Kind: evSwitch, PID: 77, Comm: "[pool] x", Prio: -1, PrevPID: 9, PrevComm: "Web Content-a", PrevPrio: 120, Current: 9, CurrentKnown: true}},
		{`          <idle>-0       [001] d.h1.  1000.000100: irq_handler_entry: irq=24 name=ahci[0000:00:1f.2]`,
			Event{TS: 1000000100000, CPU: 1, Kind: evIRQEntry, IRQ: 24, Name: "ahci[0000:00:1f.2]", Current: 0, CurrentKnown: true}},
		{`          <idle>-0       [001] d.h1.  1000.000200: irq_handler_exit: irq=24 ret=handled`,
			Event{TS: 1000000200000, CPU: 1, Kind: evIRQExit, IRQ: 24, Current: 0, CurrentKnown: true}},
		{`     ksoftirqd/1-22      [001] ..s..   782.982230: softirq_entry: vec=3 [action=NET_RX]`,
			Event{TS: 782982230000, CPU: 1, Kind: evSoftEntry, IRQ: 3, Name: "NET_RX", Current: 22, CurrentKnown: true}},
		{`     ksoftirqd/1-22      [001] ..s..   782.982254: softirq_exit: vec=3 [action=NET_RX]`,
			Event{TS: 782982254000, CPU: 1, Kind: evSoftExit, IRQ: 3, Name: "NET_RX", Current: 22, CurrentKnown: true}},
		{`          <idle>-0       [000] d.h1.   782.980000: local_timer_entry: vector=236`,
			Event{TS: 782980000000, CPU: 0, Kind: evVectorEntry, Name: "local_timer", Current: 0, CurrentKnown: true}},
		{`          <idle>-0       [000] d.h1.   782.980003: call_function_single_exit: vector=251`,
			Event{TS: 782980003000, CPU: 0, Kind: evVectorExit, Name: "call_function_single", Current: 0, CurrentKnown: true}},
		// The osnoise tracer's events, as Debian's 6.1 PREEMPT_RT kernel
		// prints them (start: trace_clock_local; the stamp: mono).
		{`          <idle>-0       [000] d..h2..     5.012274: irq_noise: local_timer:236 start 7.096353308 duration 70101 ns`,
			Event{TS: 5012274000, CPU: 0, Kind: evNoise, NoiseKind: noiseIRQ, IRQ: 236, Name: "local_timer", NoiseStart: 7096353308, NoiseNS: 70101, Current: 0, CurrentKnown: true}},
		{`          <idle>-0       [000] d...3..     5.012333: thread_noise: swapper/0:0 start 7.092442438 duration 3972345 ns`,
			Event{TS: 5012333000, CPU: 0, Kind: evNoise, NoiseKind: noiseThread, Comm: "swapper/0", NoiseStart: 7092442438, NoiseNS: 3972345, Current: 0, CurrentKnown: true}},
		{`       ktimers/0-15      [000] d...3..     5.044393: thread_noise:   lt-a:b:77 start 7.124503891 duration 3802456 ns`,
			Event{TS: 5044393000, CPU: 0, Kind: evNoise, NoiseKind: noiseThread, PID: 77, Comm: "lt-a:b", NoiseStart: 7124503891, NoiseNS: 3802456, Current: 15, CurrentKnown: true}},
		{`     ksoftirqd/1-22      [001] ..s..   9.000001: softirq_noise:    TIMER:1 start 11.000000001 duration 2000 ns`,
			Event{TS: 9000001000, CPU: 1, Kind: evNoise, NoiseKind: noiseSoftIRQ, IRQ: 1, Name: "TIMER", NoiseStart: 11000000001, NoiseNS: 2000, Current: 22, CurrentKnown: true}},
		{`          <idle>-0       [001] d.Z1.   9.000001: nmi_noise: start 11.000000001 duration 900 ns`,
			Event{TS: 9000001000, CPU: 1, Kind: evNoise, NoiseKind: noiseNMI, NoiseStart: 11000000001, NoiseNS: 900, Current: 0, CurrentKnown: true}},
		// With record-tgid: "(  123)" between the CPU and the flags.
		{`            bash-16560   (  16560) [001] d..2.   782.982208: sched_wakeup: comm=x pid=5 prio=120 target_cpu=001`,
			Event{TS: 782982208000, CPU: 1, Kind: evWakeup, PID: 5, Comm: "x", Prio: 120, TargetCPU: 1, Current: 16560, CurrentKnown: true}},
	}
	for _, c := range cases {
		got, ok := parseLine(c.line)
		if !ok || got != c.want {
			t.Errorf("parseLine(%q)\n = %+v, %v\nwant %+v", c.line, got, ok, c.want)
		}
	}
	for _, bad := range []string{
		"# tracer: nop",
		"",
		`     bash-1   [001] d..2.   1.000001: timer_start: timer=0000 function=x`,
		`     bash-1   [x] d..2.   1.000001: sched_switch: prev_comm=a`,
		`     bash-1   [001] d..2.   1.0x: sched_wakeup: comm=a pid=1 prio=1`,
		`     bash-1   [001] d..2.   1.000001: sched_switch: prev_comm=a prev_pid=1`,
		`     bash-1   [001] d..2.   1.000001: irq_noise: local_timer start 7.096353308 duration 70101 ns`,
		`     bash-1   [001] d..2.   1.000001: thread_noise: a:1 start 7.09 duration -5 ns`,
		`     bash-1   [001] d..2.   1.000001: thread_noise: a:1 duration 5 ns`,
	} {
		if ev, ok := parseLine(bad); ok {
			t.Errorf("parseLine(%q) = %+v, want not ok", bad, ev)
		}
	}
	if n, cpu, ok := lostEvents([]byte("CPU:1 [LOST 123 EVENTS]")); !ok || n != 123 || cpu != 1 {
		t.Errorf("lost = %d, %v", n, ok)
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add(`            bash-16560   [001] d..2.   782.982208: sched_switch: prev_comm=bash prev_pid=16560 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:0 next_pid=20768 next_prio=120`)
	f.Add(`     ksoftirqd/1-22      [001] ..s..   782.982230: softirq_entry: vec=3 [action=NET_RX]`)
	f.Add(`          <idle>-0       [000] d..h2..     5.012274: irq_noise: local_timer:236 start 7.096353308 duration 70101 ns`)
	f.Fuzz(func(t *testing.T, line string) {
		var ev Event
		var ok bool
		fuzzseed.Bounded(t, len(line), 8, func() int { ev, ok = parseLine(line); return 0 })
		if ok && (ev.Kind < evSwitch || ev.Kind > evNoise || ev.TS < 0 || ev.NoiseNS < 0) {
			t.Errorf("parseLine(%q) = %+v", line, ev)
		}
	})
}

func TestCPUMask(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{{[]int{0}, "00000001"}, {[]int{1, 3}, "0000000a"}, {[]int{0, 33}, "00000002,00000001"}} {
		if got := cpuMask(c.cpus); got != c.want {
			t.Errorf("cpuMask(%v) = %s, want %s", c.cpus, got, c.want)
		}
	}
}
